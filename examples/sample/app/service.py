"""Application layer: builds an inventory and reports on it."""

from app.models import Inventory, Item, total_value


def build_inventory() -> Inventory:
    inventory = Inventory()
    inventory.add(Item("bolt", 0.25, quantity=400))
    inventory.add(Item("nut", 0.10, quantity=650))
    return inventory


def report(inventory: Inventory) -> str:
    bolt = inventory.find("bolt")
    bolts = bolt.quantity if bolt is not None else 0
    return f"{len(inventory.items)} kinds, {bolts} bolts, worth {total_value(inventory):.2f}"


if __name__ == "__main__":
    print(report(build_inventory()))
