"""Domain objects of the sample inventory."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Item:
    """One kind of article in stock."""

    name: str
    unit_price: float
    quantity: int = 0

    def value(self) -> float:
        """Worth of everything of this kind in stock."""
        return self.unit_price * self.quantity


@dataclass
class Inventory:
    """All items of one store, by name."""

    items: dict[str, Item] = field(default_factory=dict)

    def add(self, item: Item) -> None:
        self.items[item.name] = item

    def find(self, name: str) -> Item | None:
        return self.items.get(name)


def total_value(inventory: Inventory) -> float:
    """Worth of the whole inventory."""
    return sum(item.value() for item in inventory.items.values())
