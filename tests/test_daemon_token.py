"""The daemon over loopback TCP with a per-user token (`LSP_HUB_DAEMON_TRANSPORT=tcp-token`): Windows' transport,
run here on Linux end to end. A client that presents the token in `daemon.endpoint` is served; a wrong or missing
token is refused with one line; the file is 0600 in the private runtime directory; the port is on 127.0.0.1 only."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator

import psutil
import pytest

from lsp_hub.transport.daemon_transport import TRANSPORT_ENV, token_refusal
from tests.hub_fixtures import pids_alive
from tests.test_daemon import Daemon, _bridge, _open_and_hover
from tests.test_daemon import daemon as unix_daemon  # noqa: F401 - the fixture this one builds on


@pytest.fixture
def daemon(unix_daemon: Daemon) -> Iterator[Daemon]:  # noqa: F811
    unix_daemon.env[TRANSPORT_ENV] = "tcp-token"
    yield unix_daemon


def _endpoint(daemon: Daemon) -> dict[str, object]:
    return dict(json.loads((daemon.directory / "daemon.endpoint").read_text()))


def _greet(port: int, first_line: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(first_line)
        answer = b""
        while chunk := connection.recv(4096):
            answer += chunk
            if answer.endswith(b"\n"):
                break
        return answer


def test_the_token_file_is_private_and_the_port_loopback_only(daemon: Daemon) -> None:
    started = daemon.start()
    endpoint_file = daemon.directory / "daemon.endpoint"
    assert stat.S_IMODE(os.lstat(endpoint_file).st_mode) == 0o600
    assert stat.S_IMODE(os.lstat(daemon.directory).st_mode) == 0o700
    assert not daemon.socket.exists()  # no unix socket on this transport
    endpoint = _endpoint(daemon)
    assert endpoint["host"] == "127.0.0.1" and len(str(endpoint["token"])) == 64
    status = daemon.status()
    assert status is not None and status["pid"] == started["pid"]
    assert status["socket"] == f"tcp://127.0.0.1:{endpoint['port']} (token in {endpoint_file})"
    # Bound to loopback only: every socket the daemon listens on is 127.0.0.1's.
    listening = [connection.laddr for connection in psutil.Process(started["pid"]).net_connections(kind="inet")
                 if connection.status == psutil.CONN_LISTEN]
    assert [(address.ip, address.port) for address in listening] == [("127.0.0.1", endpoint["port"])]
    stopped = daemon.cli("stop")
    assert stopped.returncode == 0, stopped.stderr
    assert pids_alive([started["pid"]]) == [] and not endpoint_file.exists()


async def test_a_client_with_the_token_is_served_through_connect(daemon: Daemon) -> None:
    client = await _bridge(daemon)
    hover = await _open_and_hover(client, daemon.tmp_path / "ws")
    assert hover["server"] == "fakeA" and hover["method"] == "textDocument/hover"
    status = await client.status()
    assert status["hub"]["pid"] == daemon.pid()
    assert await client.stop() == 0
    assert "started the lsp-hub daemon" in client.stderr.decode(errors="replace")


def test_a_wrong_or_missing_token_is_refused_in_one_line(daemon: Daemon) -> None:
    daemon.start()
    endpoint = _endpoint(daemon)
    port, token = int(str(endpoint["port"])), str(endpoint["token"])
    assert _greet(port, b"lsp-hub-token " + token.encode() + b"\r\n") == b"ok\r\n"
    assert _greet(port, b"lsp-hub-token " + b"0" * 64 + b"\r\n") == b"refused: wrong token (the daemon.endpoint " \
        b"read was not this daemon's)\r\n"
    body = b'{"jsonrpc":"2.0","id":1,"method":"lspHub/daemonStatus"}'
    assert _greet(port, b"Content-Length: %d\r\n\r\n" % len(body) + body).startswith(b"refused: no token")
    # A client holding a stale token (say, of a daemon since replaced) says so in one line, no traceback.
    endpoint_file = daemon.directory / "daemon.endpoint"
    endpoint_file.write_text(json.dumps({**endpoint, "token": "f" * 64}))
    done = daemon.cli("status")
    assert done.returncode == 3
    assert done.stderr.strip().splitlines() == [
        f"lsp-hub daemon status: the daemon at tcp://127.0.0.1:{port} refused this connection: wrong token "
        "(the daemon.endpoint read was not this daemon's)"]
    log = (daemon.directory / "daemon.log").read_text()
    assert "refused a client of the daemon's socket: wrong token" in log
    assert "refused a client of the daemon's socket: no token" in log


def test_an_unknown_transport_is_one_line(daemon: Daemon) -> None:
    done = daemon.cli("status", env={**daemon.env, TRANSPORT_ENV: "carrier-pigeon"})
    assert done.returncode == 3
    assert done.stderr.strip().splitlines() == [
        f"lsp-hub daemon status: {TRANSPORT_ENV}='carrier-pigeon' is not a daemon transport here (use unix or "
        "tcp-token)"]


def test_token_refusal_rules() -> None:
    token = "ab" * 32
    assert token_refusal(b"lsp-hub-token " + token.encode() + b"\r\n", token) is None
    assert token_refusal(b"lsp-hub-token " + token.upper().encode() + b"\r\n", token) is not None
    assert token_refusal(b"lsp-hub-token \r\n", token) is not None
    assert token_refusal(b"", token) is not None


def test_query_presents_the_token_too(daemon: Daemon) -> None:
    workspace = daemon.tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    first = subprocess.run([sys.executable, "-m", "lsp_hub", "query", "status", "--json"], cwd=workspace,
                           env=daemon.env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["hub"]["pid"] == daemon.pid()
    assert (daemon.directory / "daemon.endpoint").exists() and not daemon.socket.exists()
