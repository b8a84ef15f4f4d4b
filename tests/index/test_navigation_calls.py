"""What zoom and call_tree say a body calls (issue #24): calls through a local variable's, a parameter's or an
attribute's type resolve to that class's method; a receiver the index cannot type goes to the only method of its
name (`resolved: by-name`) or stays unresolved with its candidate count, never to an arbitrary one."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_hub.index import api
from lsp_hub.index.callers import find_callers, resolve_targets_by_name
from lsp_hub.index.workspace import WorkspaceIndex
from tests.index.index_helpers import write

INVENTORY = """\
class Shelf:
    def add(self, item: str) -> None:
        pass


class Inventory:
    def add(self, item: str) -> None:
        pass


class Archive:
    def save(self) -> None:
        pass


class Repo:
    def save(self) -> None:
        pass


class AuditedRepo(Repo):
    pass


class Ledger:
    def record(self) -> None:
        pass
"""

SERVICE = """\
from shop.inventory import AuditedRepo, Inventory, Ledger, Repo


def restock(x: str) -> None:
    inventory = Inventory()
    inventory.add(x)


def restock_typed(inv: Inventory) -> None:
    inv.add("y")


class Service:
    def __init__(self) -> None:
        self.repo = Repo()
        self.audited = AuditedRepo()

    def commit(self) -> None:
        self.repo.save()
        self.audited.save()


def unknown(thing, ledger) -> None:
    thing.save()
    ledger.record()


def annotated_outside() -> None:
    entries: dict[str, Ledger] = {}
    entries.record()


def open_service() -> None:
    Service().commit()


def save_audited(repo: Repo) -> None:
    AuditedRepo.save(repo)
"""


@pytest.fixture
def shop(tmp_path: Path) -> WorkspaceIndex:
    write(tmp_path, "shop/__init__.py", "")
    write(tmp_path, "shop/inventory.py", INVENTORY)
    write(tmp_path, "shop/service.py", SERVICE)
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    return index


def calls_of(index: WorkspaceIndex, symbol: str) -> dict[str, dict[str, object]]:
    return {call["name"]: call for call in api.zoom(index, symbol).to_json()["calls"]}


def test_a_local_variable_made_by_a_constructor_types_its_calls(shop: WorkspaceIndex) -> None:
    # `add` is a common name (sets, lists): without the variable's type the call resolved to nothing.
    assert calls_of(shop, "restock")["inventory.add"]["definition"] == "shop/inventory.py:7"
    assert calls_of(shop, "restock_typed")["inv.add"]["definition"] == "shop/inventory.py:7"


def test_an_attribute_typed_in_init_types_calls_in_another_method(shop: WorkspaceIndex) -> None:
    calls = calls_of(shop, "Service.commit")
    assert calls["self.repo.save"]["definition"] == "shop/inventory.py:17"  # Repo.save, not Archive.save before it
    assert "resolved" not in calls["self.repo.save"]
    assert calls["self.audited.save"]["definition"] == "shop/inventory.py:17"  # inherited from Repo
    # An imported class's method, defined by its base in the same file as Archive.save:
    assert calls_of(shop, "save_audited")["AuditedRepo.save"]["definition"] == "shop/inventory.py:17"


def test_an_untyped_receiver_resolves_only_by_a_unique_name(shop: WorkspaceIndex) -> None:
    calls = calls_of(shop, "unknown")
    assert calls["thing.save"] == {"name": "thing.save", "count": 1, "candidates": 2}
    assert calls["ledger.record"]["definition"] == "shop/inventory.py:26"
    assert calls["ledger.record"]["resolved"] == "by-name"
    text = api.zoom(shop, "unknown").to_text()
    assert "  thing.save (unresolved: 2 candidates)" in text
    assert "  ledger.record -> shop/inventory.py:26 (by name)" in text
    assert "\ncalls:\n" in text and not any(line.endswith(" ") for line in text.splitlines())


def test_call_tree_shows_candidates_of_unresolved_calls(shop: WorkspaceIndex) -> None:
    result = api.call_tree(shop, "unknown")
    data = result.to_json()
    assert [call["name"] for call in data["calls"]] == ["ledger.record"]
    assert data["unresolved"] == ["thing.save (unresolved: 2 candidates)"]
    assert "thing.save (unresolved: 2 candidates)" in result.to_text()
    restock = api.call_tree(shop, "restock").to_json()
    assert {call["name"]: call["definition"] for call in restock["calls"]} == {
        "Inventory": "shop/inventory.py:6",
        "inventory.add": "shop/inventory.py:7",
    }


def test_a_generic_annotation_of_an_outside_type_is_not_resolved_by_name(shop: WorkspaceIndex) -> None:
    # `dict[str, Ledger]`: a dict, whatever it holds; `record` is not Ledger's however unique the name is.
    assert calls_of(shop, "annotated_outside")["entries.record"] == {"name": "entries.record", "count": 1}


def test_zoom_into_a_class_types_self_per_method(shop: WorkspaceIndex) -> None:
    calls = calls_of(shop, "Service")
    assert calls["self.repo.save"]["definition"] == "shop/inventory.py:17"
    assert "resolved" not in calls["self.repo.save"]


def test_call_tree_goes_through_a_constructor_not_every_method(shop: WorkspaceIndex) -> None:
    data = api.call_tree(shop, "open_service").to_json()
    service = next(call for call in data["calls"] if call["name"] == "Service")
    assert [call["name"] for call in service["calls"]] == ["Repo", "AuditedRepo"]  # Service.__init__'s calls
    assert "unresolved" not in service  # commit's calls are not made by constructing a Service
    commit = next(call for call in data["calls"] if call["name"] == "(...).commit")
    assert commit["definition"] == "shop/service.py:18" and commit["resolved"] == "by-name"


def test_typescript_locals_made_by_new_or_annotated_type_their_calls(tmp_path: Path) -> None:
    write(
        tmp_path,
        "src/cart.ts",
        "export class Cart {\n  add(x: number): void {}\n}\n\nexport class Wishlist {\n  add(x: number): void {}\n}\n",
    )
    write(
        tmp_path,
        "src/shop.ts",
        'import { Cart, Wishlist } from "./cart";\n\n'
        "export function buy(): void {\n  const cart = new Cart();\n  cart.add(1);\n"
        "  const later: Wishlist = make();\n  later.add(2);\n  const seen = new Map();\n"
        "  seen.add(3);\n}\n",
    )
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    calls = calls_of(index, "buy")
    assert calls["cart.add"]["definition"] == "src/cart.ts:2"
    assert calls["later.add"]["definition"] == "src/cart.ts:6"
    assert calls["seen.add"] == {"name": "seen.add", "count": 1}  # a Map: outside the workspace


def test_a_plain_call_in_python_never_means_a_class_member(tmp_path: Path) -> None:
    """Seen on click: `callback(...)` in `Context.invoke` (a parameter) went to the attribute `Command.callback`, and
    `type(self)(...)` (the builtin) to the attribute `Option.type`. A name called without a receiver in Python or
    TypeScript is a local, a module-level definition, an import or a builtin, never a class's member; a function
    nested in the caller still is one."""
    write(
        tmp_path,
        "cli/core.py",
        "class Command:\n"
        "    callback: object\n"
        "    def run(self) -> None:\n"
        "        pass\n\n\n"
        "class Option:\n"
        "    type: object\n\n\n"
        "class Context:\n"
        "    def invoke(self, callback, *args):\n"
        "        def helper() -> None:\n"
        "            pass\n"
        "        helper()\n"
        "        made = type(self)()\n"
        "        run()\n"
        "        return callback(*args)\n",
    )
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    data = api.call_tree(index, "Context.invoke").to_json()
    assert {call["name"]: call["definition"] for call in data["calls"]} == {"helper": "cli/core.py:13"}
    assert set(data["unresolved"]) == {"type", "run", "callback"}


@pytest.mark.parametrize("extension", ["ts", "js"])
def test_calls_of_a_private_method_are_known(tmp_path: Path, extension: str) -> None:
    """Seen on ky: `this.#calculateDelay()` was no call at all to the index (the grammar names `#x` a
    private_property_identifier), so the call tree of its caller left it out and only a server found its callers."""
    write(
        tmp_path,
        f"src/ky.{extension}",
        "export class Ky {\n"
        "  #delay() {\n    return 1;\n  }\n\n"
        "  retry() {\n    return this.#delay() + this.#delay();\n  }\n}\n",
    )
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    assert calls_of(index, "Ky.retry")["this.#delay"] == {
        "name": "this.#delay", "count": 2, "definition": f"src/ky.{extension}:2"}
    snapshot = index.snapshot()
    found = find_callers(snapshot, resolve_targets_by_name(snapshot, "Ky.#delay"))
    assert [(entry["caller"], entry["location"]["range"]["start"]["line"]) for entry in found["callers"]] == [
        ("Ky.retry", 6), ("Ky.retry", 6)]
