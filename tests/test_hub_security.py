"""No network client can make the hub run a program or trust a workspace; the editor that launched it still can.

Each transport gets the same attack: `initializationOptions.lspHub` defines a server whose program writes a marker
file, and `trustWorkspace: true` tries to let the repository's own `.lsp-hub.toml` do the same. Over stdio (the
user's editor) both work; over TCP and WebSocket neither does, and the client is told which keys were ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.config.loader import load_config
from lsp_hub.config.trust import TrustStore
from lsp_hub.config.untrusted import strip_program_settings
from lsp_hub.transport.transport_security import HandshakePolicy, PeerOwners, exposure_warning, is_loopback
from tests.hub_fixtures import FAKE_LANGUAGES, start_daemon
from tests.hubclient import HubClient

MARKER_SCRIPT = "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text('ran')"
ECHO_HOVER = {"fakeA": {"responses": {"textDocument/hover": {"echo": True}}}, "fakeB": {}}


def _program_options(marker: Path) -> dict[str, Any]:
    """What an attacker sends: a new server running its own program, and a language routing files to it."""
    return {
        "server": {"evil": {"command": sys.executable, "args": ["-c", MARKER_SCRIPT, str(marker)]},
                   "fakeA": {"command": sys.executable, "args": ["-c", MARKER_SCRIPT, str(marker)]}},
        "language": {"gamma": {"extensions": ["gamma"], "language_ids": ["gamma"], "servers": ["evil", "fakeA"]}},
    }


def _evil_project(workspace: Path, marker: Path) -> None:
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / ".lsp-hub.toml").write_text(
        "[server.evil]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps(['-c', MARKER_SCRIPT, str(marker)])}\n"
        '[language.gamma]\nextensions = ["gamma"]\nservers = ["evil"]\n'
    )


@contextlib.asynccontextmanager
async def _connected(tmp_path: Path, transport: str, *args: str,
                     servers: dict[str, Any] = ECHO_HOVER) -> AsyncIterator[HubClient]:
    """A client of a hub started over `transport` ("stdio", "tcp", "ws") in front of the fake servers."""
    client = HubClient()
    if transport == "stdio":
        from tests.hubclient import fake_server_config

        config = tmp_path / "hub.toml"
        config.write_text(fake_server_config(servers, FAKE_LANGUAGES))
        env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
        await client.start("--config", str(config), "--log-file", str(tmp_path / "log"), *args, env=env)
        try:
            yield client
        finally:
            await client.stop()
        return
    process, port = await start_daemon(tmp_path, f"--{transport}", *args, servers=servers)
    try:
        await getattr(client, f"connect_{transport}")("127.0.0.1", port)
        yield client
        await client.disconnect()
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 15)


async def _hover(client: HubClient, uri: str) -> Any:
    return await client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                       "position": {"line": 0, "character": 0}})


def _messages(client: HubClient) -> list[str]:
    return [params["message"] for method, params in client.notifications if method == "window/showMessage"]


# ==================================================================================================== end to end
@pytest.mark.asyncio
@pytest.mark.parametrize("transport", ["stdio", "tcp", "ws"])
async def test_only_the_launching_editor_may_choose_programs(tmp_path: Path, transport: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = tmp_path / "program-ran"
    async with _connected(tmp_path, transport) as client:
        await client.initialize(workspace, init_options=_program_options(marker))
        gamma = workspace / "x.gamma"
        gamma.write_text("a\n")
        uri = client.open(gamma, "gamma")
        if transport == "stdio":
            await client.wait_for(marker.exists, what="the editor's own server to start")
            return
        # The rest of the client layer still applies: gamma files are routed to the user's fakeA, unchanged.
        answer = await _hover(client, uri)
        assert answer["server"] == "fakeA"
        message = await client.wait_for(lambda: [m for m in _messages(client) if "ignored" in m],
                                        what="the message naming the ignored keys")
        for key in ("server.evil", "server.fakeA.command", "server.fakeA.args"):
            assert key in message[0], message
        assert "lsp-hub trust PATH" in message[0] and "config.toml" in message[0]
        status = await client.status()
        assert [s["name"] for s in status["servers"]] == ["fakeA"]
        assert not marker.exists()


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", ["stdio", "tcp", "ws"])
async def test_only_the_launching_editor_may_trust_a_workspace(tmp_path: Path, transport: str) -> None:
    workspace = tmp_path / "ws"
    marker = tmp_path / "project-program-ran"
    _evil_project(workspace, marker)
    async with _connected(tmp_path, transport) as client:
        await client.initialize(workspace, init_options={"trustWorkspace": True})
        gamma = workspace / "x.gamma"
        gamma.write_text("a\n")
        client.open(gamma, "gamma")
        alpha = workspace / "x.alpha"
        alpha.write_text("a\n")
        uri = client.open(alpha, "alpha")
        if transport == "stdio":
            await client.wait_for(marker.exists, what="the trusted project's server to start")
            return
        assert (await _hover(client, uri))["server"] == "fakeA"  # after gamma's open: nothing was started for it
        await asyncio.sleep(0.3)
        assert not marker.exists()
        message = await client.wait_for(lambda: [m for m in _messages(client) if "trustWorkspace" in m],
                                        what="the message naming trustWorkspace")
        assert "may not choose programs or trust a workspace" in message[0]


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", ["stdio", "tcp"])
async def test_settings_from_a_network_client_name_no_program(tmp_path: Path, transport: str) -> None:
    """What a client answers to workspace/configuration, or pushes with didChangeConfiguration, reaches servers
    without the keys that may name a program (basedpyright runs `python.pythonPath` to find its search paths)."""
    ask = [{"request": "workspace/configuration",
            "params": {"items": [{"section": "python"}, {"section": "python.pythonPath"}]}}]
    servers = {"fakeA": {"capabilities": {"textDocumentSync": 1, "executeCommandProvider": {"commands": ["ask"]}},
                         "on_command": {"ask": ask}}, "fakeB": {}}
    async with _connected(tmp_path, transport, servers=servers) as client:
        workspace = tmp_path / "ws"
        workspace.mkdir()
        await client.initialize(workspace)
        client.answers["workspace/configuration"] = [{"pythonPath": "/tmp/evil", "analysis": {"x": 1}}, "/tmp/evil"]
        alpha = workspace / "x.alpha"
        alpha.write_text("a\n")
        uri = client.open(alpha, "alpha")
        await client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                    "position": {"line": 0, "character": 0}})  # fakeA is running
        client.notify("workspace/didChangeConfiguration",
                      {"settings": {"python": {"pythonPath": "/tmp/evil", "analysis": {"x": 2}}}})
        answers = await client.request("workspace/executeCommand", {"command": "ask"})
        state = await client.request("fake/getState", {"textDocument": {"uri": uri}})
    if transport == "stdio":
        assert answers[0] == [{"pythonPath": "/tmp/evil", "analysis": {"x": 1}}, "/tmp/evil"]
        assert state["settings"] == {"python": {"pythonPath": "/tmp/evil", "analysis": {"x": 2}}}
    else:
        assert answers[0] == [{"analysis": {"x": 1}}, None]
        assert state["settings"] == {"python": {"analysis": {"x": 2}}}


def _handshake(port: int, headers: dict[str, str]) -> str:
    """The status line of a raw WebSocket opening handshake with exactly these headers."""
    lines = ["GET / HTTP/1.1", "Upgrade: websocket", "Connection: Upgrade",
             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
             *(f"{name}: {value}" for name, value in headers.items())]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return connection.makefile("rb").readline().decode().strip()


@pytest.mark.asyncio
async def test_websocket_refuses_foreign_origins_and_hosts(tmp_path: Path) -> None:
    process, port = await start_daemon(tmp_path, "--ws", "--allow-origin", "http://localhost:3000",
                                       "--allow-host", "hub.internal", servers=ECHO_HOVER)
    try:
        host = f"127.0.0.1:{port}"
        cases = {
            "no Origin (a program, not a page)": ({"Host": host}, "101"),
            "an allowed origin": ({"Host": host, "Origin": "http://localhost:3000"}, "101"),
            "an allowed origin, other spelling": ({"Host": host, "Origin": "HTTP://LOCALHOST:3000/"}, "101"),
            "a foreign page": ({"Host": host, "Origin": "https://attacker.example"}, "403"),
            "a page on another local port": ({"Host": host, "Origin": "http://localhost:8080"}, "403"),
            "a sandboxed page": ({"Host": host, "Origin": "null"}, "403"),
            "DNS rebinding": ({"Host": f"attacker.example:{port}"}, "403"),
            "localhost by name": ({"Host": f"localhost:{port}"}, "101"),
            "IPv6 loopback": ({"Host": f"[::1]:{port}"}, "101"),
            "an allowed host name": ({"Host": "hub.internal"}, "101"),
            "no Host": ({}, "403"),
        }
        for case, (headers, expected) in cases.items():
            status = await asyncio.to_thread(_handshake, port, headers)
            assert status.split()[1] == expected, (case, status)
        log = (tmp_path / "log").read_text()
        assert "refused a WebSocket handshake" in log and "'https://attacker.example'" in log
        assert f"'attacker.example:{port}'" in log
        # A refused page got no session, so no server was started for it; the daemon still serves.
        client = HubClient()
        await client.connect_ws("127.0.0.1", port)
        await client.initialize(tmp_path)
        assert (await client.status())["servers"] == []
        await client.disconnect()
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 15)


# ==================================================================================================== other users
OTHER_UID = 65534  # nobody: a second user on every Debian machine, needing no account to be created
OTHER_USER_CLIENT = textwrap.dedent("""
    import socket, sys
    transport, port = sys.argv[1], int(sys.argv[2])
    connection = socket.create_connection(("127.0.0.1", port), timeout=10)
    if transport == "ws":
        connection.sendall(("GET / HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\nUpgrade: websocket\\r\\n"
                            "Connection: Upgrade\\r\\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\n"
                            "Sec-WebSocket-Version: 13\\r\\n\\r\\n" % port).encode())
    else:
        body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}'
        connection.sendall(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
    answer = b""
    try:
        while (chunk := connection.recv(65536)) and not (transport == "ws" and b"\\r\\n\\r\\n" in answer + chunk):
            answer += chunk
        answer += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    print(answer.decode(errors="replace").splitlines()[0] if answer else "closed")
""")


def _system_python() -> str | None:
    """A Python another user may run (the project's own may live under /root)."""
    for candidate in ("/usr/bin/python3", shutil.which("python3")):
        if candidate and os.access(candidate, os.X_OK) and os.stat(candidate).st_mode & 0o001:
            return candidate
    return None


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", ["tcp", "ws"])
async def test_a_loopback_connection_of_another_user_is_refused(tmp_path: Path, transport: str) -> None:
    if os.getuid() != 0:
        pytest.skip("running a client as another user needs root (to switch to uid 65534)")
    python = _system_python()
    if python is None:
        pytest.skip("no Python that uid 65534 may run (/usr/bin/python3)")
    process, port = await start_daemon(tmp_path, f"--{transport}", servers=ECHO_HOVER)
    try:
        def run_as(uid: int) -> str:
            return subprocess.run([python, "-c", OTHER_USER_CLIENT, transport, str(port)], user=uid,
                                  capture_output=True, text=True, timeout=30, cwd="/").stdout.strip()

        other = await asyncio.to_thread(run_as, OTHER_UID)
        assert other == ("HTTP/1.1 403 Forbidden" if transport == "ws" else "closed"), other
        log = (tmp_path / "log").read_text()
        assert f"belongs to uid {OTHER_UID}, not to this hub's user" in log
        # The same client run as the hub's own user is served (TCP clients of the same user: test_hub_transports).
        if transport == "ws":
            assert (await asyncio.to_thread(run_as, os.getuid())) == "HTTP/1.1 101 Switching Protocols"
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 15)


@pytest.mark.parametrize("family, host", [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")])
def test_the_owner_of_a_loopback_peer_is_found(family: socket.AddressFamily, host: str) -> None:
    owners = PeerOwners()
    if owners.unavailable_reason() is not None:
        pytest.skip(f"peer owners cannot be read here: {owners.unavailable_reason()}")
    try:
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.bind((host, 0))
    except OSError as error:
        pytest.skip(f"no {host} on this machine: {error}")
    with listener:
        listener.listen()
        with socket.create_connection(listener.getsockname()[:2]) as client:
            served, peer = listener.accept()
            with served:
                local = served.getsockname()
                assert owners.owner_of(peer[:2], local[:2]) == str(os.getuid())
                assert owners.refusal(peer, local) is None
                # Reversed, the pair names our accepted socket, owned by us too; a port nobody holds names nothing.
                assert owners.owner_of(local[:2], peer[:2]) == str(os.getuid())
                assert owners.owner_of((host, 1), local[:2]) is None
                del client


def test_peer_owners_read_from_a_table_refuse_other_uids(tmp_path: Path) -> None:
    # 127.0.0.1:40000 -> 127.0.0.1:2087 owned by uid 1234, as /proc/net/tcp lists it on a little-endian machine.
    ip = "0100007F" if sys.byteorder == "little" else "7F000001"
    table = tmp_path / "tcp"
    table.write_text(
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        f"   0: {ip}:9C40 {ip}:0827 01 00000000:00000000 00:00000000 00000000  1234        0 1 1\n")
    owners = PeerOwners((table,))
    assert owners.owner_of(("127.0.0.1", 40000), ("127.0.0.1", 2087)) == "1234"
    refusal = owners.refusal(("127.0.0.1", 40000), ("127.0.0.1", 2087))
    assert refusal is not None and "uid 1234" in refusal
    assert owners.refusal(("127.0.0.1", 40001), ("127.0.0.1", 2087)) is None  # not listed: accepted
    assert owners.refusal(("192.0.2.7", 40000), ("127.0.0.1", 2087)) is None  # remote: no local owner
    assert PeerOwners((tmp_path / "missing",)).unavailable_reason() is not None


# ==================================================================================================== units
def test_handshake_policy() -> None:
    policy = HandshakePolicy.create(bind_host="127.0.0.1", origins=["https://editor.example/"])
    assert policy.refusal(None, "127.0.0.1:2087") is None
    assert policy.refusal("https://editor.example", "localhost") is None
    assert policy.refusal("https://evil.example", "localhost") is not None
    assert policy.refusal(None, "evil.example") is not None
    assert policy.refusal(None, "localhost.:2087") is None
    assert policy.refusal(None, "[::1]") is None
    bound = HandshakePolicy.create(bind_host="192.0.2.7")
    assert bound.refusal(None, "192.0.2.7:2087") is None


def test_loopback_and_exposure() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("127.5.5.5") and is_loopback("::1") and is_loopback("[::1]")
    assert is_loopback("localhost") and is_loopback("::ffff:127.0.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.0.2.7") and not is_loopback("example.com")
    assert exposure_warning("127.0.0.1") is None
    warning = exposure_warning("0.0.0.0")
    assert warning is not None and "anyone who can reach it" in warning


def test_a_network_clients_layer_is_held_to_the_untrusted_rules(tmp_path: Path) -> None:
    store = TrustStore(tmp_path / "trusted.json")
    options = {
        "trustWorkspace": True,
        "server": {
            "evil": {"command": "/bin/sh"},
            "ruff": {"command": "/tmp/evil", "args": ["x"], "env": {"LD_PRELOAD": "x.so"},
                     "settings": {"interpreter": ["/tmp/py"], "lineLength": 100}, "onlyFeatures": ["hover"]},
        },
        "language": {"python": {"servers": ["ruff"]}},
    }
    common = {"workspace_roots": [tmp_path], "init_options": options, "trust_store": store,
              "user_config_path": tmp_path / "none.toml"}
    refused = load_config(**common, client_may_choose_programs=False)
    ruff = refused.config.servers["ruff"]
    assert ruff.command == "ruff" and ruff.args == ("server",) and "LD_PRELOAD" not in ruff.env
    assert "evil" not in refused.config.servers
    assert ruff.settings == {"lineLength": 100} and ruff.only_features == ("hover",)
    assert refused.config.languages["python"].servers == ("ruff",)
    assert not refused.config.hub.trust_workspace and refused.trusted_roots == frozenset()
    assert refused.refused_client_keys == ["trustWorkspace", "server.evil", "server.ruff.command", "server.ruff.args",
                                           "server.ruff.env", "server.ruff.settings.interpreter"]
    assert not refused.layers[-1].trusted
    user = load_config(**common)
    assert user.config.servers["ruff"].command == "/tmp/evil" and "evil" in user.config.servers
    assert user.config.hub.trust_workspace and user.refused_client_keys == []


def test_settings_a_network_client_sends_lose_program_names() -> None:
    kept, dropped = strip_program_settings({"python": {"pythonPath": "/tmp/py", "analysis": {"x": 1}}}, "settings")
    assert kept == {"python": {"analysis": {"x": 1}}} and dropped == ["settings.python.pythonPath"]
    assert strip_program_settings("/tmp/py", "python.pythonPath") == (None, ["python.pythonPath"])
    assert strip_program_settings("strict", "python.analysis.typeCheckingMode") == ("strict", [])
