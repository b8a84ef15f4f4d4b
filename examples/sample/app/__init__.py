"""Sample inventory application used by lsp-hub's demo and tests."""

from app.models import Inventory, Item, total_value

__all__ = ["Inventory", "Item", "total_value"]
