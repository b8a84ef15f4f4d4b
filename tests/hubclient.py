"""Test helpers: fake-server configurations for the hub, and what the fakes recorded."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from lsp_hub.transport.jsonrpc import ResponseFailure
from lsp_hub.transport.rawclient import HubClient

REPO_ROOT = Path(__file__).resolve().parent.parent
FAKE_SERVER = REPO_ROOT / "tests" / "fake_server.py"


def toml_value(value: Any) -> str:
    """A TOML literal for a JSON-like value (inline tables for dicts)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def fake_server_config(servers: dict[str, dict[str, Any]], languages: dict[str, dict[str, Any]],
                       hub: dict[str, Any] | None = None, record_dir: Path | None = None) -> str:
    """A TOML --config that defines fake servers (each from a fake_server.py spec) and languages using them.

    A spec's `_config` entries become keys of the server's table (command, except_features, settings ...).
    """
    lines: list[str] = []
    if hub:
        lines.append("[hub]")
        lines += [f"{key} = {toml_value(value)}" for key, value in hub.items()]
    for name, spec in servers.items():
        overrides = dict(spec.get("_config", {}))
        spec = {"name": name, **{k: v for k, v in spec.items() if k != "_config"}}
        args = [str(FAKE_SERVER), "--spec", json.dumps(spec)]
        if record_dir is not None:
            args += ["--record", str(record_dir / f"{name}.jsonl")]
        table: dict[str, Any] = {"command": sys.executable, "args": args, "root_markers": ["fake.root", ".git"]}
        table.update(overrides)
        lines.append(f"[server.{name}]")
        lines += [f"{key} = {toml_value(value)}" for key, value in table.items()]
    for name, language in languages.items():
        lines.append(f"[language.{name}]")
        lines += [f"{key} = {toml_value(value)}" for key, value in language.items()]
    return "\n".join(lines) + "\n"


def recorded(record_dir: Path, name: str) -> list[dict[str, Any]]:
    """What a fake server received, one dict per message (see fake_server.py --record)."""
    path = record_dir / f"{name}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


__all__ = ["FAKE_SERVER", "REPO_ROOT", "HubClient", "ResponseFailure", "fake_server_config", "recorded"]
