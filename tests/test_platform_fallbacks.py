"""The fallbacks of #26 where no test ran them as the other systems would: macOS's getpeereid deciding who may use
the daemon (SO_PEERCRED taken away, a getpeereid stand-in given), and the token daemon, without /proc, refusing
another user who holds the token (its owner found through psutil). The other fallbacks are tested beside their
facility: prctl taken away (tests/test_platform_children.py: the warden ends the servers of a killed hub),
os.pidfd_open taken away (the same file: an index worker polls its owner), /proc taken away for a loopback peer
and no peer credentials at all (tests/test_platform_room.py)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_hub.platform import peers
from lsp_hub.platform.users import current_user
from lsp_hub.transport.transport_security import unix_peer_refusal
from tests import getpeereid_standin
from tests.conftest import REPO_ROOT
from tests.test_daemon import OTHER_USER_CLIENT
from tests.test_hub_security import OTHER_UID, _system_python

TOKEN_CLIENT = textwrap.dedent("""
    import socket, sys
    port, first_line = int(sys.argv[1]), sys.argv[2].encode() + b"\\r\\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(first_line)
        answer = b""
        while not answer.endswith(b"\\n") and (chunk := connection.recv(4096)):
            answer += chunk
    print(answer.decode(errors="replace").strip() or "closed")
""")


def _needs_root_and_another_user() -> str:
    if os.getuid() != 0:
        pytest.skip("running a client as another user needs root (to switch to uid 65534)")
    python = _system_python()
    if python is None:
        pytest.skip("no Python that uid 65534 may run (/usr/bin/python3)")
    return python


@pytest.fixture
def runtime() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="lhf-", dir="/tmp"))  # short: a socket path holds 107 bytes
    directory.chmod(0o755)  # another user may pass through to the daemon's directory once its modes are loosened
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _run_daemon(runtime: Path, setup: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`lsp-hub daemon run` after `setup` (Python run first, in the daemon's process), logging to daemon.log."""
    launch = (
        f"import sys\n{setup}\nfrom lsp_hub.cli import main\n"
        "raise SystemExit(main(['daemon', 'run', '--log-file', sys.argv[1]]))\n"
    )
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "XDG_RUNTIME_DIR": str(runtime),
        "XDG_CONFIG_HOME": str(runtime / "cfg"),
        "XDG_CACHE_HOME": str(runtime / "cache"),
        **(env or {}),
    }
    return subprocess.Popen(
        [sys.executable, "-c", launch, str(runtime / "daemon.log")], env=environment, stderr=subprocess.DEVNULL
    )


def _wait_for(path: Path, daemon: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while not path.exists() and daemon.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), f"the daemon did not listen: {(path.parent.parent / 'daemon.log').read_text()}"


def _log_says(runtime: Path, text: str) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if text in (runtime / "daemon.log").read_text():
            return True
        time.sleep(0.05)
    return False


def _stop(daemon: subprocess.Popen[bytes]) -> None:
    daemon.terminate()
    daemon.wait(timeout=30)


# ==================================================================================================== getpeereid
def test_the_getpeereid_path_names_the_peers_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    peercred = socket.SO_PEERCRED
    monkeypatch.delattr(socket, "SO_PEERCRED")
    monkeypatch.setattr(peers, "_libc_function", getpeereid_standin.standin(peercred))
    monkeypatch.setattr(getpeereid_standin, "calls", [])
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with listener, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        listener.bind(str(tmp_path / "s.sock"))
        listener.listen()
        client.connect(str(tmp_path / "s.sock"))
        served, _ = listener.accept()
        with served:
            assert peers.unix_peer_credentials(served) == peers.PeerCredentials(current_user(), None)
            assert unix_peer_refusal(served) is None
            assert getpeereid_standin.calls == [served.fileno()] * 2
        # A failing getpeereid is a reason, not a traceback (the peer's descriptor is gone).
        assert peers.unix_peer_credentials(served) == "getpeereid failed (errno 9)"


def _client_as(uid: int, other_python: str, script: str, *arguments: str) -> str:
    """What a client script prints, run as `uid` (another user runs the Python it can read)."""
    python = other_python if uid != os.getuid() else sys.executable
    done = subprocess.run([python, "-c", script, *arguments], user=uid, capture_output=True, text=True, timeout=30,
                          cwd="/")
    return done.stdout.strip()


def test_a_daemon_on_getpeereid_serves_its_user_and_refuses_another(runtime: Path) -> None:
    python = _needs_root_and_another_user()
    daemon = _run_daemon(runtime, "from tests import getpeereid_standin\ngetpeereid_standin.install()")
    path = runtime / "lsp-hub" / "daemon.sock"

    def run_as(uid: int) -> str:
        return _client_as(uid, python, OTHER_USER_CLIENT, str(path))

    try:
        _wait_for(path, daemon)
        (runtime / "lsp-hub").chmod(0o711)
        path.chmod(0o666)  # the modes no longer keep anyone out: only the peer's credentials decide
        assert run_as(OTHER_UID) == "closed"
        # Unlike a system with no credentials at all, its own user is still told apart and served.
        assert '"pid"' in run_as(os.getuid())
        # No pid: getpeereid tells only the user (SO_PEERCRED's refusal names the client's pid).
        assert _log_says(
            runtime,
            f"refused a client of the daemon's socket: the client runs as uid {OTHER_UID}, "
            f"not as this hub's user (uid {os.getuid()})",
        )
    finally:
        _stop(daemon)


# ==================================================================================================== tcp-token
def test_a_token_daemon_without_proc_refuses_another_user_holding_the_token(runtime: Path) -> None:
    python = _needs_root_and_another_user()
    setup = (
        "from pathlib import Path\nfrom lsp_hub.platform import peers\n"
        "peers.PROC_NET_TCP = (Path('/nonexistent/proc/net/tcp'), Path('/nonexistent/proc/net/tcp6'))"
    )
    daemon = _run_daemon(runtime, setup, env={"LSP_HUB_DAEMON_TRANSPORT": "tcp-token"})
    endpoint_file = runtime / "lsp-hub" / "daemon.endpoint"

    def greet_as(uid: int, first_line: str) -> str:
        return _client_as(uid, python, TOKEN_CLIENT, str(port), first_line)

    try:
        _wait_for(endpoint_file, daemon)
        endpoint = json.loads(endpoint_file.read_text())
        port, token = int(endpoint["port"]), str(endpoint["token"])
        assert greet_as(os.getuid(), f"lsp-hub-token {token}") == "ok"
        assert greet_as(OTHER_UID, "lsp-hub-token " + "0" * 64).startswith("refused: wrong token")
        # A token that leaked to another user is still refused: the connection's owner is not the daemon's user,
        # found through psutil where /proc/net/tcp cannot be read.
        refused = greet_as(OTHER_UID, f"lsp-hub-token {token}")
        assert refused.startswith("refused: ") and f"uid {OTHER_UID}" in refused, refused
        assert _log_says(runtime, f"uid {OTHER_UID}")
        assert "cannot tell which local user" not in (runtime / "daemon.log").read_text()
    finally:
        _stop(daemon)
