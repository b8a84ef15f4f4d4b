from app.pricing import net_price


def pay() -> float:
    return net_price(12.0)
