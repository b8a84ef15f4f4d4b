"""A cloned repository's JSON or YAML file cannot make the hub send a request to an address the repository chose,
with the real vscode-json-language-server and yaml-language-server: each downloads the schema a file names
(`"$schema": "http://..."`, `# yaml-language-server: $schema=http://...`) unless told the client fetches it. In an
untrusted workspace the hub tells them so (`pin_untrusted_values`, `untrusted_notifications`), the client declines,
and the file says the schema could not be loaded; once the user trusts the workspace, the schema is downloaded."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from lsp_hub.transport.rawclient import HubClient
from tests.test_untrusted_code import trust

pytestmark = [pytest.mark.asyncio, pytest.mark.real_server]

SLOW = 60.0
StartHub = Callable[..., Awaitable[HubClient]]
# The schema says "a" is a string; the file's "a" is a number: a warning shows that the schema was read.
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}


@pytest.fixture
def schema_server() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on loopback serving SCHEMA at any path: (its base URL, the paths asked for)."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            body = json.dumps(SCHEMA).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", asked
    server.shutdown()
    server.server_close()


def messages(client: HubClient, uri: str) -> list[str]:
    return [diagnostic.get("message", "") for diagnostic in client.diagnostics.get(uri, [])]


# (server, marker file, file, its language id, its text naming the schema at {url})
CASES = [
    pytest.param(
        "vscode-json-language-server",
        "package.json",
        "data.json",
        "json",
        '{{"$schema": "{url}", "a": 1}}\n',
        id="json",
    ),
    pytest.param(
        "yaml-language-server",
        ".git/config",
        "conf.yaml",
        "yaml",
        "# yaml-language-server: $schema={url}\na: 1\n",
        id="yaml",
    ),
]


@pytest.mark.parametrize(("server", "marker", "name", "language_id", "text"), CASES)
async def test_a_schema_url_in_a_file_is_fetched_only_in_a_trusted_workspace(
    tmp_path: Path,
    hub_at: StartHub,
    require_binary: Callable[[str], str],
    schema_server: tuple[str, list[str]],
    server: str,
    marker: str,
    name: str,
    language_id: str,
    text: str,
) -> None:
    require_binary(server)
    base, asked = schema_server
    root = tmp_path / "cloned"
    (root / marker).parent.mkdir(parents=True, exist_ok=True)
    (root / marker).write_text("{}\n")
    (root / name).write_text(text.format(url=f"{base}/planted.json"))

    untrusted = await hub_at(root)
    uri = untrusted.open(root / name, language_id)
    await untrusted.wait_for(
        lambda: any("planted.json" in message and "not trusted" in message for message in messages(untrusted, uri)),
        timeout=SLOW,
        what=f"{server} saying the planted schema was not loaded, and why",
    )
    assert asked == [], f"the untrusted workspace's schema URL was fetched: {asked}"
    assert not any("Incorrect type" in message for message in messages(untrusted, uri))
    await untrusted.stop()

    trust(root, tmp_path)
    trusted = await hub_at(root)
    uri = trusted.open(root / name, language_id)
    await trusted.wait_for(
        lambda: any("Incorrect type" in message for message in messages(trusted, uri)),
        timeout=SLOW,
        what=f"{server} validating {name} against the downloaded schema",
    )
    assert asked == ["/planted.json"]
