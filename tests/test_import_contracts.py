"""The import rules ARCHITECTURE.md states, checked by import-linter (the contracts are in pyproject.toml): the
index is a library that imports nothing of the hub; the agent clients (query, confined writes, the verified write)
import only the standard library and each other; the configuration knows no session, transport or process; the
hub's rooms (agents, server, proxy, transport/index/config, platform, the pid_liveness leaf) are layers and form
no circle; no module imports pygls or lsprotocol; the graph modules of the index form layers (graph_cache,
graph_inputs, graph, links, ranking, graph_store) without an import circle. And one rule import-linter cannot
state: no module reaches into a private member of asyncio or pygls."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO_ROOT

# Read from their sources: what asyncio and pygls keep to themselves (the names they give their own private members).
PRIVATE_OF = ("asyncio", "pygls")
# Objects of our own whose members we may name: `self` and `cls` (our classes subclass neither library's classes
# beyond the interfaces checked below).
OWN = {"self", "cls"}
# Documented public names that start with an underscore (os._exit, namedtuple's methods).
PUBLIC_UNDERSCORED = {"_exit", "_replace", "_asdict", "_fields", "_make"}
INTERFACES = {"Protocol", "BufferedProtocol", "SubprocessProtocol", "DatagramProtocol", "Event", "Queue"}


def test_the_import_contracts_are_kept() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", "--no-cache"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout and "7 kept" in done.stdout, done.stdout[-2000:]


def private_names(package: str) -> set[str]:
    """Every `_name` (not dunder) a package's source assigns on an object or defines in a class."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return set()
    names: set[str] = set()
    for path in Path(next(iter(spec.submodule_search_locations))).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                names.update(item.name for item in node.body
                             if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef))
                names.update(target.id for item in node.body if isinstance(item, ast.Assign)
                             for target in item.targets if isinstance(target, ast.Name))
    return {name for name in names if name.startswith("_") and not name.startswith("__")} - PUBLIC_UNDERSCORED


def private_uses(tree: ast.AST, private: set[str]) -> Iterator[tuple[int, str]]:
    """(line, what) for each use of a name in `private` on an object not our own: `x._name`, or
    getattr/hasattr/setattr(x, "_name")."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in private and \
                not (isinstance(node.value, ast.Name) and node.value.id in OWN):
            yield node.lineno, f"{ast.unparse(node.value)}.{node.attr}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2 and \
                isinstance(node.args[1], ast.Constant) and node.args[1].value in private:
            yield node.lineno, f"{node.func.id}({ast.unparse(node.args[0])}, {node.args[1].value!r})"


def library_subclasses(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Classes of ours built on a class of asyncio or pygls (whose `self._name` would be theirs), named through the
    module (`asyncio.X`) or imported from it (`from pygls.protocol import X`)."""
    imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and (node.module or "").split(".")[0] in PRIVATE_OF for alias in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                text = ast.unparse(base)
                head, name = text.split(".")[0], text.rsplit(".", 1)[-1]
                if (head in PRIVATE_OF or head in imported) and name not in INTERFACES:
                    yield node.lineno, f"class {node.name}({text})"


def test_no_module_uses_a_private_member_of_asyncio_or_pygls() -> None:
    private = set().union(*(private_names(package) for package in PRIVATE_OF))
    assert {"_buffer", "_transport", "_maybe_resume_transport", "_request_futures", "_send_data"} <= private
    found = []
    for path in sorted((REPO_ROOT / "lsp_hub").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, what in [*private_uses(tree, private), *library_subclasses(tree)]:
            found.append(f"{path.relative_to(REPO_ROOT)}:{line}: {what}")
    assert found == [], "\n".join(found)


def test_the_private_member_check_sees_what_the_hub_used_to_do() -> None:
    private = set().union(*(private_names(package) for package in PRIVATE_OF))
    old = ast.parse("buffer = getattr(stream, '_buffer', None)\nstream._maybe_resume_transport()\n"
                    "process = connection._server\nclass P(pygls.protocol.JsonRPCProtocol): pass\n"
                    "self._buffer = bytearray()\nfrom pygls.client import JsonRPCClient as C\nclass Q(C): pass\n"
                    "class R(asyncio.Protocol): pass\n")
    assert sorted(line for line, _ in private_uses(old, private)) == [1, 2, 3]
    assert sorted(line for line, _ in library_subclasses(old)) == [4, 7]
