"""No module reaches into a dependency's private members (a rule of ARCHITECTURE.md): an upgrade of the dependency
may change them without notice. Found statically: `module._name` on a module or name imported from outside
lsp_hub, and `getattr`/`hasattr`/`setattr` with a literal private name on any object."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "lsp_hub"
DOCUMENTED = {"os._exit", "sys._getframe"}  # public despite the underscore: documented in the standard library
ATTRIBUTE_FUNCTIONS = {"getattr", "hasattr", "setattr", "delattr"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_chain(node: ast.Attribute) -> bool:
    """Whether any name after the first in `a.b.c` is private."""
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        if _private(current.attr):
            return True
        current = current.value
    return False


def _outside_names(tree: ast.Module) -> set[str]:
    """The names a module binds by importing from outside lsp_hub."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(
                alias.asname or alias.name.split(".")[0] for alias in node.names if not alias.name.startswith("lsp_hub")
            )
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and not (node.module or "").startswith("lsp_hub"):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def private_reaches(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    outside = _outside_names(tree)
    found: list[tuple[int, str]] = []
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}  # reported whole
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner and _private_chain(node):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in outside and ast.unparse(node) not in DOCUMENTED:
                found.append((node.lineno, ast.unparse(node)))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ATTRIBUTE_FUNCTIONS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_module_reaches_into_a_dependencys_private_members() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {text}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in private_reaches(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_check_finds_what_it_is_for() -> None:
    source = (
        "import os\n"
        "from multiprocessing import forkserver\n"
        "from lsp_hub.index import records\n"
        "stop = forkserver._forkserver._stop\n"
        "processes = getattr(pool, '_processes', None)\n"
        "os._exit(0)\n"
        "records._head\n"
        "name = module.__name__\n"
    )
    assert private_reaches(source) == [
        (4, "forkserver._forkserver._stop"),
        (5, "getattr(pool, '_processes', None)"),
    ]
