"""Deliberately wrong code: each language server has something to report here."""

import os

from app.models import Item


def restock(item: Item, extra: int) -> Item:
    return Item(item.name, item.unit_price, item.quantity + extra)


def label(item: Item) -> str:
    # Type error for basedpyright: an int is returned where a str is declared.
    return item.quantity
