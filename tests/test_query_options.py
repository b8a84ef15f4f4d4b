"""`lsp-hub query`'s options as an agent or a script relies on them, in front of a fake server: `--limit` holds the
`--json` answer (and the MCP tool's structured content) to as many items as the text shows and says how many it
left out; `--root` anchors relative FILE names; `QueryOptions` is the one typed question both surfaces ask."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.agents.agent_tools import AgentTools
from lsp_hub.agents.query import (
    HubConnection,
    Location,
    QueryError,
    QueryOptions,
    cap_items,
    options_from,
    query_main,
    spawn_hub,
)
from lsp_hub.agents.query.documents import distinct_definitions, outside_tests
from tests.hubclient import fake_server_config

LANGUAGES = {"python": {"extensions": ["py"], "language_ids": ["python"], "servers": ["fakeA"]}}
DEFINITIONS = 83  # as many places as `references` of one method printed before --limit held the JSON


def definitions(root: Path) -> list[dict[str, Any]]:
    uri = (root / "pkg" / "many.py").as_uri()
    return [
        {"uri": uri, "range": {"start": {"line": line, "character": 4}, "end": {"line": line, "character": 7}}}
        for line in range(DEFINITIONS)
    ]


# A method with two `@overload` signatures and its implementation (as click's Context.invoke): one symbol.
OVERLOADED = """\
from typing import overload


class Shape:
    @overload
    def area(self, scale: int) -> int: ...

    @overload
    def area(self, scale: float) -> float: ...

    def area(self, scale):
        return scale
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, HubConnection]]:
    base = tmp_path_factory.mktemp("query-options")
    root = base / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "pkg").mkdir()
    (root / "pkg" / "core.py").write_text("def use():\n    return many\n")
    (root / "pkg" / "many.py").write_text("".join(f"def f{line:02d}(): pass\n" for line in range(DEFINITIONS)))
    (root / "pkg" / "shapes.py").write_text(OVERLOADED)
    config = base / "config" / "lsp-hub" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        fake_server_config(
            {
                "fakeA": {
                    "diagnostics_on_open_and_change": [],
                    "responses": {"textDocument/definition": {"result": definitions(root)}},
                }
            },
            LANGUAGES,
        )
    )
    connection = spawn_hub(
        root, env={"XDG_CONFIG_HOME": str(base / "config"), "XDG_CACHE_HOME": str(base / "cache")}, owned=False
    )
    connection.initialize(root, 60.0)
    yield root, connection
    connection.owned = True
    connection.close()


def ask(connection: HubConnection, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = query_main([*argv, "--timeout", "60"], out=out, err=err, connection=connection)
    return code, out.getvalue(), err.getvalue()


def test_limit_holds_the_json_to_the_items_the_text_shows_and_says_how_many_it_left_out(
    project: tuple[Path, HubConnection],
) -> None:
    root, connection = project
    target = f"{root / 'pkg' / 'core.py'}:2:12"
    code, printed, err = ask(connection, "definition", target, "--json", "--limit", "5")
    assert code == 0, err
    answer = json.loads(printed)
    assert [entry["line"] for entry in answer["locations"]] == [1, 2, 3, 4, 5]
    assert answer["left_out"] == DEFINITIONS - 5
    assert answer["complete"] is False and answer["incomplete_reason"] == "limit"
    assert answer["incomplete_detail"] == f"5 of {DEFINITIONS} locations given (limit 5)"

    code, text, err = ask(connection, "definition", target, "--limit", "5")
    assert code == 0, err
    assert text.splitlines()[-1] == f"... {DEFINITIONS - 5} more"  # the text says the same

    code, printed, err = ask(connection, "definition", target, "--json", "--limit", "100")
    assert code == 0, err
    whole = json.loads(printed)
    assert len(whole["locations"]) == DEFINITIONS and whole["complete"] is True
    assert "left_out" not in whole and "incomplete_reason" not in whole


def test_the_mcp_tools_structured_content_is_held_to_the_limit_too(project: tuple[Path, HubConnection]) -> None:
    root, connection = project
    tools = AgentTools(root, lambda _root: connection, timeout=60.0)
    answer = tools.lsp("definition", file="pkg/core.py", line=2, column=12, limit=3)
    assert len(answer.data["locations"]) == 3 and answer.data["left_out"] == DEFINITIONS - 3
    assert answer.data["complete"] is False and answer.text.splitlines()[-1] == f"... {DEFINITIONS - 3} more"


def test_root_anchors_a_relative_file(
    project: tuple[Path, HubConnection], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, connection = project
    monkeypatch.chdir(tmp_path)  # a shell somewhere else: pkg/core.py is not here
    code, printed, err = ask(connection, "definition", "pkg/core.py:2:12", "--root", str(root), "--json")
    assert code == 0, err
    assert json.loads(printed)["locations"][0]["path"] == str(root / "pkg" / "many.py")

    code, _, err = ask(connection, "definition", "pkg/core.py:2:12", "--json")
    assert code == 2 and err == "lsp-hub query: pkg/core.py: no such file\n"


def test_root_anchors_files_before_any_hub_is_asked(
    project: tuple[Path, HubConnection], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The input is checked against the file under --root (its fourth line does not exist), with no hub."""
    root, _ = project
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    code = query_main(["definition", "pkg/core.py:4:1", "--root", str(root), "--no-daemon"], out=out, err=err)
    assert code == 2
    assert err.getvalue() == f"lsp-hub query: {root / 'pkg' / 'core.py'} has 2 lines; line 4 does not exist\n"


def test_the_command_line_and_the_options_object_say_the_same() -> None:
    options = options_from(["rename", "app.py:3:5", "total", "--limit", "7", "--json", "--root", "/"])
    assert options == QueryOptions(
        "rename", location=Location("app.py", 3, 5), new_name="total", limit=7, json=True, root=Path("/")
    )
    with pytest.raises(QueryError, match="--apply only goes with rename, format, code-actions"):
        QueryOptions("hover", location=Location("a.py", 1, 1), apply=True).check()
    with pytest.raises(QueryError, match="give FILE:LINE:COL or --symbol NAME"):
        QueryOptions("references").check()


def test_cap_items_keeps_the_most_severe_diagnostics_in_their_order() -> None:
    diagnostics = [
        {"severity": severity, "message": str(number)}
        for number, severity in enumerate(["hint", "error", "warning", "error", "information"])
    ]
    capped = cap_items({"diagnostics": diagnostics, "complete": True}, 3)
    assert [entry["message"] for entry in capped["diagnostics"]] == ["1", "2", "3"]
    assert capped["left_out"] == 2 and capped["complete"] is False
    untouched = {"diagnostics": diagnostics[:2], "complete": True}
    assert cap_items(untouched, 3) is untouched


def test_a_hub_of_its_own_finds_lsp_hub_and_nothing_inside_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # lsp_hub/ itself on the path would shadow the standard library (lsp_hub.platform as `platform`): the hub
    # then crashed as it started, and every `query --no-daemon` said "lost its hub".
    import lsp_hub
    from lsp_hub.agents.query import connection

    seen: dict[str, str] = {}

    class Refused(Exception):
        pass

    def popen(argv: list[str], **kwargs: object) -> None:
        env = kwargs["env"]
        assert isinstance(env, dict)
        seen.update(env)
        raise Refused

    import subprocess  # the module spawn_hub imports when it runs

    monkeypatch.setattr(subprocess, "Popen", popen)
    with pytest.raises(Refused):
        connection.spawn_hub(tmp_path)
    first = seen["PYTHONPATH"].split(os.pathsep)[0]
    assert Path(first) == Path(lsp_hub.__file__).resolve().parent.parent


def test_pipes_are_read_by_a_thread_where_select_takes_sockets_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Windows: select() takes sockets only, so a hub of its own (pipes) is read by a thread, with the same deadlines.
    from lsp_hub.agents.query import connection

    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "m.py").write_text("def f():\n    return 1\n")
    monkeypatch.setattr(connection.sys, "platform", "win32")
    hub = spawn_hub(root, env={"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "c")})
    try:
        assert hub._pipe_chunks is not None
        hub.initialize(root, 60.0)
        found = hub.request(
            "workspace/executeCommand", {"command": "lspHub.outline", "arguments": [{"path": str(root / "m.py")}]}, 60.0
        )
        assert "def f()" in found["text"]
        assert not hub.peer_closed()
    finally:
        hub.close()


def test_a_query_imports_only_the_rooms_of_its_action() -> None:
    # `lsp-hub query` is mostly Python starting: the rooms of actions that write or check, and the standard
    # library's modules only they need, are imported by those actions (a `query outline` goes without them).
    import subprocess
    import sys

    left_out = [
        "lsp_hub.agents.query.edit_actions",
        "lsp_hub.agents.query.edits",
        "lsp_hub.agents.query.diagnostics",
        "lsp_hub.agents.write_lock",
        "logging",
        "subprocess",
        "tempfile",
        "secrets",
        "difflib",
    ]
    script = (
        "import sys\nfrom lsp_hub.cli import _main\nfrom lsp_hub.agents.query import query_main\n"
        "import lsp_hub.agents.query.actions, lsp_hub.transport.daemon_client\n"
        f"print([name for name in {left_out!r} if name in sys.modules])\n"
    )
    repository = str(Path(__file__).resolve().parent.parent)
    completed = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "PYTHONPATH": repository},
        cwd=repository,
    )
    assert completed.stdout.strip() == "[]"


def test_overloads_of_one_method_are_one_symbol(project: tuple[Path, HubConnection]) -> None:
    """Seen on click: `references --symbol Context.invoke` answered "ambiguous; 3 definitions", two of them its
    `@overload` signatures, where zoom, impact and call-tree took the implementation."""
    _, connection = project
    code, out, err = ask(connection, "definition", "--symbol", "Shape.area", "--json")
    assert code == 0 and err == "", (code, err)
    assert json.loads(out)["locations"]


def test_distinct_definitions_keep_the_last_of_a_name_per_file() -> None:
    def named(uri: str, line: int, name: str | None) -> dict[str, Any]:
        place = {"uri": uri, "range": {"start": {"line": line, "character": 8}, "end": {"line": line, "character": 12}}}
        return {**place, "name": name} if name is not None else place

    overloads = [named("file:///a.py", line, "Shape.area") for line in (5, 8, 10)]
    other_file = named("file:///b.py", 1, "Shape.area")
    assert distinct_definitions([*overloads, other_file]) == [overloads[-1], other_file]
    unnamed = [named("file:///a.py", 1, None), named("file:///a.py", 2, None)]
    assert distinct_definitions(unnamed) == unnamed  # an older hub's answer: nothing to go by


def test_a_symbol_a_tests_stand_in_shares_means_the_code_outside_tests() -> None:
    """`query hover --symbol View.render` on express: the tests define their own `View.prototype.render`. The hub
    marks each definition `inTests`; when exactly one is outside tests, that one is meant (as zoom and impact
    choose), else all stay and the answer is "ambiguous"."""
    code = {"uri": "file:///w/lib/view.js", "name": "View.render", "inTests": False}
    stand_in = {"uri": "file:///w/test/app.render.js", "name": "View.render", "inTests": True}
    assert outside_tests([code, stand_in]) == [code]
    other = {**code, "uri": "file:///w/lib/other.js"}
    assert outside_tests([code, other, stand_in]) == [code, other, stand_in]
    assert outside_tests([{k: v for k, v in code.items() if k != "inTests"}, stand_in])[0]["uri"].endswith("view.js")
