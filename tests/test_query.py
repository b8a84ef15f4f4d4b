"""`lsp-hub query` against the real servers, on a private copy of examples/sample.

Most actions run in this process through `query_main` on one hub shared by the module (a child over pipes,
already initialized), so the servers start once; a few go through the real command line (a hub of their own per
call, about a second or two each) or a unix socket."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.agents.query import (
    HubConnection,
    QueryError,
    Workspace,
    apply_text_edits,
    changes_of,
    character_column,
    query_main,
    utf16_column,
    write_changes,
)
from tests.conftest import REPO_ROOT, copy_sample, find_required_binary, shared_hub

pytestmark = pytest.mark.real_server

SLOW = "90"  # --timeout for the first answers of cold servers on a loaded 2-core machine
HEAVY_MODULES = ("pygls", "lsprotocol", "networkx", "tree_sitter", "tree_sitter_language_pack", "attrs", "cattrs")

Ask = Callable[..., tuple[int, str, str]]
# b imports a: a change to a's signature breaks b (see test_another_files_diagnostics_right_after_a_change_...).
CROSS_FILE_PAIRS = {"app/dep_a.py": "def f() -> int:\n    return 1\n",
                    "app/dep_b.py": "from app.dep_a import f\n\nx: int = f()\n",
                    "web/src/dep_a.ts": "export function f(): number {\n  return 1;\n}\n",
                    "web/src/dep_b.ts": 'import { f } from "./dep_a";\nexport const x: number = f();\n'}


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of examples/sample, with files of its own for the writing actions and an ambiguous name."""
    target = copy_sample(tmp_path_factory.mktemp("query") / "sample")
    (target / "app" / "extra.py").write_text('def report() -> None:\n    """A second `report`."""\n')
    for name, text in CROSS_FILE_PAIRS.items():  # before the servers start: they know every file from then on
        (target / name).write_text(text)
    return target


@pytest.fixture(scope="module")
def hub(sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubConnection]:
    with shared_hub(sample, tmp_path_factory.mktemp("query-xdg")) as connection:
        yield connection


@pytest.fixture
def ask(hub: HubConnection) -> Ask:
    def run(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = query_main([*argv, "--timeout", SLOW], out=out, err=err, connection=hub)
        return code, out.getvalue(), err.getvalue()

    return run


def ask_json(ask: Ask, *argv: str, exit_code: int = 0) -> dict[str, Any]:
    code, out, err = ask(*argv, "--json")
    assert code == exit_code, (code, out, err)
    return json.loads(out)


def test_definition_of_a_typescript_import_lands_in_util(ask: Ask, sample: Path) -> None:
    main = sample / "web" / "src" / "main.ts"
    line = main.read_text().splitlines().index("  return prices.map((price) => formatPrice(price));") + 1
    answer = ask_json(ask, "definition", f"{main}:{line}:32")
    assert answer["complete"] is True
    [location] = answer["locations"]
    assert location["path"] == str(sample / "web" / "src" / "util.ts")
    assert (location["line"], location["column"]) == (6, 17)
    assert location["text"] == "export function formatPrice(price: Price): string {"


def test_references_hover_and_symbols(ask: Ask, sample: Path) -> None:
    service = sample / "app" / "service.py"
    references = ask_json(ask, "references", "--symbol", "total_value")["locations"]
    assert {(Path(r["path"]).name, r["line"]) for r in references} >= {
        ("models.py", 32), ("service.py", 3), ("service.py", 16), ("__init__.py", 3)}
    hover = ask_json(ask, "hover", f"{service}:16:66")
    assert "def total_value(inventory: Inventory) -> float" in hover["text"] and hover["complete"] is True
    symbols = ask_json(ask, "symbols", str(sample / "app" / "models.py"))["symbols"]
    assert {"name": "find", "kind": "method", "path": str(sample / "app" / "models.py"), "line": 28, "column": 9,
            "container": "Inventory"} in symbols
    assert any(s["name"] == "total_value" and s["kind"] == "function" for s in symbols)
    found = ask_json(ask, "symbols", "--query", "total_value")["symbols"]
    assert any(s["name"] == "total_value" and s["path"].endswith("models.py") for s in found)


def test_diagnostics_are_complete_from_both_servers(ask: Ask, sample: Path) -> None:
    answer = ask_json(ask, "diagnostics", str(sample / "app" / "broken.py"), exit_code=1)  # 1: issues found
    assert answer["complete"] is True and answer["pending"] == []
    assert answer["checkedBy"] == ["basedpyright", "ruff"] and answer["notChecked"] == []
    codes = {(d["source"], d["code"]) for d in answer["diagnostics"]}
    assert ("Ruff", "F401") in codes and ("basedpyright", "reportReturnType") in codes
    wrong = next(d for d in answer["diagnostics"] if d["code"] == "reportReturnType")
    assert (wrong["path"], wrong["line"], wrong["column"], wrong["severity"]) == (
        str(sample / "app" / "broken.py"), 14, 12, "error")
    # The text form: `[server] N issue(s):` blocks, errors first.
    code, text, _ = ask("diagnostics", str(sample / "app" / "broken.py"))
    assert code == 1
    lines = text.splitlines()
    assert lines[0] == "[basedpyright] 2 issue(s):", text
    assert lines[1].endswith("— Type \"int\" is not assignable to return type \"str\" \"int\" is not assignable to "
                             "\"str\" [reportReturnType]"), text
    assert "[Ruff] 1 issue(s):" in lines


def test_diagnostics_of_unsaved_text(ask: Ask, sample: Path, tmp_path: Path) -> None:
    draft = tmp_path / "draft.py"
    draft.write_text('"""Not saved yet."""\n\nimport json\n')
    answer = ask_json(ask, "diagnostics", str(sample / "app" / "fixme.py"), "--text-file", str(draft), exit_code=1)
    assert answer["complete"] is True
    assert {(d["source"], d["code"], d["line"], d["column"]) for d in answer["diagnostics"]} >= {
        ("Ruff", "F401", 3, 8)}, answer
    assert "import os" in (sample / "app" / "fixme.py").read_text()  # the file itself is untouched


def test_rename_previews_then_applies(ask: Ask, sample: Path) -> None:
    pricing, checkout = sample / "app" / "pricing.py", sample / "app" / "checkout.py"
    preview = ask_json(ask, "rename", f"{pricing}:1:5", "price_without_tax")
    assert preview["applied"] is False
    assert {f["path"] for f in preview["files"]} == {str(pricing), str(checkout)}
    assert "-from app.pricing import net_price\n+from app.pricing import price_without_tax\n" in preview["diff"]
    assert "net_price" in checkout.read_text()  # a preview writes nothing
    applied = ask_json(ask, "rename", "--symbol", "net_price", "price_without_tax", "--apply")
    assert applied["applied"] is True
    assert checkout.read_text() == ("from app.pricing import price_without_tax\n\n\ndef pay() -> float:\n"
                                    "    return price_without_tax(12.0)\n")
    assert pricing.read_text().startswith("def price_without_tax(gross: float)")
    assert not [p for p in pricing.parent.iterdir() if p.name.endswith(".lsp-hub")]  # no temporary left over


def test_format_applies_and_code_actions_list_and_apply(ask: Ask, sample: Path) -> None:
    messy = sample / "app" / "messy.py"
    formatted = ask_json(ask, "format", str(messy), "--apply")
    assert formatted["applied"] is True and "+x = 1\n" in formatted["diff"]
    assert messy.read_text() == "import sys\n\nx = 1\nprint(sys.argv, x)\n"
    assert ask("format", str(messy))[0] == 1  # nothing left to do: an empty answer

    fixme = sample / "app" / "fixme.py"
    listed = ask_json(ask, "code-actions", f"{fixme}:1:8")
    assert listed["applied"] is False
    titles = [action["title"] for action in listed["actions"]]
    number = next(n for n, title in enumerate(titles, 1) if "Remove unused import" in title)
    assert listed["actions"][number - 1]["server"] == "ruff" and listed["actions"][number - 1]["kind"] == "quickfix"
    applied = ask_json(ask, "code-actions", f"{fixme}:1:8", "--apply", str(number))
    assert applied["applied"] == number
    assert "import os" not in fixme.read_text()


def test_call_hierarchy_and_index_actions(ask: Ask, sample: Path) -> None:
    incoming = ask_json(ask, "incoming-calls", "--symbol", "total_value")["calls"]
    assert {"name": "report", "kind": "function", "path": str(sample / "app" / "service.py"), "line": 16,
            "column": 66} in incoming
    outgoing = ask_json(ask, "outgoing-calls", "--symbol", "service.report")["calls"]
    assert {call["name"] for call in outgoing} >= {"find", "total_value"}
    repomap = ask_json(ask, "repomap", "--budget", "300")
    assert "app/models.py" in repomap["text"] and repomap["files"]
    callers = ask_json(ask, "callers", "--symbol", "total_value")
    assert callers["callers"][0]["caller"] == "report"
    # basedpyright confirms the index's caller: both found it, so the text needs no origin.
    assert callers["callers"][0]["origin"] == "both" and callers["servers"][0]["name"] == "basedpyright"
    assert ask_json(ask, "syntax", str(sample / "app" / "models.py"))["ok"] is True


def test_callers_from_the_index_alone(ask: Ask, sample: Path) -> None:
    """`--index-only`: the index's callers at once, no server asked (vite's playgrounds started one TypeScript
    server each to confirm them)."""
    callers = ask_json(ask, "callers", "--symbol", "total_value", "--index-only")
    assert callers["callers"][0]["caller"] == "report" and callers["servers"] == []


def test_status_and_languages(ask: Ask, sample: Path) -> None:
    ask_json(ask, "hover", f"{sample / 'app' / 'service.py'}:16:66")  # basedpyright and ruff run by now
    status = ask_json(ask, "status")
    assert {s["name"] for s in status["servers"] if s["state"] == "running"} >= {"basedpyright", "ruff"}
    assert status["workspaceFolders"] == [str(sample)]
    languages = {entry["language"]: entry["servers"] for entry in ask_json(ask, "languages")["languages"]}
    python = {server["name"]: server for server in languages["python"]}
    assert python["basedpyright"]["state"] == "running" and python["basedpyright"]["binary"]
    assert python["ruff"]["binary"] and python["ruff"]["binary"].endswith("ruff")
    assert [server["name"] for server in languages["typescript"]] == ["typescript-language-server"]


def test_ambiguous_and_unknown_symbols(ask: Ask, sample: Path) -> None:
    code, out, err = ask("definition", "--symbol", "report")
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == "lsp-hub query: 'report' is ambiguous; 2 definitions:"
    assert sorted(line.split()[0] for line in lines[1:]) == [
        f"{sample}/app/extra.py:1:5", f"{sample}/app/service.py:13:5"]
    assert ask_json(ask, "definition", "--symbol", "service.report")["locations"][0]["line"] == 13
    code, out, err = ask("hover", "--symbol", "no_such_name")
    assert (code, out) == (2, "")
    assert err == f"lsp-hub query: unknown symbol 'no_such_name' (no definition in the index of {sample})\n"


def test_bad_input_gives_one_line(ask: Ask, sample: Path, tmp_path: Path) -> None:
    service = sample / "app" / "service.py"
    outside = tmp_path / "outside.py"
    outside.write_text("x = 1\n")
    for argv, message in [
        (("hover", f"{service}:99:1"), f"lsp-hub query: {service} has 20 lines; line 99 does not exist"),
        (("hover", f"{service}:16:500"), "column 500 does not exist"),
        (("hover", f"{service}:0:1"), "LINE and COL are 1-based"),
        (("hover", "app/nothing.py:1:1"), "app/nothing.py: no such file"),
        (("hover", f"{sample / 'pyproject.toml'}:1:1"), "no language server serves pyproject.toml"),
        (("hover", f"{outside}:1:1"), "is outside the workspace root"),
        (("rename", f"{service}:6:5"), "give TARGET NEW_NAME"),
        (("status", "--apply"), "lsp-hub query status: --apply is not an option of status"),
        # Another action's options were dropped without a word: `context --symbol X` answered the plain repo map.
        (("context", "--symbol", "report"), "--symbol is not an option of context (its own: --description, "
                                            "--target, --budget)"),
        (("repomap", "--depth", "2", "--glob", "*.py"), "--depth, --glob are not options of repomap"),
        (("nonsense",), "invalid choice: 'nonsense'"),
    ]:
        code, out, err = ask(*argv)
        assert code == 2 and out == "", (argv, code, out, err)
        assert err.count("\n") == 1 and message in err and "Traceback" not in err, (argv, err)


def test_text_output_is_one_line_per_location_grouped_and_capped(ask: Ask, sample: Path) -> None:
    util = sample / "web" / "src" / "util.ts"
    code, out, _ = ask("references", f"{util}:6:17")
    assert code == 0
    main = sample / "web" / "src" / "main.ts"
    assert out.splitlines() == [
        f'{main}:1:10  import {{ formatPrice, type Price }} from "./util";',
        f"{main}:9:32  return prices.map((price) => formatPrice(price));",
        f'{main}:13:13  console.log(formatPrice({{ amount: 12, currency: "USD" }}));',
        f"{util}:6:17  export function formatPrice(price: Price): string {{",
    ]
    code, out, _ = ask("references", f"{util}:6:17", "--limit", "2")
    assert out.splitlines()[2:] == ["... 2 more"]


def test_empty_answer_exits_1(ask: Ask, sample: Path) -> None:
    # A position on a blank line: no definition there.
    code, out, err = ask("definition", f"{sample / 'app' / 'service.py'}:2:1")
    assert (code, out) == (1, "")
    assert err == "lsp-hub query definition: basedpyright, ruff found nothing here\n"  # why it is empty
    code, out, _ = ask("definition", f"{sample / 'app' / 'service.py'}:2:1", "--json")
    assert code == 1 and json.loads(out) == {"locations": [], "complete": True, "empty_reason": "nothing",
                                             "empty_detail": "basedpyright, ruff found nothing here"}


def test_index_answers_see_a_file_written_on_disk_just_before(ask: Ask, sample: Path) -> None:
    """An agent writes a file with its own tool and asks at once: nothing told the hub, and its poll is 10 s away."""
    assert "audit_total" not in ask("callers", "--symbol", "total_value")[1]
    written = sample / "app" / "audit.py"
    written.write_text("from app.models import Inventory, total_value\n\n\n"
                       "def audit_total(inventory: Inventory) -> float:\n    return total_value(inventory)\n")
    try:
        callers = ask_json(ask, "callers", "--symbol", "total_value")["callers"]
        assert "audit_total" in {caller["caller"] for caller in callers}
    finally:
        written.unlink()
    callers = ask_json(ask, "callers", "--symbol", "total_value")["callers"]
    assert "audit_total" not in {caller["caller"] for caller in callers}


# --- through the real command line -------------------------------------------------------------------------------


def lsp_hub(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lsp_hub", "query", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})})


def test_hover_without_a_daemon_from_the_command_line(sample: Path, tmp_path: Path) -> None:
    find_required_binary("basedpyright-langserver")
    started = time.monotonic()
    done = lsp_hub("hover", "app/service.py:16:66", "--no-daemon", cwd=sample,
                   env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "def total_value(inventory: Inventory) -> float" in done.stdout
    print(f"lsp-hub query hover --no-daemon: {elapsed:.2f} s")
    # From a subdirectory, the root is still the project's (the nearest root marker above).
    missing = lsp_hub("hover", "nothing.py:1:1", "--no-daemon", cwd=sample / "app")
    assert missing.returncode == 2 and missing.stderr == "lsp-hub query: nothing.py: no such file\n"


def test_a_project_file_the_hub_ignores_is_named_on_stderr_once(tmp_path: Path) -> None:
    """A `.lsp-hub.toml` that is a FIFO: the hub ignores it and says so, and the query passes that on (it used to
    wait for the FIFO until its timeout)."""
    os.mkfifo(tmp_path / ".lsp-hub.toml")
    done = lsp_hub("status", "--json", "--no-daemon", "--timeout", "10", cwd=tmp_path,
                   env={"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["workspaceFolders"] == [str(tmp_path)]
    assert done.stderr == (f"lsp-hub configuration problems: {tmp_path / '.lsp-hub.toml'}: is a FIFO, not a regular "
                           "file; file ignored. Valid settings still apply.\n")


def test_status_says_whether_the_workspace_is_trusted(tmp_path: Path) -> None:
    """Servers start in a cloned repository too (the user's own and the built-in ones), which surprised an agent's
    operator: status says what the workspace's trust allows, and how to change it."""
    workspace = tmp_path / "clone"
    workspace.mkdir()
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = lsp_hub("status", "--no-daemon", "--timeout", "20", cwd=workspace, env=env)
    assert done.returncode == 0, done.stderr
    assert f"workspace {workspace}: not trusted (its .lsp-hub.toml may not choose programs;" in done.stdout
    trusted = subprocess.run([sys.executable, "-m", "lsp_hub", "trust", str(workspace)], capture_output=True,
                             text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **env}, timeout=30)
    assert trusted.returncode == 0, trusted.stderr
    done = lsp_hub("status", "--json", "--no-daemon", "--timeout", "20", cwd=workspace, env=env)
    assert json.loads(done.stdout)["trust"] == [{"root": str(workspace), "trusted": True}]


def test_a_hub_that_cannot_be_reached_exits_3(tmp_path: Path) -> None:
    done = lsp_hub("status", "--socket", str(tmp_path / "none.sock"), cwd=tmp_path)
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr.startswith(f"lsp-hub query: cannot connect to {tmp_path / 'none.sock'}: ")
    assert done.stderr.count("\n") == 1


def test_status_over_a_unix_socket(tmp_path: Path) -> None:
    """`--socket PATH` (and $LSP_HUB_SOCKET): LSP over a socket; here each connection gets a hub on its stdio."""
    path = str(tmp_path / "hub.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    hubs: list[subprocess.Popen[bytes]] = []

    def serve_one() -> None:
        connection, _ = listener.accept()
        hubs.append(subprocess.Popen([sys.executable, "-m", "lsp_hub"], stdin=connection, stdout=connection,
                                     stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}))
        connection.close()

    thread = threading.Thread(target=serve_one)
    thread.start()
    try:
        done = lsp_hub("status", "--json", cwd=tmp_path, env={"LSP_HUB_SOCKET": path})
        assert done.returncode == 0, done.stderr
        status = json.loads(done.stdout)
        assert status["workspaceFolders"] == [str(tmp_path)] and status["hub"]["pid"] == hubs[0].pid
    finally:
        thread.join(10)
        listener.close()
        for process in hubs:
            process.wait(10)


def test_the_query_client_imports_nothing_heavy(tmp_path: Path) -> None:
    program = (
        "import sys\n"
        "from lsp_hub.cli import main\n"
        f"code = main(['query', 'status', '--socket', {str(tmp_path / 'none.sock')!r}])\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY_MODULES!r}), code)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert done.stdout == "[] 3\n", (done.stdout, done.stderr)


# --- without a hub -------------------------------------------------------------------------------------------------


def test_columns_are_characters_outside_and_utf16_inside() -> None:
    line = 'label = "🎉 party"; total = 1'
    assert utf16_column(line, line.index("total")) == line.index("total") + 1  # the emoji is two UTF-16 units
    assert character_column(line, utf16_column(line, line.index("total"))) == line.index("total")
    edit = {"range": {"start": {"line": 0, "character": 20}, "end": {"line": 0, "character": 25}},
            "newText": "grand"}
    assert apply_text_edits(line + "\n", [edit]) == 'label = "🎉 party"; grand = 1\n'


def test_a_write_is_refused_when_the_file_changed_on_disk(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("x = 1\n")
    workspace = Workspace(tmp_path, 1.0, HubConnection(-1, -1))
    [change] = changes_of(workspace, {str(target): [
        {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "newText": "y"}]})
    target.write_text("x = 2\n")  # someone else wrote it meanwhile
    with pytest.raises(QueryError, match="changed on disk since the servers read it"):
        write_changes(workspace, [change])
    assert target.read_text() == "x = 2\n"
    with pytest.raises(QueryError, match="outside the workspace root"):
        changes_of(workspace, {"/etc/hostname": []})


def test_without_a_daemon_query_starts_one_and_says_so(tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = {"XDG_RUNTIME_DIR": str(runtime), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    try:
        first = lsp_hub("status", "--json", cwd=workspace, env=env)
        assert first.returncode == 0, first.stderr
        assert "started the lsp-hub daemon" in first.stderr
        daemon_pid = json.loads(first.stdout)["hub"]["pid"]
        second = lsp_hub("status", "--json", cwd=workspace, env=env)
        assert second.returncode == 0 and second.stderr == ""  # the running daemon answers
        assert json.loads(second.stdout)["hub"]["pid"] == daemon_pid
    finally:
        stopped = subprocess.run([sys.executable, "-m", "lsp_hub", "daemon", "stop"], capture_output=True, text=True,
                                 timeout=60, env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **env})
        assert stopped.returncode == 0, stopped.stderr


def test_clangd_answers_a_c_file(ask: Ask, sample: Path) -> None:
    find_required_binary("clangd")
    main = sample / "native" / "main.c"
    line_number, line = next((n, text) for n, text in enumerate(main.read_text().splitlines(), 1) if "gcd(" in text)
    column = line.index("gcd(") + 1
    hover = ask_json(ask, "hover", f"{main}:{line_number}:{column}")
    assert "gcd" in hover["text"] and "int a" in hover["text"], hover
    [location] = ask_json(ask, "definition", f"{main}:{line_number}:{column}")["locations"]
    assert Path(location["path"]).name in ("math.c", "math.h") and "gcd" in location["text"]


def test_an_edit_for_another_clients_command_is_refused_not_claimed() -> None:
    """A long-lived session (an MCP server's) may be the one the hub hands a server's applyEdit for an editor's
    command: it must say it did not apply it."""
    hub_end, client_end = socket.socketpair()
    connection = HubConnection.over_socket(client_end, description="the test's hub", owned=False)
    edit = {"changes": {"file:///x.py": []}}

    def answer_to(request_id: int) -> dict[str, Any]:
        connection._on_hub_message({"jsonrpc": "2.0", "id": request_id, "method": "workspace/applyEdit",
                                    "params": {"edit": edit}})
        _, _, body = hub_end.recv(65536).partition(b"\r\n\r\n")
        return json.loads(body)["result"]

    with hub_end, client_end:
        assert answer_to(1)["applied"] is False and connection.applied_edits == []
        connection.accepting_edits = True  # inside its own executeCommand
        assert answer_to(2) == {"applied": True} and connection.applied_edits == [edit]


def test_typescript_diagnostics_are_its_verdict_on_each_text(ask: Ask, sample: Path, tmp_path: Path) -> None:
    """typescript-language-server publishes in parts and only what changed: each answer must still be complete and
    about that text (a clean file edited to another clean text gets no publish at all)."""
    target = sample / "web" / "src" / "verdict.ts"
    broken = ('import { formatPrice } from "./util";\n'
              'export const x: number = formatPrice({ amount: 1, currency: "EUR" });\n')
    target.write_text(broken)

    def diagnostics_of(text: str) -> dict[str, Any]:
        draft = tmp_path / "draft.ts"
        draft.write_text(text)
        code, out, err = ask("diagnostics", str(target), "--text-file", str(draft), "--json")
        assert code in (0, 1), err
        return json.loads(out)

    first = diagnostics_of(broken)
    assert first["complete"] and [d["code"] for d in first["diagnostics"]] == ["2322"]
    for text in (broken.replace("x: number", "x: string"), broken.replace("x: number", "x: string") + "// more\n"):
        started = time.monotonic()
        answer = diagnostics_of(text)
        assert answer["complete"] and answer["diagnostics"] == [], answer
        assert time.monotonic() - started < 15  # its verdict, not the timeout


@pytest.mark.parametrize(("a_name", "a_changed", "b_name", "code"), [
    ("app/dep_a.py", "def f() -> str:\n    return ''\n", "app/dep_b.py", "reportAssignmentType"),
    ("web/src/dep_a.ts", "export function f(): string {\n  return '';\n}\n", "web/src/dep_b.ts", "2322"),
])
def test_another_files_diagnostics_right_after_a_change_are_about_the_new_state(
        ask: Ask, sample: Path, tmp_path: Path, a_name: str, a_changed: str, b_name: str, code: str) -> None:
    """Issue #21: b's diagnostics asked right after a change to a (which b imports) said "no issues", complete; and
    after the change was undone still listed the errors. b is asked at once each time: its servers' earlier
    verdict must not count."""
    a, b = sample / a_name, sample / b_name
    assert ask_json(ask, "diagnostics", str(a), str(b))["diagnostics"] == []
    draft = tmp_path / Path(a_name).name
    draft.write_text(a_changed)
    ask("diagnostics", str(a), "--text-file", str(draft), "--json")  # the servers see a's new text
    broken = ask_json(ask, "diagnostics", str(b), exit_code=1)
    assert broken["complete"] and [d["code"] for d in broken["diagnostics"]] == [code], broken
    ask("diagnostics", str(a), "--json")  # back to a's text on disk
    fixed = ask_json(ask, "diagnostics", str(b))
    assert fixed["complete"] and fixed["diagnostics"] == [], fixed
