"""The per-user daemon (`lsp-hub daemon`) and its stdio bridge (`lsp-hub --connect`).

Every test gets a runtime directory of its own (XDG_RUNTIME_DIR, short enough for a unix socket path) and stops
whatever daemon it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.transport.daemon_client import DaemonError, check_private_directory, runtime_directory
from tests.hub_fixtures import FAKE_LANGUAGES, pids_alive
from tests.hubclient import REPO_ROOT, HubClient, fake_server_config
from tests.test_hub_security import OTHER_UID, _system_python

ECHO_HOVER = {"fakeA": {"responses": {"textDocument/hover": {"echo": True}}}, "fakeB": {}}
HEAVY_MODULES = ("pygls", "lsprotocol", "networkx", "tree_sitter", "asyncio", "cattrs")


@dataclass
class Daemon:
    """What a test needs to run `lsp-hub daemon ...` and `lsp-hub --connect` against its own runtime directory."""

    tmp_path: Path
    runtime: Path
    env: dict[str, str]
    config: Path

    @property
    def directory(self) -> Path:
        return self.runtime / "lsp-hub"

    @property
    def socket(self) -> Path:
        return self.directory / "daemon.sock"

    def cli(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "lsp_hub", "daemon", *args], env=env or self.env,
                              capture_output=True, text=True, timeout=60)

    def start(self, *args: str) -> dict[str, Any]:
        done = self.cli("start", "--config", str(self.config), "--json", *args)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def status(self) -> dict[str, Any] | None:
        done = self.cli("status", "--json")
        assert done.returncode in (0, 1), done.stderr
        return json.loads(done.stdout) if done.returncode == 0 else None

    def bridge_command(self, *python_flags: str) -> list[str]:
        return [sys.executable, *python_flags, "-m", "lsp_hub", "--connect", "--config", str(self.config)]

    def pid(self, directory: Path | None = None) -> int | None:
        try:
            return int(((directory or self.directory) / "daemon.pid").read_text().strip())
        except (OSError, ValueError):
            return None


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    # pytest's tmp_path is too long for a socket path (108 bytes): a short directory of our own under /tmp.
    runtime = Path(tempfile.mkdtemp(prefix="lhd-", dir="/tmp"))
    config = tmp_path / "hub.toml"
    config.write_text(fake_server_config(ECHO_HOVER, FAKE_LANGUAGES))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "XDG_RUNTIME_DIR": str(runtime),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    under_test = Daemon(tmp_path, runtime, env, config)
    try:
        yield under_test
    finally:
        for directory in (under_test.directory, runtime / f"lsp-hub-{os.getuid()}"):
            pid = under_test.pid(directory)
            if pid is not None and pids_alive([pid]):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)  # its servers die with it (PR_SET_PDEATHSIG)
        shutil.rmtree(runtime, ignore_errors=True)


def _wait_gone(pids: list[int], seconds: float = 15.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while pids_alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids_alive(pids)


async def _bridge(daemon: Daemon, *python_flags: str) -> HubClient:
    client = HubClient()
    await client.start(command=daemon.bridge_command(*python_flags), env=daemon.env, cwd=str(daemon.tmp_path))
    return client


async def _open_and_hover(client: HubClient, workspace: Path, *, initialized: bool = False) -> dict[str, Any]:
    workspace.mkdir(parents=True, exist_ok=True)
    if not initialized:
        await client.initialize(workspace)
    path = workspace / "a.alpha"
    path.write_text("x\n")
    uri = client.open(path, "alpha")
    return await client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                       "position": {"line": 0, "character": 0}})


# ==================================================================================================== lifecycle
def test_start_status_stop(daemon: Daemon) -> None:
    assert daemon.status() is None
    started = daemon.start()
    assert started["started"] is True
    assert stat.S_IMODE(os.lstat(daemon.directory).st_mode) == 0o700
    assert stat.S_ISSOCK(os.lstat(daemon.socket).st_mode)
    assert stat.S_IMODE(os.lstat(daemon.socket).st_mode) == 0o600
    status = daemon.status()
    assert status is not None
    assert status["pid"] == started["pid"] == daemon.pid()
    assert status["socket"] == str(daemon.socket)
    assert (status["clients"], status["workspaces"], status["idleExitSeconds"]) == (0, [], 1800.0)
    assert (status["config"], status["log"]) == (str(daemon.config), str(daemon.directory / "daemon.log"))
    again = daemon.start()
    assert (again["started"], again["pid"]) == (False, started["pid"])
    stopped = daemon.cli("stop")
    assert stopped.returncode == 0, stopped.stderr
    assert f"pid {started['pid']}" in stopped.stdout
    assert pids_alive([started["pid"]]) == []
    assert not daemon.socket.exists()
    assert daemon.cli("stop").returncode == 1
    assert daemon.cli("status").returncode == 1
    assert daemon.cli("bogus").returncode == 2


async def test_connect_starts_the_daemon_and_bridges_a_whole_session(daemon: Daemon) -> None:
    """An editor's session through `lsp-hub --connect`: the daemon is started for it, and the bridge imports no
    heavy module (pygls, lsprotocol, asyncio ...)."""
    client = await _bridge(daemon, "-X", "importtime")
    hover = await _open_and_hover(client, daemon.tmp_path / "ws")
    assert hover["server"] == "fakeA" and hover["method"] == "textDocument/hover"
    status = await client.status()
    assert status["hub"]["pid"] == daemon.pid() != client.process.pid
    assert await client.stop() == 0
    stderr = client.stderr.decode(errors="replace")
    assert "started the lsp-hub daemon" in stderr
    imported = {line.split("|")[-1].strip().split(".")[0] for line in stderr.splitlines() if "import time:" in line}
    assert "lsp_hub" in imported and not imported & set(HEAVY_MODULES), imported & set(HEAVY_MODULES)
    # The daemon outlives the session and serves the next bridge, which says nothing about starting it.
    await asyncio.sleep(0.2)
    daemon_status = await asyncio.to_thread(daemon.status)
    assert daemon_status is not None and daemon_status["clients"] == 0
    second = await _bridge(daemon)
    assert (await _open_and_hover(second, daemon.tmp_path / "ws"))["server"] == "fakeA"
    assert await second.stop() == 0
    assert "started" not in second.stderr.decode(errors="replace")
    assert "already running with --config" not in second.stderr.decode(errors="replace")
    other_config = daemon.tmp_path / "other.toml"
    other_config.write_text(daemon.config.read_text())
    third = HubClient()
    await third.start(command=[*daemon.bridge_command()[:-1], str(other_config)], env=daemon.env)
    assert (await _open_and_hover(third, daemon.tmp_path / "ws"))["server"] == "fakeA"
    assert await third.stop() == 0
    assert f"already running with --config {daemon.config}; --config {other_config} applies only" in \
        third.stderr.decode(errors="replace")


async def test_stop_ends_the_daemon_and_every_server_it_started(daemon: Daemon) -> None:
    client = await _bridge(daemon)
    workspace = daemon.tmp_path / "ws"
    await _open_and_hover(client, workspace)
    server_pids = [server["pid"] for server in (await client.status())["servers"]]
    assert server_pids and pids_alive(server_pids) == server_pids
    status = await asyncio.to_thread(daemon.status)
    assert status is not None and status["clients"] == 1
    assert [w["root"] for w in status["workspaces"]] == [str(workspace)]
    assert sorted(s["pid"] for s in status["workspaces"][0]["servers"]) == sorted(server_pids)
    daemon_pid = status["pid"]
    # Each server's own temporary directory (platform/server_temp.py), gone with it though the daemon leaves at once.
    server_temp = sorted(Path(tempfile.gettempdir()).glob(f"lsp-hub-server-{daemon_pid}-*"))
    assert len(server_temp) == (len(server_pids) if sys.platform != "darwin" else 0)
    stopped = await asyncio.to_thread(daemon.cli, "stop", "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout) == {"stopped": True, "pid": daemon_pid}
    assert await asyncio.to_thread(_wait_gone, [daemon_pid, *server_pids]) == []
    assert [path for path in server_temp if path.exists()] == []
    await asyncio.wait_for(client.process.wait(), 10)  # the bridge ends with its connection


async def test_an_editor_that_goes_away_ends_its_session_not_the_daemon(daemon: Daemon) -> None:
    """The editor closes the bridge's stdin without `exit`: the daemon ends that session; its servers, kept warm for
    the next client of the root, stop through their idle timer, and then the workspace is gone. The bridge ends
    once the daemon has closed its end."""
    daemon.config.write_text(fake_server_config(ECHO_HOVER, FAKE_LANGUAGES, hub={"idle_shutdown_seconds": 0.5}))
    client = await _bridge(daemon)
    await _open_and_hover(client, daemon.tmp_path / "ws")
    server_pids = [server["pid"] for server in (await client.status())["servers"]]
    stdin = client.process.stdin
    assert stdin is not None
    stdin.close()
    await asyncio.wait_for(client.process.wait(), 10)
    assert await asyncio.to_thread(_wait_gone, server_pids, 10.0) == []
    status = await asyncio.to_thread(daemon.status)
    assert status is not None and (status["clients"], status["workspaces"]) == (0, [])


def test_a_stale_socket_is_replaced(daemon: Daemon) -> None:
    first = daemon.start()["pid"]
    os.kill(first, signal.SIGKILL)
    assert _wait_gone([first]) == []
    assert daemon.socket.exists()  # left behind by the killed daemon
    assert daemon.cli("status").returncode == 1
    second = daemon.start()
    assert second["started"] is True and second["pid"] != first
    assert daemon.status() is not None


def test_racing_starters_start_one_daemon(daemon: Daemon) -> None:
    starters = [subprocess.Popen([sys.executable, "-m", "lsp_hub", "daemon", "start", "--json", "--config",
                                  str(daemon.config)], env=daemon.env, stdout=subprocess.PIPE, text=True)
                for _ in range(4)]
    answers = [json.loads(starter.communicate(timeout=60)[0]) for starter in starters]
    assert all(starter.returncode == 0 for starter in starters)
    assert len({answer["pid"] for answer in answers}) == 1
    assert sum(answer["started"] for answer in answers) == 1


async def test_the_daemon_exits_when_idle(daemon: Daemon) -> None:
    # Seconds wide enough for a loaded machine, where `lsp-hub daemon status` alone may take a second to start.
    idle = 3.0
    daemon.config.write_text(fake_server_config(ECHO_HOVER, FAKE_LANGUAGES, hub={"daemon_idle_exit_seconds": idle}))
    client = await _bridge(daemon)
    await _open_and_hover(client, daemon.tmp_path / "ws")
    pid = daemon.pid()
    assert pid is not None
    await asyncio.sleep(idle + 0.3)
    assert pids_alive([pid]) == [pid]  # a client is connected
    await client.stop()
    left = time.monotonic()
    await asyncio.sleep(1.5)
    # A status query is no client: it does not restart the count (which would end it at least 4.5 s after `left`).
    assert await asyncio.to_thread(daemon.status) is not None
    assert time.monotonic() - left < idle, "the status query came too late to tell"
    assert await asyncio.to_thread(_wait_gone, [pid], 10.0) == []
    assert time.monotonic() - left < idle + 1.2
    assert not daemon.socket.exists()


# ==================================================================================================== project files
# A cloned repository chooses what sits at `.lsp-hub.toml` (issue #20): nothing there may stall the daemon.
def _initialize_params(root: Path) -> dict[str, Any]:
    return {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}]}


def _config_messages(client: HubClient) -> list[str]:
    return [params["message"] for method, params in client.notifications
            if method == "window/showMessage" and "configuration" in params["message"]]


async def test_a_fifo_project_file_stalls_no_other_client(daemon: Daemon) -> None:
    """Workspace A's `.lsp-hub.toml` is a FIFO that nobody writes. A's initialize used to block the daemon's event
    loop for good; now another client's initialize and request are answered within a second while A's session is
    connected, and A's session works without its project file."""
    first, second = daemon.tmp_path / "a", daemon.tmp_path / "b"
    first.mkdir()
    os.mkfifo(first / ".lsp-hub.toml")
    stuck = await _bridge(daemon)
    other = await _bridge(daemon)
    _, stuck_answer = stuck.send_request("initialize", _initialize_params(first))
    await asyncio.wait([stuck_answer], timeout=2.0)  # answered, or long enough for the daemon to be reading the FIFO
    started = time.monotonic()
    second.mkdir()
    await asyncio.wait_for(other.initialize(second), 1.0)
    status = await asyncio.wait_for(other.status(), 1.0)
    assert time.monotonic() - started < 1.0
    assert status["workspaceFolders"] == [str(second)]
    daemon_status = await asyncio.to_thread(daemon.status)
    assert daemon_status is not None and daemon_status["clients"] == 2
    assert "capabilities" in await asyncio.wait_for(stuck_answer, 5.0)
    stuck.notify("initialized", {})
    await stuck.wait_for(lambda: _config_messages(stuck), 5.0, "the configuration message")
    assert _config_messages(stuck) == [f"lsp-hub configuration problems: {first / '.lsp-hub.toml'}: is a FIFO, not "
                                       "a regular file; file ignored. Valid settings still apply."]
    assert (await _open_and_hover(stuck, first, initialized=True))["server"] == "fakeA"
    assert await stuck.stop() == 0 and await other.stop() == 0


def _link_to_dev_zero(project: Path) -> str:
    project.symlink_to("/dev/zero")
    return "is a symbolic link to /dev/zero, outside the workspace"


def _thirty_seven_megabytes(project: Path) -> str:
    with project.open("wb") as file:
        file.write(b"[server.fakeA]\ndisabled = true\n")
        file.truncate(37 * 1024 * 1024)  # the rest sparse: the daemon used to read it all
    return "is 37.0 MB, over the 1 MB limit"


def _nested_100_000_deep(project: Path) -> str:
    project.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    return "nests deeper than 100 levels"


@pytest.mark.parametrize("make_project_file", [_link_to_dev_zero, _thirty_seven_megabytes, _nested_100_000_deep])
async def test_a_project_file_the_daemon_refuses_is_named_and_the_session_works(
        daemon: Daemon, make_project_file: Any) -> None:
    workspace = daemon.tmp_path / "ws"
    workspace.mkdir()
    project = workspace / ".lsp-hub.toml"
    reason = make_project_file(project)
    client = await _bridge(daemon)
    hover = await asyncio.wait_for(_open_and_hover(client, workspace), 20.0)
    assert hover["server"] == "fakeA"  # working, and nothing of the file applied
    await client.wait_for(lambda: _config_messages(client), 5.0, "the configuration message")
    assert _config_messages(client) == [
        f"lsp-hub configuration problems: {project}: {reason}; file ignored. Valid settings still apply."]
    daemon_status = await asyncio.to_thread(daemon.status)
    assert daemon_status is not None and [w["root"] for w in daemon_status["workspaces"]] == [str(workspace)]
    assert await client.stop() == 0


# ==================================================================================================== security
OTHER_USER_CLIENT = textwrap.dedent("""
    import socket, sys
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(10)
    try:
        client.connect(sys.argv[1])
    except OSError as error:
        print(type(error).__name__)
        raise SystemExit(0)
    body = b'{"jsonrpc":"2.0","id":1,"method":"lspHub/daemonStatus"}'
    try:  # the daemon may have closed the connection before the request is even sent
        client.sendall(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
        print(client.recv(65536).decode(errors="replace") or "closed")
    except (BrokenPipeError, ConnectionResetError):
        print("closed")
""")


def test_a_client_of_another_user_is_refused(daemon: Daemon) -> None:
    if os.getuid() != 0:
        pytest.skip("running a client as another user needs root (to switch to uid 65534)")
    python = _system_python()
    if python is None:
        pytest.skip("no Python that uid 65534 may run (/usr/bin/python3)")
    log = daemon.tmp_path / "daemon.log"
    daemon.start("--log-file", str(log))

    def run_as(uid: int) -> str:
        return subprocess.run([python, "-c", OTHER_USER_CLIENT, str(daemon.socket)], user=uid, capture_output=True,
                              text=True, timeout=30, cwd="/").stdout.strip()

    # The modes keep another user out ...
    daemon.runtime.chmod(0o755)
    assert run_as(OTHER_UID) == "PermissionError"
    # ... and should they be loosened, the peer's credentials still do.
    daemon.directory.chmod(0o711)
    daemon.socket.chmod(0o666)
    assert run_as(OTHER_UID) == "closed"
    deadline = time.monotonic() + 10  # the refusal is logged as the connection closes: under load, a moment later
    while f"runs as uid {OTHER_UID}" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "refused a client of the daemon's socket: the client (pid" in log.read_text()
    assert f"runs as uid {OTHER_UID}, not as this hub's user" in log.read_text()
    assert '"pid"' in run_as(os.getuid())  # the same client as the daemon's user is answered


@pytest.mark.parametrize("unsafe", ["mode", "symlink", "owner"])
def test_an_unsafe_fallback_directory_is_refused(daemon: Daemon, unsafe: str) -> None:
    env = {key: value for key, value in daemon.env.items() if key != "XDG_RUNTIME_DIR"}
    env["TMPDIR"] = str(daemon.runtime)
    fallback = daemon.runtime / f"lsp-hub-{os.getuid()}"
    assert runtime_directory(env) == fallback
    if unsafe == "mode":
        fallback.mkdir(mode=0o755)
        fallback.chmod(0o755)
        expected = "its mode is 0755, not 0700"
    elif unsafe == "symlink":
        target = daemon.runtime / "elsewhere"
        target.mkdir(mode=0o700)
        fallback.symlink_to(target)
        expected = "it is a symbolic link"
    else:
        if os.getuid() != 0:
            pytest.skip("giving a directory to another user needs root")
        fallback.mkdir(mode=0o700)
        os.chown(fallback, OTHER_UID, OTHER_UID)
        expected = f"it belongs to uid {OTHER_UID}, not to you"
    for argv in (["daemon", "status"], ["daemon", "start"], ["--connect"]):
        done = subprocess.run([sys.executable, "-m", "lsp_hub", *argv], env=env, capture_output=True, text=True,
                              timeout=30, stdin=subprocess.DEVNULL)
        assert done.returncode == 3, (argv, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"refusing to use {fallback}" in done.stderr and expected in done.stderr, done.stderr
    assert not (fallback / "daemon.sock").exists()


def test_the_fallback_directory_is_created_private_and_serves(daemon: Daemon) -> None:
    env = {key: value for key, value in daemon.env.items() if key != "XDG_RUNTIME_DIR"}
    env["TMPDIR"] = str(daemon.runtime)
    assert daemon.cli("status", env=env).returncode == 1
    fallback = daemon.runtime / f"lsp-hub-{os.getuid()}"
    assert stat.S_IMODE(os.lstat(fallback).st_mode) == 0o700
    check_private_directory(fallback)
    started = daemon.cli("start", "--json", env=env)
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["socket"] == str(fallback / "daemon.sock")
    assert daemon.cli("stop", env=env).returncode == 0
    fallback.chmod(0o700 | 0o007)
    with pytest.raises(DaemonError, match="mode is 0707"):
        check_private_directory(fallback)


# ==================================================================================================== the log
def test_clients_that_leave_after_their_answer_leave_no_error_in_the_log(daemon: Daemon) -> None:
    """A query that closes its connection as soon as it has its answer, or one that leaves mid-request, is routine:
    the daemon's log keeps ERROR for what a user should look at (20 minutes of queries left 5 that were not)."""
    daemon.start("--log-file", str(daemon.tmp_path / "daemon.log"))
    workspace = daemon.tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".git").mkdir()
    (workspace / "a.alpha").write_text("x\n")
    env = {**daemon.env, "LSP_HUB_SOCKET": str(daemon.socket)}
    for _ in range(6):
        done = subprocess.run([sys.executable, "-m", "lsp_hub", "query", "hover", "a.alpha:1:1"], cwd=workspace,
                              env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode in (0, 1), done.stderr
    for _ in range(6):  # gone before the answer: the daemon writes into a closed socket
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(daemon.socket))
            for message in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                             "params": {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}},
                            {"jsonrpc": "2.0", "method": "initialized", "params": {}},
                            {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {
                                "textDocument": {"uri": (workspace / "a.alpha").as_uri()},
                                "position": {"line": 0, "character": 0}}}):
                body = json.dumps(message).encode()
                client.sendall(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset, not a FIN
    assert daemon.status() is not None  # still serving
    time.sleep(0.5)
    errors = [line for line in (daemon.tmp_path / "daemon.log").read_text().splitlines() if " ERROR " in line]
    assert errors == []
