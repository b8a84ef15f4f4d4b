"""The repo map: ranking, focus, mentioned identifiers, budgets; and the graphs it stands on."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lsp_hub.index.graph_inputs import import_graph
from lsp_hub.index.pagerank import best_positions
from lsp_hub.index.ranking import reference_graph
from lsp_hub.index.repomap import repo_map
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex
from tests.index.index_helpers import write


def snapshot_of(root: Path) -> Snapshot:
    index = WorkspaceIndex(root, use_cache=False)
    index.build()
    return index.snapshot()


def drawn_lines(snapshot: Snapshot, path: str) -> list[str]:
    """The lines a roomy map draws under `path`: those after its header, up to the next file's."""
    after = repo_map(snapshot, token_budget=4096)["text"].split(f"{path}:\n", 1)[1].splitlines()
    return list(itertools.takewhile(lambda line: line.startswith(" "), after))


def listed(result: dict[str, object]) -> list[str]:
    files = result["files"]
    assert isinstance(files, list)
    return [entry["path"] for entry in files]


def test_graphs_follow_imports_and_references(copy_repo: Callable[[str], Path]) -> None:
    snapshot = snapshot_of(copy_repo("pyapp"))
    imports = import_graph(snapshot)
    assert set(imports.successors("pyapp/service.py")) == {"pyapp/models.py", "pyapp/storage.py", "pyapp/__init__.py"}
    assert set(imports.predecessors("pyapp/storage.py")) == {"pyapp/service.py", "tests/test_storage.py"}
    references = reference_graph(snapshot).graph
    assert references.has_edge("pyapp/storage.py", "pyapp/models.py")
    # cli.py imports save_user from other.py: no reference edge to storage.py's save_user.
    assert references.has_edge("pyapp/cli.py", "pyapp/other.py")
    assert not references.has_edge("pyapp/cli.py", "pyapp/storage.py")
    # Builtins used without import (`str`, `dict`) point nowhere.
    assert not references.has_edge("pyapp/other.py", "pyapp/models.py")


def test_most_referenced_files_and_symbols_come_first(copy_repo: Callable[[str], Path]) -> None:
    snapshot = snapshot_of(copy_repo("pyapp"))
    result = repo_map(snapshot, token_budget=1024)
    assert listed(result)[:3] == ["pyapp/models.py", "pyapp/storage.py", "pyapp/service.py"]
    first = result["files"][0]
    assert {"User", "UserCache", "make_user"} <= set(first["symbols"])
    text = result["text"]
    assert text.startswith("pyapp/models.py:\n")
    lines = text.splitlines()
    assert lines.index("  class UserCache:") < lines.index("    def get(self, name: str) -> User | None:")
    scores = [entry["score"] for entry in result["files"]]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("budget", [0, 5, 12, 30, 64, 100, 200, 400, 4096])
def test_never_over_budget(copy_repo: Callable[[str], Path], budget: int) -> None:
    snapshot = snapshot_of(copy_repo("pyapp"))
    result = repo_map(snapshot, token_budget=budget)
    assert result["tokens"] == math.ceil(len(result["text"]) / 4) <= budget
    for entry in result["files"]:
        assert entry["path"] in result["text"]
        for symbol in entry["symbols"]:
            assert symbol in result["text"]
    if budget >= 12:
        assert result["files"], "a budget that fits a line shows something"


def test_a_bigger_budget_shows_more(copy_repo: Callable[[str], Path]) -> None:
    snapshot = snapshot_of(copy_repo("tsapp"))
    small, large = repo_map(snapshot, token_budget=40), repo_map(snapshot, token_budget=400)
    assert len(small["text"]) < len(large["text"])
    assert listed(small)[0] == listed(large)[0]
    assert set(listed(large)) == set(snapshot.files)  # everything fits in 400 tokens


def test_focus_changes_the_order_and_is_not_listed(copy_repo: Callable[[str], Path]) -> None:
    snapshot = snapshot_of(copy_repo("pyapp"))
    unfocused = repo_map(snapshot, token_budget=1024)
    focused = repo_map(snapshot, focus_files=["pyapp/cli.py"], token_budget=1024)
    assert listed(unfocused)[0] == "pyapp/models.py"
    assert listed(focused)[0] == "pyapp/service.py"  # cli.py uses Registry from service.py
    assert "pyapp/cli.py" not in listed(focused)
    assert "pyapp/cli.py" in listed(unfocused)
    # The definitions the focus file uses are preferred within a tight budget.
    tight = repo_map(snapshot, focus_files=["pyapp/cli.py"], token_budget=30)
    assert "register_many" in tight["text"]


def test_mentioned_identifiers_pull_their_files_up(copy_repo: Callable[[str], Path]) -> None:
    snapshot = snapshot_of(copy_repo("pyapp"))
    by_definition = repo_map(snapshot, mentioned_idents=["slugify"], token_budget=1024)
    assert listed(by_definition)[0] == "pyapp/util/text.py"
    by_file_name = repo_map(snapshot, mentioned_idents=["Other"], token_budget=1024)
    assert listed(by_file_name)[0] == "pyapp/other.py"


def test_go_and_mixed_repositories(copy_repo: Callable[[str], Path]) -> None:
    go = repo_map(snapshot_of(copy_repo("gomod")), token_budget=1024)
    assert listed(go)[0] == "pricing/pricing.go"
    assert "func NewCart() *Cart" in go["text"]
    mixed = repo_map(snapshot_of(copy_repo("mixed")), token_budget=1024)
    assert listed(mixed)[0] == "engine/src/util.rs"


def test_the_map_follows_an_edit(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("pyapp")
    index = WorkspaceIndex(root, use_cache=False)
    index.build()
    before = repo_map(index.snapshot(), token_budget=1024)
    callers = "".join(f"from pyapp.other import archive\n\ndef use{i}():\n    archive({{}})\n" for i in range(3))
    for number in range(4):
        write(root, f"pyapp/extra{number}.py", callers)
        index.update_file(f"pyapp/extra{number}.py")
    after = repo_map(index.snapshot(), token_budget=1024)
    assert listed(after).index("pyapp/other.py") < listed(before).index("pyapp/other.py")


@pytest.mark.parametrize("budget", [0, 40, 1024, 60_000])
def test_the_best_files_picked_are_those_a_full_sort_gives(tmp_path: Path, budget: int) -> None:
    """The map picks its candidate files from the best few hundred (more when the budget could show more)
    instead of sorting every file: the candidates are the same prefix of the full order either way."""
    from lsp_hub.index import repomap
    from lsp_hub.index.graph_store import ranking

    for number in range(900):
        used = " ".join(f"f{other}()" for other in range(number % 7, 900, 97))
        write(tmp_path, f"pkg{number % 13}/m{number:04d}.py", f"def f{number}():\n    {used}\n")
    snapshot = snapshot_of(tmp_path)
    graph = ranking(snapshot)
    ranks = graph.base_ranks
    focus = frozenset(sorted(snapshot.files)[:3])
    everything = sorted((p for p in snapshot.files if p not in focus), key=lambda p: (-ranks.get(p, 0.0), p))
    positions = {path: position for position, path in enumerate(graph.nodes)}
    expected = repomap._candidate_files(graph.nodes, [positions[path] for path in everything], budget)
    assert list(repomap._best_candidates(graph.nodes, graph.base_vector, focus, budget, None)) == list(expected)
    # From a stored ranking's best nodes in order: the same, and more than they list sorts the ranks after all.
    best = best_positions(graph.nodes, graph.base_vector, 600)
    assert list(repomap._best_candidates(graph.nodes, graph.base_vector, focus, budget, best)) == list(expected)
    if budget == 60_000:
        assert len(expected) > 512  # past the first pick: the pick grew


def test_the_best_files_break_ties_at_the_cut_by_path() -> None:
    from lsp_hub.index.repomap import _best_files

    paths = [f"f{number:03d}.py" for number in range(600)][::-1]
    ranks = {path: (1.0 if number % 3 == 0 else 0.5) for number, path in enumerate(sorted(paths))}
    full = sorted(paths, key=lambda path: (-ranks[path], path))
    vector = np.array([ranks[path] for path in paths])

    def best(vector: np.ndarray, wanted: int, left_out: frozenset[str]) -> list[str]:
        return [paths[position] for position in _best_files(paths, vector, wanted, left_out, None)]

    assert best(vector, 250, frozenset()) == full[:250]  # 200 ranked 1.0, then the 0.5 ties by path
    left_out = frozenset(full[:5])
    assert best(vector, 250, left_out) == full[5:255]
    assert best(np.zeros(len(paths)), 7, frozenset()) == sorted(paths)[:7]  # all tied
    assert [paths[position] for position in best_positions(paths, list(vector), 600)] == full  # without numpy


@pytest.mark.parametrize("budget", [12, 30, 64, 100, 200, 400, 1000])
def test_the_map_is_the_longest_run_of_ranked_definitions_within_the_budget(
    copy_repo: Callable[[str], Path], budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget's search (doubling from one, then halving) returns the longest run of ranked definitions whose
    map fits: the run one longer was tried and did not fit (or there is none)."""
    from lsp_hub.index import repomap as repomap_module

    tried: dict[int, tuple[bool, str]] = {}  # run length -> (fits, text)
    original = repomap_module._Renderer.render

    def render(self: Any, tags: Any, bare_files: Any) -> tuple[str, list[tuple[str, list[str]]]]:
        text, listed_files = original(self, tags, bare_files)
        tried[len(tags) + len(bare_files)] = (math.ceil(len(text) / 4) <= budget, text)
        return text, listed_files

    monkeypatch.setattr(repomap_module._Renderer, "render", render)
    result = repo_map(snapshot_of(copy_repo("pyapp")), token_budget=budget)
    longest = max(length for length, (fits, _text) in tried.items() if fits)
    assert result["text"] == tried[longest][1]
    failed = [length for length, (fits, _text) in tried.items() if not fits]
    assert not failed or min(failed) == longest + 1
    assert len(tried) <= 2 * math.ceil(math.log2(longest + 2)) + 2  # a search, not a scan


def test_a_member_away_from_its_type_is_not_drawn_under_another(tmp_path: Path) -> None:
    """A Go method or a Rust impl's function may follow other types; indented under the type above it, it read as
    that type's (cobra's `Command` methods under `commandSorterByName`). A class's methods stay nested."""
    write(
        tmp_path,
        "shapes.go",
        "package shapes\n\ntype Point struct {\n\tX int\n}\n\ntype Other struct{}\n\n"
        "func (p *Point) Norm() int {\n\treturn p.X\n}\n\nfunc (o Other) Len() int {\n"
        "\treturn 0\n}\n",
    )
    write(tmp_path, "use.go", "package shapes\n\nfunc Use(p *Point, o Other) int {\n\treturn p.Norm() + o.Len()\n}\n")
    write(
        tmp_path,
        "src/lib.rs",
        "pub struct Point { x: i32 }\npub struct Other;\nimpl Point {\n    pub fn norm(&self) -> i32 { self.x }\n}\n",
    )
    write(tmp_path, "src/main.rs", "use x::Point;\nfn main() { let p = Point { x: 1 }; p.norm(); }\n")
    write(
        tmp_path, "app.py", "class Point:\n    def norm(self) -> int:\n        return 1\n\n\nclass Other:\n    pass\n"
    )
    write(tmp_path, "main.py", "from app import Other, Point\n\nPoint().norm()\nOther()\n")
    lines = repo_map(snapshot_of(tmp_path), token_budget=4096)["text"].splitlines()
    go, rust, python = lines.index("shapes.go:"), lines.index("src/lib.rs:"), lines.index("app.py:")
    assert lines[go + 1 : go + 5] == [
        "  type Point struct {...}",
        "  type Other struct{}",
        "  func (p *Point) Norm() int",
        "  func (o Other) Len() int",
    ]
    assert lines[rust + 1 : rust + 4] == [
        "  pub struct Point",
        "  pub struct Other;",
        "  pub fn norm(&self) -> i32 [Point]",
    ]
    assert lines[python + 1 : python + 4] == ["  class Point:", "    def norm(self) -> int:", "  class Other:"]


def test_a_constructor_does_not_take_its_classs_rank_and_a_comment_is_no_part_of_a_header(tmp_path: Path) -> None:
    """gson: a Java constructor is named as its class, so every use of `JsonElement` ranked the deprecated
    constructor as high as the class, and the map showed it instead of a method (C#, C++ alike). An annotation's
    line comment sat inside the class's header line (`@SuppressWarnings("serial") // ignore ... public final
    class LazilyParsedNumber ...`)."""
    write(
        tmp_path,
        "src/Element.java",
        'package p;\n\n@SuppressWarnings("serial") // ignore the missing serialVersionUID\n'
        "public abstract class Element {\n  @Deprecated\n  public Element() {}\n\n"
        '  public String asText() {\n    return "";\n  }\n}\n',
    )
    uses = "".join(f"  Element e{n} = make{n}();\n" for n in range(6))
    write(tmp_path, "src/Use.java", f"package p;\n\nclass Use {{\n  void run() {{\n{uses}    e0.asText();\n  }}\n}}\n")
    snapshot = snapshot_of(tmp_path)
    lines = repo_map(snapshot, token_budget=4096)["text"].splitlines()
    element = lines.index("src/Element.java:")
    assert lines[element + 1] == '  @SuppressWarnings("serial") public abstract class Element'
    # The smallest map that shows two of the file's definitions: the class, then the method used (not the
    # constructor, which only shares the class's name).
    for budget in range(10, 200, 2):
        files = repo_map(snapshot, token_budget=budget)["files"]
        symbols = next(entry["symbols"] for entry in files if entry["path"] == "src/Element.java")
        if len(symbols) >= 2:
            break
    assert symbols == ["Element", "asText"]


def test_a_named_callback_comes_after_the_files_definitions_that_are_used(tmp_path: Path) -> None:
    """A route's anonymous handler (`app.get("/users")`) or a test's callback has no name any use can link to: only
    its kind's floor ranks it, which put express's example routes before the library's own methods. It counts as
    a private name does: after a function of its file that nothing uses either."""
    write(tmp_path, "package.json", '{"name": "shop"}\n')
    write(
        tmp_path,
        "src/app.js",
        "var app = express();\n\napp.get('/users', function (req, res) {\n  res.send('x');\n});\n\n"
        "function render() {\n  return 'x';\n}\n",
    )
    write(tmp_path, "src/use.js", "var app = require('./app');\n")
    snapshot = snapshot_of(tmp_path)
    for budget in range(10, 200, 2):
        files = repo_map(snapshot, token_budget=budget)["files"]
        symbols = next((entry["symbols"] for entry in files if entry["path"] == "src/app.js"), [])
        if symbols:
            break
    assert symbols == ["render"]


def test_a_closure_sharing_a_used_name_is_not_drawn_as_a_top_level_function(tmp_path: Path) -> None:
    """fastapi: `FastAPI.setup` defines `async def openapi(req)` inside it, and every use of the method `openapi`
    ranked the closure too, drawn at the file's top level as if the module defined it (five `def decorator` lines
    beside). No other file can name a function's locals: the map leaves them out, as the outline does."""
    write(
        tmp_path,
        "app/applications.py",
        "class FastAPI:\n    def openapi(self):\n        return {}\n\n    def setup(self):\n"
        "        async def openapi(req):\n            return self.openapi()\n\n"
        "        class Local:\n            def openapi(self):\n                return 1\n\n"
        "        return openapi\n",
    )
    write(tmp_path, "app/main.py", "from app.applications import FastAPI\n\nFastAPI().openapi()\n")
    snapshot = snapshot_of(tmp_path)
    assert drawn_lines(snapshot, "app/applications.py") == [
        "  class FastAPI:",
        "    def openapi(self):",
        "    def setup(self):",
    ]
    locals_flags = [(d[0], d[5]) for d in snapshot.files["app/applications.py"].definitions]
    assert locals_flags == [
        ("FastAPI", False),
        ("openapi", False),
        ("setup", False),
        ("openapi", True),
        ("Local", True),
        ("openapi", True),
    ]


def test_members_of_nested_types_are_drawn_one_level_deeper_each(tmp_path: Path) -> None:
    """sinatra: `module Sinatra; class Request; def params` drew the method level with the class, as if the module
    had it, and `def block.each` inside a method's body (a local, never drawn) ended the nesting for the rest of
    the file: every later method read `def redirect [Helpers]`."""
    write(
        tmp_path,
        "lib/app.rb",
        "module Sinatra\n  class Request\n    def params\n      1\n    end\n  end\n\n  module Helpers\n"
        "    def body(&block)\n      def block.each; yield(call) end\n    end\n\n    def redirect(uri)\n"
        "      uri\n    end\n  end\nend\n",
    )
    write(
        tmp_path,
        "lib/use.rb",
        "require_relative 'app'\n\nSinatra::Request.new.params\nx.body { 1 }\nx.redirect('/')\nx.each\n",
    )
    assert drawn_lines(snapshot_of(tmp_path), "lib/app.rb") == [
        "  module Sinatra",
        "    class Request",
        "      def params",
        "    module Helpers",
        "      def body(&block)",
        "      def redirect(uri)",
    ]


def test_a_types_own_is_some_does_not_open_a_rust_map(tmp_path: Path) -> None:
    """axum: `MethodEndpoint::is_some`, `Buffer::as_mut` and `EventFlags::contains` took every `.is_some()`,
    `.as_mut()` and `.contains()` the crate calls on std's types, and sse.rs opened the map. The standard library's
    everyday method names count as common names, as Python's and JavaScript's do."""
    write(tmp_path, "Cargo.toml", '[package]\nname = "web"\nversion = "0.1.0"\n')
    write(tmp_path, "src/endpoint.rs", "pub enum Endpoint { None, Some(u8) }\n\nimpl Endpoint {\n"
          "    pub fn is_some(&self) -> bool { true }\n    pub fn as_mut(&mut self) -> &mut Self { self }\n}\n")
    write(tmp_path, "src/router.rs", "pub struct Router;\n\nimpl Router {\n"
          "    pub fn route(self, path: &str) -> Self { self }\n}\n")
    for number in range(6):
        write(tmp_path, f"src/handler_{number}.rs", "use crate::router::Router;\n\n"
              "pub fn app(x: Option<u8>, mut y: Option<u8>) -> Router {\n"
              "    if x.is_some() && y.as_mut().is_some() && x.is_some() { Router.route(\"/\") } else { Router }\n}\n")
    assert listed(repo_map(snapshot_of(tmp_path)))[0] == "src/router.rs"


def test_a_run_of_overloads_is_drawn_once_with_its_count(tmp_path: Path) -> None:
    """requests' auth.py took six of a map's lines for two classes' `__init__` (three `@overload`s each). A run of
    definitions of one name, kind and container (overloads, a property's getter and setter) is drawn as its first,
    with how many follow; a name defined again elsewhere in the file is drawn again."""
    write(
        tmp_path,
        "src/jar.py",
        "from typing import overload\n\n\nclass Jar:\n    @overload\n    def get(self, key: str) -> str: ...\n"
        "    @overload\n    def get(self, key: int) -> int: ...\n    def get(self, key):\n        return key\n\n"
        "    @property\n    def size(self) -> int:\n        return 1\n\n    @size.setter\n"
        "    def size(self, value: int) -> None:\n        pass\n\n\nclass Box:\n    def get(self) -> int:\n"
        "        return 0\n",
    )
    write(
        tmp_path,
        "src/pick.ts",
        "export function pick(a: string): string;\nexport function pick(a: number): number;\n"
        "export function pick(a: any): any { return a; }\n",
    )
    write(tmp_path, "src/use.py", "from src.jar import Box, Jar\n\nJar().get('a')\nJar().size\nBox().get()\n")
    write(tmp_path, "src/use.ts", "import { pick } from './pick';\npick('a');\n")
    result = repo_map(snapshot_of(tmp_path), token_budget=4096)
    lines = result["text"].splitlines()
    jar, pick = lines.index("src/jar.py:"), lines.index("src/pick.ts:")
    assert lines[jar + 1 : jar + 6] == [
        "  class Jar:",
        "    def get(self, key: str) -> str: [+2 more]",
        "    def size(self) -> int: [+1 more]",
        "  class Box:",
        "    def get(self) -> int:",
    ]
    assert lines[pick + 1] == "  function pick(a: string): string; [+2 more]"
    symbols = {entry["path"]: entry["symbols"] for entry in result["files"]}
    assert symbols["src/pick.ts"] == ["pick"]


def test_generated_files_come_after_the_code_that_uses_them(tmp_path: Path) -> None:
    """tRPC's map spent its budget on generated `sdk.gen.ts`/`types.gen.ts` test fixtures, near copies of each
    other. Generated code is not where an agent works: its definitions rank a tenth, unless the task mentions them."""
    write(tmp_path, "package.json", '{"name": "x"}\n')
    write(tmp_path, "client/sdk.gen.ts", "// This file is auto-generated\nexport function getUser(id: number) {\n"
          "  return id;\n}\nexport function listUsers() {\n  return [];\n}\n")
    write(tmp_path, "src/router.ts", "export function createRouter() {\n  return {};\n}\n")
    write(tmp_path, "src/app.ts", 'import { createRouter } from "./router";\n\nexport const app = createRouter();\n')
    for n in range(4):  # the generated client is used more than the router: it ranks higher
        write(tmp_path, f"src/use{n}.ts", 'import { getUser } from "../client/sdk.gen";\n\n'
              f"export function use{n}() {{\n  return getUser({n});\n}}\n")
    snapshot = snapshot_of(tmp_path)
    tight = repo_map(snapshot, token_budget=20)["text"]  # room for one file's definitions
    assert "createRouter" in tight and "getUser" not in tight, tight
    mentioned = repo_map(snapshot, token_budget=20, mentioned_idents=["getUser"])["text"]
    assert "getUser" in mentioned, mentioned


def test_a_file_marked_generated_comes_after_hand_written_code(tmp_path: Path) -> None:
    """Bison's parser.c and flex's lexer.c (jq) and Go's `// Code generated ... DO NOT EDIT.` files have plain
    names: the mark at their top says what they are, and their definitions rank a tenth as a generated name's do."""
    write(tmp_path, "go.mod", "module example.com/m\n\ngo 1.21\n")
    write(tmp_path, "kinds/kind_names.go", "// Code generated by stringer -type=Kind; DO NOT EDIT.\n\npackage kinds\n\n"
          "func KindName(k int) string {\n\treturn \"\"\n}\n")
    write(tmp_path, "router/router.go", "package router\n\nfunc NewRouter() int {\n\treturn 1\n}\n")
    write(tmp_path, "main.go", 'package main\n\nimport "example.com/m/router"\n\nvar app = router.NewRouter()\n')
    for n in range(4):  # the generated names are used more than the router: without the mark they rank higher
        write(tmp_path, f"use{n}/use.go", f'package use{n}\n\nimport "example.com/m/kinds"\n\n'
              f"func Use{n}() string {{\n\treturn kinds.KindName({n})\n}}\n")
    snapshot = snapshot_of(tmp_path)
    assert snapshot.files["kinds/kind_names.go"].generated_by.startswith("// Code generated by stringer")
    tight = repo_map(snapshot, token_budget=20)["text"]
    assert "NewRouter" in tight and "KindName" not in tight, tight
    mentioned = repo_map(snapshot, token_budget=20, mentioned_idents=["KindName"])["text"]
    assert "KindName" in mentioned, mentioned
