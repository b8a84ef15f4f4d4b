def net_price(gross: float) -> float:
    return gross / 1.2
