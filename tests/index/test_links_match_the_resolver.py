"""A file's links pass over some uses without asking the resolver (those it can only send to the file itself or
nowhere); the links must be exactly what asking it about every use gives."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

from lsp_hub.index.graph import UseResolver, use_resolver
from lsp_hub.index.graph_inputs import MAX_DEFINERS, GraphInputs, graph_inputs
from lsp_hub.index.links import Link, file_links, links_of
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex

STDLIB = Path(sysconfig.get_paths()["stdlib"])

FILES = {
    # Python: its own names, `self.` its own and others', a star import, an alias, a module, an outside import.
    "pkg/__init__.py": "from .shapes import *\n",
    "pkg/shapes.py": (
        "class Shape:\n    def area(self):\n        return helper()\n    def grow(self):\n"
        "        self.area()\n        self.render()\n\ndef helper():\n    return 1\n"
    ),
    "pkg/render.py": "def render():\n    pass\n\ndef helper():\n    return 2\n",
    "app.py": (
        "import os\nfrom pkg import *\nfrom pkg.render import render as draw\nimport pkg.render\n\n"
        "def main():\n    s = Shape()\n    s.area()\n    draw()\n    pkg.render.render()\n"
        "    os.path.join('a', 'b')\n    helper()\n    len([])\n    main()\n"
    ),
    "script.py": "def helper():\n    pass\n\nhelper()\nrender()\n",
    # TypeScript: a module with imports (its plain names are local) and a script without (its names are global).
    "web/util.ts": "export function format(x: number) { return `${x}`; }\nexport function render() {}\n",
    "web/main.ts": "import { format } from './util';\nformat(1);\nrender();\nfunction local() {}\nlocal();\n",
    "web/script.js": "function local() {}\nlocal();\nformat(2);\nrender();\n",
    # Go: a package's plain names come from the other files of its directory too.
    "go/a.go": "package main\n\nfunc helper() int { return 1 }\nfunc main() { helper(); shared() }\n",
    "go/b.go": "package main\n\nfunc shared() {}\nfunc helper2() { helper() }\n",
    # Rust: a module's plain names are its own, its `use`s' and the prelude's; a path names where a type comes from;
    # macros (`#[macro_use] mod macros;`) reach the whole crate.
    "rs/Cargo.toml": '[package]\nname = "rs"\n',
    "rs/src/lib.rs": (
        "mod defs;\nmod util;\nmod other;\n#[macro_use]\nmod macros;\nuse std::fmt;\nuse crate::util::helper;\n\n"
        "pub struct Printer;\n\nimpl fmt::Debug for Printer {\n"
        "    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {\n        helper();\n        shout!();\n"
        "        Ok(())\n    }\n}\n\nfn make() -> Result<File, Error> {\n    todo!()\n}\n"
    ),
    "rs/src/defs.rs": "pub struct Debug;\npub struct File;\npub struct Error;\npub struct Formatter;\n",
    "rs/src/util.rs": "pub fn helper() {}\n",
    "rs/src/macros.rs": "macro_rules! shout {\n    () => {};\n}\n",
    "rs/src/other.rs": "use crate::defs::File;\n\nfn open() -> File {\n    shout!();\n    File\n}\n",
}


def _links_asking_every_use(resolver: UseResolver, inputs: GraphInputs, source: str) -> tuple[Link, ...]:
    """The definition of a file's links: each use's targets as the resolver gives them, the file itself left out."""
    renames = resolver.renames.get(source, {})
    links: list[Link] = []
    for name, by_receiver in resolver.snapshot.files[source].reference_uses().items():
        for receiver, uses in by_receiver.items():
            used = renames.get(name, name) if receiver is None else name
            definers = inputs.tables.definers.get(used)
            if not definers or len(definers) > MAX_DEFINERS:
                continue
            targets = tuple(target for target in resolver.targets(source, name, receiver) if target != source)
            if targets:
                links.append((used, uses, targets))
    return tuple(links)


def _assert_links_match(snapshot: Snapshot) -> int:
    inputs, resolver = graph_inputs(snapshot), use_resolver(snapshot)
    links = file_links(snapshot)
    for path in snapshot.files:
        assert links[path] == _links_asking_every_use(resolver, inputs, path), path
        assert links_of(resolver, inputs, path) == links[path], path
    return sum(len(file) for file in links.values())


def test_links_equal_the_resolvers_answers_across_languages(tmp_path: Path) -> None:
    for relative, text in FILES.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text, encoding="utf-8")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    try:
        index.build()
        snapshot = index.snapshot()
        assert _assert_links_match(snapshot) > 0
        links = file_links(snapshot)
        # The uses passed over really make no link, and the others still do.
        assert ("Shape", 1, ("pkg/shapes.py",)) in links["app.py"]  # through the star import
        assert all(link[0] != "main" for link in links["app.py"])  # its own name
        assert all(link[0] != "len" for link in links["app.py"])  # a builtin
        assert ("helper", 1, ("pkg/shapes.py",)) in links["app.py"]  # the star import's, not render.py's
        assert links["pkg/shapes.py"] == (("render", 1, ("pkg/render.py",)),)  # `self.render()`: not defined here
        assert all(link[0] != "area" for link in links["pkg/shapes.py"])  # `self.area()` it defines
        assert any(link[0] == "render" for link in links["web/script.js"])  # a script's names are global
        assert any(link[0] == "shared" for link in links["go/a.go"])  # the package's other file
        # `fmt::Debug`, `fmt::Formatter`: std's; `Result`, `File`, `Error`: the prelude's or nothing here
        assert links["rs/src/lib.rs"] == (("helper", 1, ("rs/src/util.rs",)), ("shout", 1, ("rs/src/macros.rs",)))
        assert ("File", 1, ("rs/src/defs.rs",)) in links["rs/src/other.rs"]  # imported by `use`
    finally:
        index.close()


@pytest.mark.skipif(not (STDLIB / "email").is_dir(), reason="needs the standard library's sources (email, json)")
def test_links_equal_the_resolvers_answers_on_the_standard_library(tmp_path: Path) -> None:
    for package in ("email", "json", "logging", "importlib"):
        shutil.copytree(STDLIB / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "test*"))
    index = WorkspaceIndex(tmp_path, use_cache=False)
    try:
        index.build()
        assert _assert_links_match(index.snapshot()) > 500
    finally:
        index.close()


def test_no_link_goes_to_a_file_that_defines_the_name_only_in_a_function(tmp_path: Path) -> None:
    """12-14% of the links on the standard library, fastapi and zod went to a file defining the name only in a
    function's body: fastapi's `app.get(...)` reached the test functions' local `get` routes. The name tables leave
    locals out; a local is still the file's own name there, and `zoom` and `callers` still find one by its name when
    nothing else defines it."""
    from lsp_hub.index import api

    (tmp_path / "routes.py").write_text("def test_route():\n    def get():\n        return 1\n    return get()\n")
    (tmp_path / "client.py").write_text("class Client:\n    def get(self):\n        return 2\n")
    (tmp_path / "use.py").write_text("def fetch(client):\n    return client.get()\n")
    (tmp_path / "closures.py").write_text("def outer():\n    def helper():\n        return 1\n    return helper()\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    links = file_links(index.snapshot())
    assert links["use.py"] == (("get", 1, ("client.py",)),)
    assert api.zoom(index, "get").to_json()["name"] == "Client.get"  # not ambiguous with the test's local
    assert api.zoom(index, "helper").to_json()["path"] == "closures.py"
    callers = api.callers(index, {"symbol": "helper"})["callers"]
    assert [caller["location"]["uri"].rsplit("/", 1)[1] for caller in callers] == ["closures.py"]
    index.close()
