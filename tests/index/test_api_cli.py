"""The lspHub.* commands as JSON in/out, and the CLI verbs on top of them."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_hub.index import api, background
from lsp_hub.index.cli import index_cli_main
from lsp_hub.index.workspace import WorkspaceIndex
from tests.index.index_helpers import write


@pytest.fixture
def pyapp_index(copy_repo: Callable[[str], Path]) -> WorkspaceIndex:
    index = WorkspaceIndex(copy_repo("pyapp"))
    index.build()
    return index


def test_repo_map_accepts_uris_and_paths(pyapp_index: WorkspaceIndex) -> None:
    cli_uri = (pyapp_index.root / "pyapp" / "cli.py").as_uri()
    by_uri = api.repo_map(pyapp_index, {"focusFiles": [cli_uri], "tokenBudget": 200})
    by_path = api.repo_map(pyapp_index, {"focusFiles": ["pyapp/cli.py"], "tokenBudget": 200})
    assert by_uri == by_path
    assert set(by_uri) == {"text", "files", "tokens", "complete"}
    assert by_uri["complete"] is True and by_uri["tokens"] <= 200
    assert api.repo_map(pyapp_index, None)["files"][0]["path"] == "pyapp/models.py"
    json.dumps(by_uri)  # plain JSON


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"tokenBudget": "big"}, "tokenBudget must be an integer"),
        ({"tokenBudget": -1}, "tokenBudget must be between"),
        ({"focusFiles": "a.py"}, "focusFiles must be a list of strings"),
        ({"focusFiles": ["/elsewhere/a.py"]}, "is not inside the workspace root"),
    ],
)
def test_invalid_arguments_raise_clear_errors(
    pyapp_index: WorkspaceIndex, arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        api.repo_map(pyapp_index, arguments)


def test_relevant_files_with_reasons_excluding_targets(pyapp_index: WorkspaceIndex) -> None:
    result = api.relevant_files(
        pyapp_index, {"description": "Evict old entries from the UserCache", "targets": ["pyapp/storage.py"], "topN": 4}
    )
    paths = [entry["path"] for entry in result["files"]]
    assert "pyapp/storage.py" not in paths
    assert paths[0] == "pyapp/models.py"
    reasons = dict((entry["path"], entry["reasons"]) for entry in result["files"])
    assert "defines UserCache, User named in the description" in reasons["pyapp/models.py"]
    assert "imported by target pyapp/storage.py" in reasons["pyapp/models.py"]
    assert "test of target pyapp/storage.py" in reasons["tests/test_storage.py"]
    assert "imports target pyapp/storage.py" in reasons["pyapp/service.py"]
    assert result["complete"] is True
    with pytest.raises(ValueError, match="description or targets"):
        api.relevant_files(pyapp_index, {"description": "  "})


def test_relevance_from_a_description_alone(copy_repo: Callable[[str], Path]) -> None:
    index = WorkspaceIndex(copy_repo("tsapp"))
    index.build()
    result = api.relevant_files(index, {"description": "formatPrice should round to the currency digits"})
    first = result["files"][0]
    assert first["path"] == "src/lib/format.ts"
    # formatPrice first, as written; PriceFormat is made of the same two words
    assert "defines formatPrice, PriceFormat named in the description" in first["reasons"]
    # cart.ts calls formatPrice through the lib/index.ts re-export: the code a change to it may break.
    users = {entry["path"]: entry["reasons"] for entry in result["files"][1:]}
    assert users["src/cart.ts"] == ["uses formatPrice named in the description"]


def test_syntax_check_prefers_document_text_then_argument_then_disk(tmp_path: Path) -> None:
    good = write(tmp_path, "ok.py", "def f():\n    return 1\n")
    assert api.syntax_check({"uri": good.as_uri()}) == {
        "ok": True,
        "checked": True,
        "language": "python",
        "checker": "cpython-3.11",
        "errors": [],
    }
    broken = api.syntax_check({"uri": good.as_uri(), "text": "def f(:\n"})
    assert broken["ok"] is False and broken["errors"][0]["range"]["start"]["line"] == 0
    assert api.syntax_check({"uri": good.as_uri(), "text": "def f(:\n"}, document_text="x = 1\n")["ok"] is True
    unsupported = api.syntax_check({"uri": (tmp_path / "notes.txt").as_uri()})
    assert unsupported["checked"] is False and unsupported["reason"] == "unsupported_language"
    with pytest.raises(ValueError, match="uri is required"):
        api.syntax_check({})


def test_syntax_check_leaves_text_and_files_over_the_size_cap_unchecked(tmp_path: Path) -> None:
    big = write(tmp_path, "big.py", "def f(:\n" + "x = 1\n" * 50)
    too_large = {
        "ok": True,
        "checked": False,
        "language": "python",
        "errors": [],
        "reason": "too_large",
        "size": big.stat().st_size,
        "limit": 100,
    }
    assert api.syntax_check({"uri": big.as_uri()}, max_file_size=100) == too_large
    assert api.syntax_check({"uri": big.as_uri(), "text": big.read_text()}, max_file_size=100) == too_large
    assert api.syntax_check({"uri": big.as_uri()}, document_text=big.read_text(), max_file_size=100) == too_large
    assert api.syntax_check({"uri": big.as_uri()}, max_file_size=1000)["ok"] is False


def test_syntax_check_reads_no_file_outside_the_readable_roots(tmp_path: Path) -> None:
    workspace = (tmp_path / "ws").resolve()
    inside = write(workspace, "pkg/ok.py", "def f():\n    return 1\n")
    secret = write(tmp_path, "secret/keys.py", "token = (\n")  # outside; its syntax error would quote it
    (workspace / "pkg" / "link.py").symlink_to(secret)
    (workspace / "outside_dir").symlink_to(secret.parent, target_is_directory=True)
    index = WorkspaceIndex(workspace, use_cache=False)
    roots = [workspace]
    assert api.syntax_check({"uri": inside.as_uri()}, index=index, readable_roots=roots)["ok"] is True
    assert api.syntax_check({"uri": "pkg/ok.py"}, index=index, readable_roots=roots)["checked"] is True
    for uri in (
        secret.as_uri(),
        str(secret),
        "../secret/keys.py",
        "pkg/link.py",
        (workspace / "pkg" / "link.py").as_uri(),
        (workspace / "outside_dir" / "keys.py").as_uri(),
    ):
        with pytest.raises(ValueError, match="outside the workspace folders") as refused:
            api.syntax_check({"uri": uri}, index=index, readable_roots=roots)
        assert uri in str(refused.value) and "token" not in str(refused.value)
    # Text the client sent itself may come from anywhere; the other commands refuse such paths too.
    sent = api.syntax_check({"uri": secret.as_uri(), "text": "x = 1\n"}, index=index, readable_roots=roots)
    assert sent["ok"] is True and sent["checked"] is True
    with pytest.raises(ValueError, match="not inside the workspace root"):
        api.callers(index, {"uri": (workspace / "pkg" / "link.py").as_uri(), "position": {"line": 0, "character": 0}})
    assert index.relative_path(workspace / "outside_dir" / "keys.py") is None


def test_callers_command_by_position_and_by_symbol(pyapp_index: WorkspaceIndex) -> None:
    storage = (pyapp_index.root / "pyapp" / "storage.py").as_uri()
    by_position = api.callers(pyapp_index, {"uri": storage, "position": {"line": 6, "character": 5}})
    by_symbol = api.callers(pyapp_index, {"symbol": "storage.save_user"})
    assert by_position == by_symbol
    assert by_position["symbol"] == "save_user"
    assert [c["caller"] for c in by_position["callers"]] == ["register", "test_round_trip"]
    assert by_position["callers"][0]["location"]["uri"].endswith("/pyapp/service.py")
    deeper = api.callers(pyapp_index, {"symbol": "storage.save_user", "depth": 2})
    assert max(c["depth"] for c in deeper["callers"]) == 2
    with pytest.raises(ValueError, match="position must be an object"):
        api.callers(pyapp_index, {"uri": storage})
    with pytest.raises(ValueError, match="depth must be between"):
        api.callers(pyapp_index, {"symbol": "x", "depth": 0})


def test_status_and_incomplete_results(tmp_path: Path) -> None:
    write(tmp_path, "a.py", "def a():\n    pass\n")
    write(tmp_path, "blob.py", b"\x00binary")
    index = WorkspaceIndex(tmp_path)
    assert api.repo_map(index, {})["complete"] is False  # never built: nothing was checked
    index.build()
    status = api.status(index)
    assert status["state"] == "ready" and status["files"] == 1 and status["languages"] == {"python": 1}
    assert status["symbols"] == 1 and status["skippedFiles"] == 1
    result = api.repo_map(index, {})
    assert result["complete"] is False
    assert result["skippedFiles"] == [{"path": "blob.py", "reason": "binary"}]


def test_standing_in_for_servers(pyapp_index: WorkspaceIndex) -> None:
    models = (pyapp_index.root / "pyapp" / "models.py").as_uri()
    outline = api.document_symbol(pyapp_index, {"textDocument": {"uri": models}})
    assert [symbol["name"] for symbol in outline][:2] == ["DEFAULT_ROLE", "User"]
    assert api.workspace_symbol(pyapp_index, {"query": "slug"})[0]["name"] == "slugify"
    cli = (pyapp_index.root / "pyapp" / "cli.py").as_uri()
    [target] = api.definition(pyapp_index, {"textDocument": {"uri": cli}, "position": {"line": 7, "character": 6}})
    assert target["uri"].endswith("/pyapp/other.py")


def run_cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = index_cli_main(argv, out)
    return code, out.getvalue()


def test_cli_verbs(copy_repo: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_repo("pyapp")
    code, text = run_cli(["index", str(root)])
    assert code == 0 and "9 files" in text and "9 parsed" in text
    code, text = run_cli(["index", str(root)])
    assert "0 parsed" in text  # warm

    code, text = run_cli(["repomap", str(root), "--budget", "40"])
    assert code == 0 and text.startswith("pyapp/models.py:\n")
    code, text = run_cli(["repomap", str(root), "--budget", "40", "--json"])
    assert json.loads(text)["tokens"] <= 40

    code, text = run_cli(["relevant", str(root), "slugify the user names", "--top", "2"])
    assert code == 0 and "pyapp/util/text.py" in text.splitlines()[0]

    monkeypatch.chdir(root)
    code, text = run_cli(["callers", "pyapp/storage.py:7:5", "--depth", "2"])
    assert code == 0
    assert "pyapp/service.py:20:12  register" in text
    assert "    pyapp/service.py:14:16  Registry.register_one" in text
    code, text = run_cli(["callers", "--symbol", "make_user", "--json"])
    assert json.loads(text)["callers"][0]["caller"] == "register"
    monkeypatch.chdir(tmp_path)  # the root before --symbol, as for repomap: not the current directory
    code, text = run_cli(["callers", str(root), "--symbol", "make_user", "--json"])
    assert code == 0 and json.loads(text)["callers"][0]["caller"] == "register"
    assert run_cli(["callers", str(root), "--root", str(root), "--symbol", "make_user"])[0] == 2
    assert run_cli(["callers", "pyapp/storage.py:7:5", "--symbol", "make_user"])[0] == 2  # not both
    monkeypatch.chdir(root)

    bad = write(tmp_path, "bad.ts", "function f( {\n")
    code, text = run_cli(["syntax", str(bad)])
    assert code == 1 and text.startswith(f"{bad}:1:")
    code, text = run_cli(["syntax", str(root / "pyapp" / "models.py"), "--json"])
    assert code == 0 and json.loads(text)["ok"] is True

    assert run_cli(["callers", "no-position"])[0] == 2
    assert run_cli(["relevant", str(root), "a", "b"])[0] == 2
    assert run_cli(["bogus"])[0] == 2


def test_syntax_of_a_directory_says_it_checks_one_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`lsp-hub syntax app` said "app: no such file" of a directory that exists."""
    assert run_cli(["syntax", str(tmp_path)])[0] == 2
    assert capsys.readouterr().err == f"lsp-hub syntax: {tmp_path} is a directory; give one file\n"
    assert run_cli(["syntax", str(tmp_path / "gone.py")])[0] == 2
    assert capsys.readouterr().err == f"lsp-hub syntax: {tmp_path / 'gone.py'}: no such file\n"


def test_dependents_are_the_importers_and_users_of_a_file_ranked(pyapp_index: WorkspaceIndex) -> None:
    result = api.dependents(pyapp_index, {"files": [(pyapp_index.root / "pyapp" / "models.py").as_uri()]})
    paths = [entry["path"] for entry in result["files"]]
    assert paths == ["pyapp/storage.py", "pyapp/service.py", "tests/test_storage.py"]
    reasons = {entry["path"]: entry["reasons"] for entry in result["files"]}
    assert reasons["pyapp/storage.py"][0] == "imports pyapp/models.py"
    assert "UserCache" in reasons["pyapp/storage.py"][1] and "make_user" in reasons["pyapp/service.py"][1]
    assert result["complete"] is True and result["total"] == 3
    capped = api.dependents(pyapp_index, {"files": ["pyapp/models.py"], "limit": 1})
    assert [entry["path"] for entry in capped["files"]] == ["pyapp/storage.py"]
    assert capped["complete"] is False and capped["capped"] == 2
    both = api.dependents(pyapp_index, {"files": ["pyapp/models.py", "pyapp/storage.py"]})
    assert "pyapp/storage.py" not in [entry["path"] for entry in both["files"]]  # a written file is no dependent
    with pytest.raises(ValueError, match="dependents needs files"):
        api.dependents(pyapp_index, {"files": []})


def test_dependents_using_a_name_the_write_changes_come_first(pyapp_index: WorkspaceIndex) -> None:
    """A write to a file that many others depend on (click's utils.py: 55) checks the 20 that use it the most,
    whichever names they use; a user of the one name the write changed could be left out. The names on the lines
    a write changes (`names`) put their users first, whatever else they use."""
    plain = api.dependents(pyapp_index, {"files": ["pyapp/models.py"], "limit": 1})
    assert [entry["path"] for entry in plain["files"]] == ["pyapp/storage.py"]
    changed = api.dependents(pyapp_index, {"files": ["pyapp/models.py"], "limit": 1, "names": ["make_user", "def"]})
    [first] = changed["files"]
    assert first["path"] == "pyapp/service.py"
    assert first["reasons"][0] == "uses make_user, which the write changes"


def test_go_importers_of_a_package_using_none_of_the_written_file_come_last(tmp_path: Path) -> None:
    """A Go import takes in every file of the package: a write to one file is checked first in the files that use
    its names, then in those that only import its package (they break only when the package stops building)."""
    write(tmp_path, "go.mod", "module example.com/m\n\ngo 1.22\n")
    write(tmp_path, "lib/args.go", "package lib\n\nfunc ExactArgs(n int) int { return n }\n")
    write(tmp_path, "lib/command.go", "package lib\n\ntype Command struct{}\n")
    for name in ("a", "b", "c"):  # importers of the package that use Command alone, listed first before
        write(tmp_path, f"{name}/{name}.go", f'package {name}\n\nimport "example.com/m/lib"\n\nvar C lib.Command\n')
    write(tmp_path, "z/z.go", 'package z\n\nimport "example.com/m/lib"\n\nvar N = lib.ExactArgs(1)\n')
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    result = api.dependents(index, {"files": ["lib/args.go"], "limit": 2})
    assert [entry["path"] for entry in result["files"]] == ["z/z.go", "a/a.go"]
    assert result["files"][0]["reasons"] == ["imports the package of lib/args.go", "uses ExactArgs"]
    assert result["files"][1]["reasons"] == ["imports the package of lib/args.go"]
    assert result["total"] == 4 and result["capped"] == 2


def test_a_file_tied_to_a_written_file_only_by_member_names_says_so_and_comes_last(tmp_path: Path) -> None:
    """`counts.get("x")` on a dict links to every file with a member `get` when the index cannot tell the object's
    type (requests' hooks.py "used" cookies.py's cookie jar so): such a file's names are shown as members and it
    comes after every file that imports or uses the written file's own names, in `dependents` and in `impact`."""
    write(tmp_path, "jar.py", "class Jar:\n    def get(self, key):\n        return key\n\n\n"
          "def make_jar():\n    return Jar()\n")
    write(tmp_path, "user.py", "from jar import make_jar\n\n\ndef first():\n    return make_jar().get('a')\n")
    write(tmp_path, "counts.py", "def read(counts):\n    return counts.get('a'), counts.get('b'), counts.get('c')\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    result = api.dependents(index, {"files": ["jar.py"]})
    reasons = {entry["path"]: entry["reasons"] for entry in result["files"]}
    assert [entry["path"] for entry in result["files"]] == ["user.py", "counts.py"]
    assert reasons["user.py"] == ["imports jar.py", "uses make_jar, .get"]
    assert reasons["counts.py"] == ["uses .get (member names only: maybe another type's)"]
    assert [entry["path"] for entry in api.impact(index, "jar.py").to_json()["files"]] == ["user.py", "counts.py"]
    # A member name the write changes is no coincidence to pass over: its users come first.
    changed = api.dependents(index, {"files": ["jar.py"], "names": ["get"]})
    assert changed["files"][0]["reasons"][0] == "uses get, which the write changes"


def test_repomap_verb_stores_the_graphs_it_built_beside_the_map(copy_repo: Callable[[str], Path]) -> None:
    from lsp_hub.index.graph_store import RANKING_KEY, STATE_KEY

    root = copy_repo("pyapp")
    code, cold = run_cli(["repomap", str(root), "--budget", "200"])
    assert code == 0
    index = WorkspaceIndex(root)
    index.build()
    try:
        assert index.store is not None
        fingerprint = index.snapshot().fingerprint()
        assert index.store.load_graph(STATE_KEY, fingerprint) is not None  # saved in the thread, joined at exit
        assert index.store.load_graph(RANKING_KEY, fingerprint) is not None
        saving = background.keep_graphs_beside(index)
        assert saving is None  # a later process answers from the stored ranking: nothing built, nothing to save
    finally:
        index.close()
    assert run_cli(["repomap", str(root), "--budget", "200"]) == (0, cold)


def test_graphs_kept_beside_a_map_are_serialized_before_the_thread_starts(
    copy_repo: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thread beside the map only writes: serializing holds Python's lock, and in the thread it held it from
    the map for as long."""
    import threading

    from lsp_hub.index import graph_store
    from lsp_hub.index.graph_store import STATE_KEY

    serialized_on: list[str] = []
    shared_state = graph_store._shared_state

    def recording(snapshot: object) -> object:
        serialized_on.append(threading.current_thread().name)
        return shared_state(snapshot)  # type: ignore[arg-type]

    monkeypatch.setattr(graph_store, "_shared_state", recording)
    index = WorkspaceIndex(copy_repo("pyapp"))
    index.build()
    try:
        saving = background.keep_graphs_beside(index)
        assert saving is not None
        saving.join()
        assert serialized_on == [threading.current_thread().name]
        assert index.store is not None
        assert index.store.load_graph(STATE_KEY, index.snapshot().fingerprint()) is not None
        assert background.keep_graphs_beside(index) is None  # stored already: nothing to write again
    finally:
        index.close()


def test_a_verb_given_no_root_refuses_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    project = write(home, "proj/pkg/app.py", "def helper():\n    return 1\n\n\ndef main():\n    return helper()\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    for argv in (["repomap"], ["index"], ["relevant", "the helper"], ["callers", "--symbol", "helper"]):
        code, _text = run_cli(argv)
        assert code == 2, argv
        assert f"the current directory, {home.resolve()}, is your home directory" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)  # above it: no project either, as for the hub's roots
    assert run_cli(["repomap"])[0] == 2
    assert f"the current directory, {tmp_path.resolve()}, is above your home directory" in capsys.readouterr().err
    monkeypatch.chdir(home)
    assert not list(Path(os.environ.get("XDG_CACHE_HOME", home / ".cache")).rglob("index-*.sqlite3"))  # none made
    code, text = run_cli(["repomap", str(home)])  # given on purpose, it is indexed
    assert code == 0 and "proj/pkg/app.py" in text
    code, text = run_cli(["callers", f"{project}:1:5"])  # a file's callers from home: rooted at its directory
    assert code == 0 and "app.py:6:12  main" in text
