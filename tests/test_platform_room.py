"""The platform room (`lsp_hub/platform/`): no module outside it reaches for an OS-specific facility, and each of
its facilities works on this system, with its fallback tested by taking the Linux facility away."""

from __future__ import annotations

import ast
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_hub.platform import locks, peers, processes
from lsp_hub.platform.users import current_user
from lsp_hub.transport.transport_security import PeerOwners, unix_peer_refusal
from tests.test_hub_security import OTHER_UID, _system_python

PACKAGE = Path(__file__).resolve().parent.parent / "lsp_hub"
ROOM = PACKAGE / "platform"
FORBIDDEN_MODULES = frozenset({"fcntl", "termios", "msvcrt"})


def facilities_used(source: str) -> list[str]:
    """What in `source` belongs in the platform room: imports of fcntl/termios/msvcrt, ctypes.windll, /proc."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] in FORBIDDEN_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FORBIDDEN_MODULES:
            found.append(str(node.module))
        elif (isinstance(node, ast.Attribute) and node.attr == "windll") or (
                isinstance(node, ast.ImportFrom) and any(alias.name == "windll" for alias in node.names)):
            found.append("ctypes.windll")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/proc"):
            found.append(node.value)  # an f-string's leading text is a Constant too
    return found


def test_the_room_check_finds_each_kind_of_facility() -> None:
    assert sorted(facilities_used("import fcntl\nfrom msvcrt import locking\nimport termios as t\n")) == [
        "fcntl", "msvcrt", "termios"]
    assert facilities_used("import ctypes\nctypes.windll.kernel32") == ["ctypes.windll"]
    assert facilities_used("open('/proc/net/tcp')") == ["/proc/net/tcp"]
    assert facilities_used("open(f'/proc/{pid}/stat')") == ["/proc/"]
    assert facilities_used("import os, socket\nos.getpid()") == []


def test_no_module_outside_the_platform_room_uses_an_os_specific_facility() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if ROOM in path.parents:
            continue
        used = facilities_used(path.read_text(encoding="utf-8"))
        if used:
            offenders[str(path.relative_to(PACKAGE))] = used
    assert offenders == {}, f"move these behind lsp_hub/platform/: {offenders}"


def test_the_room_imports_only_the_standard_library_at_import_time() -> None:
    # `lsp-hub --connect` imports the room through daemon_client; psutil is imported only where it is needed.
    probe = ("import sys, lsp_hub.platform.children, lsp_hub.platform.peers, lsp_hub.platform.processes, "
             "lsp_hub.platform.locks, lsp_hub.platform.users, lsp_hub.transport.daemon_client; "
             "print(sorted(m for m in ('psutil', 'asyncio', 'pygls') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# ==================================================================================================== locks
def test_a_file_lock_is_exclusive_until_released(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    first = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    second = os.open(path, os.O_RDWR)
    try:
        assert locks.try_lock(first)
        assert not locks.try_lock(second)  # another open file description: another holder
        locks.unlock(first)
        assert locks.try_lock(second)
        locks.replace_content(second, b"1234\n")
        assert locks.read_from_start(first, 32) == b"1234\n"
    finally:
        os.close(first)
        os.close(second)


# ==================================================================================================== processes
def test_pid_alive_knows_running_ended_and_zombie_processes(tmp_path: Path) -> None:
    assert processes.pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while processes.pid_alive(child.pid) and time.monotonic() < deadline:  # a zombie until reaped: not alive
        time.sleep(0.02)
    assert not processes.pid_alive(child.pid)
    # Without /proc (macOS), the zombie is told apart through psutil.
    assert not processes.pid_alive(child.pid, proc=tmp_path / "no-proc")
    child.wait()
    assert not processes.pid_alive(child.pid, proc=tmp_path / "no-proc")
    assert processes.pid_alive(os.getpid(), proc=tmp_path / "no-proc")


def test_a_pipe_is_widened_and_anything_else_left_alone(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        widened = processes.widen_pipe_buffer(write_end, 1 << 20)
        assert widened == sys.platform.startswith("linux")
    finally:
        os.close(read_end)
        os.close(write_end)
    with open(tmp_path / "file", "wb") as regular:
        assert not processes.widen_pipe_buffer(regular.fileno(), 1 << 20)


# ==================================================================================================== peers
@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A directory another user may pass through (pytest's tmp_path is private to root)."""
    base = Path(tempfile.mkdtemp(prefix="lhp-", dir="/tmp"))
    base.chmod(0o711)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _listening_socket(directory: Path) -> socket.socket:
    directory.mkdir(mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(directory / "s.sock"))
    os.chmod(directory / "s.sock", 0o600)
    listener.listen()
    return listener


def _connect_as(uid: int, path: Path) -> subprocess.Popen[str]:
    """A client of `path` run as `uid` that holds its connection until killed; prints "connected" or why not."""
    python = _system_python() if uid != os.getuid() else sys.executable
    script = ("import socket, sys, time\nc = socket.socket(socket.AF_UNIX)\ntry:\n    c.connect(sys.argv[1])\n"
              "except OSError as e:\n    print(type(e).__name__, flush=True); raise SystemExit\n"
              "print('connected', flush=True)\ntime.sleep(60)\n")
    assert python is not None
    return subprocess.Popen([python, "-c", script, str(path)], user=uid, stdout=subprocess.PIPE, text=True, cwd="/")


def _needs_root_and_another_user() -> None:
    if os.getuid() != 0:
        pytest.skip("running a client as another user needs root (to switch to uid 65534)")
    if _system_python() is None:
        pytest.skip("no Python that uid 65534 may run (/usr/bin/python3)")


@pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED"), reason="SO_PEERCRED is Linux's")
def test_a_unix_peer_of_another_user_is_refused_by_its_credentials(shared_tmp: Path) -> None:
    _needs_root_and_another_user()
    directory = shared_tmp / "d"
    with _listening_socket(directory) as listener:
        directory.chmod(0o711)  # loosened, so that the other user can connect at all
        os.chmod(directory / "s.sock", 0o666)
        client = _connect_as(OTHER_UID, directory / "s.sock")
        try:
            assert client.stdout is not None and client.stdout.readline().strip() == "connected"
            served, _ = listener.accept()
            with served:
                refusal = unix_peer_refusal(served)
                assert refusal is not None and f"runs as uid {OTHER_UID}" in refusal
        finally:
            client.kill()
            client.wait()


def test_without_peer_credentials_a_private_socket_serves_its_user(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(socket, "SO_PEERCRED", raising=False)
    monkeypatch.setattr(peers, "_libc_function", lambda name: None)  # no getpeereid either (glibc has none)
    directory = tmp_path / "d"
    with _listening_socket(directory) as listener:
        assert isinstance(peers.unix_peer_credentials(listener), str)  # the facility is gone
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(directory / "s.sock"))
            served, _ = listener.accept()
            with served:
                assert unix_peer_refusal(served) is None
                os.chmod(directory / "s.sock", 0o666)  # should the modes be loosened, nobody is trusted
                refusal = unix_peer_refusal(served)
                assert refusal is not None and "not private to this user (socket 0o666)" in refusal


def test_without_peer_credentials_another_user_is_refused(shared_tmp: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _needs_root_and_another_user()
    monkeypatch.delattr(socket, "SO_PEERCRED", raising=False)
    monkeypatch.setattr(peers, "_libc_function", lambda name: None)
    directory = shared_tmp / "d"
    with _listening_socket(directory) as listener:
        # With the modes kept, the other user cannot even connect ...
        client = _connect_as(OTHER_UID, directory / "s.sock")
        assert client.stdout is not None and client.stdout.readline().strip() == "PermissionError"
        client.wait()
        # ... and with them loosened, it connects and is refused.
        directory.chmod(0o711)
        os.chmod(directory / "s.sock", 0o666)
        client = _connect_as(OTHER_UID, directory / "s.sock")
        try:
            assert client.stdout is not None and client.stdout.readline().strip() == "connected"
            served, _ = listener.accept()
            with served:
                refusal = unix_peer_refusal(served)
                assert refusal is not None and "the client could be anyone" in refusal
        finally:
            client.kill()
            client.wait()


def test_without_proc_the_owner_of_a_loopback_peer_comes_from_psutil(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peers, "PROC_NET_TCP", (tmp_path / "tcp", tmp_path / "tcp6"))
    owners = PeerOwners()
    assert isinstance(owners.source, peers.PsutilConnections) and owners.unavailable_reason() is None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with socket.create_connection(listener.getsockname()) as client:
            served, peer = listener.accept()
            with served:
                assert owners.owner_of(peer, served.getsockname()) == current_user()
                assert owners.refusal(peer, served.getsockname()) is None
                del client
    if os.getuid() != 0 or _system_python() is None:
        return
    # Another user's connection is found and refused through psutil too.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        script = ("import socket, sys, time\nc = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
                  "print('connected', flush=True)\ntime.sleep(60)\n")
        python = _system_python()
        assert python is not None
        other = subprocess.Popen([python, "-c", script, str(listener.getsockname()[1])], user=OTHER_UID,
                                 stdout=subprocess.PIPE, text=True, cwd="/")
        try:
            assert other.stdout is not None and other.stdout.readline().strip() == "connected"
            served, peer = listener.accept()
            with served:
                refusal = owners.refusal(peer, served.getsockname())
                assert refusal is not None and f"belongs to uid {OTHER_UID}" in refusal
        finally:
            other.kill()
            other.wait()


def test_where_psutil_may_not_list_others_sockets_ours_are_found_among_our_processes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS: psutil.net_connections is root's only; a loopback peer none of our processes holds is another's."""
    import psutil

    def denied(kind: str = "inet") -> list[object]:
        raise psutil.AccessDenied()

    monkeypatch.setattr(peers, "PROC_NET_TCP", (tmp_path / "tcp",))
    monkeypatch.setattr(psutil, "net_connections", denied)
    owners = PeerOwners()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with socket.create_connection(listener.getsockname()):
            served, peer = listener.accept()
            with served:
                assert owners.owner_of(peer, served.getsockname()) == current_user()
                assert owners.refusal(peer, served.getsockname()) is None
        if os.getuid() != 0 or _system_python() is None:
            return
        python = _system_python()
        assert python is not None
        script = ("import socket, sys, time\nc = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
                  "print('connected', flush=True)\ntime.sleep(60)\n")
        other = subprocess.Popen([python, "-c", script, str(listener.getsockname()[1])], user=OTHER_UID,
                                 stdout=subprocess.PIPE, text=True, cwd="/")
        try:
            assert other.stdout is not None and other.stdout.readline().strip() == "connected"
            served, peer = listener.accept()
            with served:
                refusal = owners.refusal(peer, served.getsockname())
                assert refusal is not None and "none of its processes holds the socket" in refusal
        finally:
            other.kill()
            other.wait()


def test_a_daemon_without_peer_credentials_serves_its_user_and_refuses_others() -> None:
    """The whole daemon with SO_PEERCRED and getpeereid taken away (a system that has neither)."""
    _needs_root_and_another_user()
    from tests.test_daemon import OTHER_USER_CLIENT

    runtime = Path(tempfile.mkdtemp(prefix="lhp-", dir="/tmp"))
    runtime.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent), "XDG_RUNTIME_DIR": str(runtime),
           "XDG_CONFIG_HOME": str(runtime / "cfg"), "XDG_CACHE_HOME": str(runtime / "cache")}
    launch = ("import socket, sys; del socket.SO_PEERCRED; from lsp_hub.platform import peers; "
              "peers._libc_function = lambda name: None; from lsp_hub.cli import main; "
              "raise SystemExit(main(['daemon', 'run', '--log-file', sys.argv[1]]))")
    log = runtime / "daemon.log"
    daemon = subprocess.Popen([sys.executable, "-c", launch, str(log)], env=env, stderr=subprocess.DEVNULL)
    path = runtime / "lsp-hub" / "daemon.sock"
    python = _system_python()
    assert python is not None

    def run_as(uid: int) -> str:
        return subprocess.run([python, "-c", OTHER_USER_CLIENT, str(path)], user=uid, capture_output=True,
                              text=True, timeout=30, cwd="/").stdout.strip()

    try:
        deadline = time.monotonic() + 30
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert '"pid"' in run_as(os.getuid())  # its own user is served: the socket is private
        (runtime / "lsp-hub").chmod(0o711)
        path.chmod(0o666)
        assert run_as(OTHER_UID) == "closed"
        assert run_as(os.getuid()) == "closed"  # with the modes loosened, nobody can be told apart: none served
        deadline = time.monotonic() + 10
        while "the client could be anyone" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "cannot read the peer's credentials (this system offers neither SO_PEERCRED nor getpeereid)" \
            in log.read_text()
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
        shutil.rmtree(runtime, ignore_errors=True)
