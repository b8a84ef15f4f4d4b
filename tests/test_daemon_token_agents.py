"""The agent surfaces as they run on Windows, here on Linux: `lsp-hub query` and `lsp-hub mcp` through the daemon's
token transport (`LSP_HUB_DAEMON_TRANSPORT=tcp-token`), reading the connection as a socket (a Windows socket is no
file descriptor), and with unix sockets taken away (`socket.AF_UNIX` deleted, as Windows has none): `query --socket`
through a daemon's endpoint file, `mcp --no-daemon` through socket pairs."""

from __future__ import annotations

import errno
import io
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.agents.query import connection as query_connection
from lsp_hub.agents.query import query_main
from lsp_hub.agents.query.errors import HubFailed
from lsp_hub.transport.daemon_transport import TCP_TOKEN, TRANSPORT_ENV, UNIX, chosen_transport
from tests.hubclient import fake_server_config
from tests.mcp_client import McpClient
from tests.test_daemon import Daemon
from tests.test_daemon import daemon as unix_daemon  # noqa: F401 - the fixture this one builds on

# fakeA answers hover with text a test can look for; the index answers outlines without any server.
HOVER_TEXT = "hover from fakeA"
SERVERS = {"fakeA": {"responses": {"textDocument/hover": {"result": {"contents": HOVER_TEXT}}}}}
LANGUAGES = {"alpha": {"extensions": ["alpha"], "language_ids": ["alpha"], "servers": ["fakeA"]}}
MODULE = "def greet(name):\n    return name\n\n\nclass Greeter:\n    def wave(self):\n        return 1\n"


@pytest.fixture
def daemon(unix_daemon: Daemon) -> Iterator[Daemon]:  # noqa: F811
    unix_daemon.env[TRANSPORT_ENV] = TCP_TOKEN
    unix_daemon.config.write_text(fake_server_config(SERVERS, LANGUAGES))
    yield unix_daemon


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "m.py").write_text(MODULE)
    (root / "a.alpha").write_text("x\n")
    return root


def _query(daemon: Daemon, root: Path, *args: str, module: str = "lsp_hub") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, "query", *args, "--timeout", "60"],
        cwd=root,
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _outline_names(text: str) -> list[str]:
    return [name for name in ("greet", "Greeter", "wave") if name in text]


def _refusals(daemon: Daemon) -> list[str]:
    return [line for line in (daemon.directory / "daemon.log").read_text().splitlines() if "refused a client" in line]


class DescriptorlessOs:
    """The os module as a Windows socket sees it: os.read, os.write and os.dup fail on the socket's number."""

    def __getattr__(self, name: str) -> Any:
        if name in ("read", "write", "dup"):

            def fail(*_args: Any) -> Any:
                raise OSError(errno.EBADF, f"os.{name} on a socket (a Windows socket is no file descriptor)")

            return fail
        return getattr(os, name)


# ==================================================================================================== point 1
def test_query_reads_the_daemon_as_a_socket_never_as_a_descriptor(
    daemon: Daemon, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon.start()
    for name in ("XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", TRANSPORT_ENV):
        monkeypatch.setenv(name, daemon.env[name])
    monkeypatch.setattr(query_connection, "os", DescriptorlessOs())
    out, err = io.StringIO(), io.StringIO()
    code = query_main(["outline", "m.py", "--root", str(workspace), "--timeout", "60"], out=out, err=err)
    assert code == 0, err.getvalue()
    assert _outline_names(out.getvalue()) == ["greet", "Greeter", "wave"], out.getvalue()
    out, err = io.StringIO(), io.StringIO()
    code = query_main(["hover", "a.alpha:1:1", "--root", str(workspace), "--timeout", "60"], out=out, err=err)
    assert code == 0, err.getvalue()
    assert HOVER_TEXT in out.getvalue()


# ==================================================================================================== point 5
def test_query_and_mcp_answer_through_the_token_daemon_and_a_client_without_it_is_refused(
    daemon: Daemon, workspace: Path
) -> None:
    started = daemon.start()
    assert (daemon.directory / "daemon.endpoint").exists() and not daemon.socket.exists()
    done = _query(daemon, workspace, "outline", "m.py")
    assert done.returncode == 0, done.stderr
    assert _outline_names(done.stdout) == ["greet", "Greeter", "wave"], done.stdout

    mcp = McpClient("--root", str(workspace), "--timeout", "60", env=daemon.env, cwd=str(workspace))
    try:
        assert _outline_names(mcp.text("outline", {"path": "m.py"})) == ["greet", "Greeter", "wave"]
        assert HOVER_TEXT in mcp.text("lsp", {"action": "hover", "file": "a.alpha", "line": 1, "column": 1})
        status = daemon.status()
        assert status is not None and status["pid"] == started["pid"] and status["clients"] == 1
    finally:
        mcp.close()

    # A local client that knows the port but not the token gets one line back, and the log one line.
    before = _refusals(daemon)
    port = int(json.loads((daemon.directory / "daemon.endpoint").read_text())["port"])
    body = b'{"jsonrpc":"2.0","id":1,"method":"lspHub/daemonStatus"}'
    with socket.create_connection(("127.0.0.1", port), timeout=10) as stranger:
        stranger.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        answer = b""
        while chunk := stranger.recv(4096):
            answer += chunk
    assert answer.startswith(b"refused: no token") and answer.count(b"\n") == 1
    deadline = time.monotonic() + 10
    while len(_refusals(daemon)) == len(before) and time.monotonic() < deadline:
        time.sleep(0.05)
    new = _refusals(daemon)[len(before) :]
    assert len(new) == 1 and "no token" in new[0], new


# ==================================================================================================== point 2
def test_without_unix_sockets_the_daemon_transport_is_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    assert chosen_transport({}) == UNIX
    monkeypatch.delattr(socket, "AF_UNIX")
    assert chosen_transport({}) == TCP_TOKEN
    with pytest.raises(Exception, match=f"not a daemon transport here \\(use {TCP_TOKEN}\\)"):
        chosen_transport({TRANSPORT_ENV: UNIX})


def test_without_unix_sockets_query_socket_says_what_to_use_instead(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delattr(socket, "AF_UNIX")
    with pytest.raises(HubFailed) as refused:
        query_connection.connect_socket(str(tmp_path / "hub.sock"))
    message = str(refused.value)
    assert "\n" not in message and "no unix sockets" in message and "daemon.endpoint" in message


def test_query_socket_reaches_a_token_daemon_through_its_endpoint_file(daemon: Daemon, workspace: Path) -> None:
    daemon.start()
    endpoint = daemon.directory / "daemon.endpoint"
    done = _query(daemon, workspace, "outline", "m.py", "--socket", str(endpoint), module="tests.without_unix_sockets")
    assert done.returncode == 0, done.stderr
    assert _outline_names(done.stdout) == ["greet", "Greeter", "wave"], done.stdout
    unix_path = daemon.tmp_path / "hub.sock"
    refused = _query(
        daemon, workspace, "outline", "m.py", "--socket", str(unix_path), module="tests.without_unix_sockets"
    )
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines() == [
        f"lsp-hub query: --socket {unix_path}: this system offers no unix sockets; give a daemon's endpoint file "
        "(daemon.endpoint in its runtime directory) instead, or leave --socket out to use the daemon"
    ]


def test_mcp_without_a_daemon_serves_through_socket_pairs_where_there_are_no_unix_sockets(
    daemon: Daemon, workspace: Path
) -> None:
    mcp = McpClient(
        "--no-daemon",
        "--root",
        str(workspace),
        "--config",
        str(daemon.config),
        "--timeout",
        "60",
        env=daemon.env,
        cwd=str(workspace),
        module="tests.without_unix_sockets",
    )
    try:
        assert _outline_names(mcp.text("outline", {"path": "m.py"})) == ["greet", "Greeter", "wave"]
        assert HOVER_TEXT in mcp.text("lsp", {"action": "hover", "file": "a.alpha", "line": 1, "column": 1})
    finally:
        mcp.close()
    assert not daemon.directory.exists() or not any(daemon.directory.iterdir())  # no daemon was started
