"""One configuration layer checked against the schema: only known keys, well-typed, numbers in range; every
problem reported as a `ConfigProblem` (source, dotted key, message), never raised.

Which layers there are and how they merge is `loader.py`; what an untrusted layer may not say is `untrusted.py`.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from typing import Any

import attrs

from lsp_hub.config.schema import (
    CONVERTER,
    HUB_SCHEMA,
    INDEX_SCHEMA,
    LANGUAGE_SCHEMA,
    SERVER_SCHEMA,
    describe_type,
    describe_value,
)

DEFAULTS_SOURCE = "built-in defaults"
CLIENT_SOURCE = "initializationOptions"
# Language keys whose values belong to one language only; a later layer's claim moves them.
CLAIM_KEYS: tuple[str, ...] = ("extensions", "language_ids", "filenames")
# Sensible ranges for the timing and restart numbers, in any table that has them (`[hub]`, `[server.NAME]`). inf
# would remove a deadline and nan makes every comparison false (a timer that fires at once or never), so a number
# outside its range is reported and dropped, and the earlier layer's value (in the end the default) applies.
NUMBER_BOUNDS: dict[str, tuple[float, float]] = {
    "request_timeout_seconds": (0.01, 3600.0),
    "initialize_timeout_seconds": (0.01, 3600.0),
    "idle_shutdown_seconds": (0.0, 7 * 24 * 3600.0),  # 0 means never
    "diagnostics_debounce_seconds": (0.0, 60.0),
    "max_restarts": (0, 1000),
    "restart_window_seconds": (0.0, 24 * 3600.0),
    "max_document_bytes": (1024, 1024**3),
    "dependents_limit": (0, 1000),
    "dependents_timeout_ms": (0, 600_000),
    "undo_depth": (0, 1000),
    "daemon_idle_exit_seconds": (0.0, 30 * 24 * 3600.0),  # 0 means never
    "cache_max_mb": (1, 1024 * 1024),
}


@attrs.define(frozen=True)
class ConfigProblem:
    """Something wrong in one layer: where, which key, and what was expected."""

    source: str  # a file path, DEFAULTS_SOURCE or CLIENT_SOURCE
    key: str  # dotted, e.g. "server.ruff.args"; empty for problems with the whole source
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.key}: {self.message}" if self.key else f"{self.source}: {self.message}"


@attrs.define
class Layer:
    """A checked layer: only known keys with well-typed values."""

    servers: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    languages: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    hub: dict[str, Any] = attrs.field(factory=dict)
    index: dict[str, Any] = attrs.field(factory=dict)


def _snake_case(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


class LayerChecker:
    """Turns one raw mapping into a `Layer`, appending what is wrong to `problems`."""

    def __init__(self, source: str, problems: list[ConfigProblem], *, accept_camel_case: bool) -> None:
        self.source = source
        self.problems = problems
        self.accept_camel_case = accept_camel_case

    def problem(self, key: str, message: str) -> None:
        self.problems.append(ConfigProblem(self.source, key, message))

    def key_name(self, key: str, schema: Mapping[str, Any]) -> str:
        if self.accept_camel_case and key not in schema and _snake_case(key) in schema:
            return _snake_case(key)
        return key

    def unknown(self, key: str, name: str, schema: Mapping[str, Any]) -> None:
        close = difflib.get_close_matches(name, list(schema), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; expected one of: {', '.join(sorted(schema))}"
        self.problem(key, f"unknown key{hint}")

    def check(self, data: Mapping[str, Any]) -> Layer:
        layer = Layer()
        sections: dict[str, Any] = {"server": None, "language": None, "hub": None, "index": None}
        for raw_key, value in data.items():
            key = self.key_name(str(raw_key), sections)
            if key not in sections:
                self.unknown(str(raw_key), key, sections)
            elif key == "hub":
                table = self.table(value, "hub", HUB_SCHEMA)
                if table is not None:
                    layer.hub = table
            elif key == "index":
                table = self.table(value, "index", INDEX_SCHEMA)
                if table is not None:
                    layer.index = table
            else:
                tables = self.named_tables(value, key, SERVER_SCHEMA if key == "server" else LANGUAGE_SCHEMA)
                if key == "server":
                    layer.servers = tables
                else:
                    layer.languages = tables
        return layer

    def named_tables(self, value: Any, section: str, schema: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        if not isinstance(value, Mapping):
            self.problem(section, f"expected a table of [{section}.NAME] tables, got {describe_value(value)}")
            return {}
        tables: dict[str, dict[str, Any]] = {}
        for name, table in value.items():
            checked = self.table(table, f"{section}.{name}", schema)
            if checked is not None:
                tables[str(name)] = checked
        return tables

    def table(self, value: Any, prefix: str, schema: Mapping[str, Any]) -> dict[str, Any] | None:
        """The checked table, or None if it must be skipped because a value has the wrong type."""
        if not isinstance(value, Mapping):
            self.problem(prefix, f"expected a table, got {describe_value(value)}")
            return None
        checked: dict[str, Any] = {}
        broken = False
        for raw_key, item in value.items():
            key = self.key_name(str(raw_key), schema)
            dotted = f"{prefix}.{raw_key}"
            if prefix == "hub" and key == "trust_workspace":
                self.problem(
                    dotted,
                    "ignored: only the editor (initializationOptions) can set this; "
                    "run `lsp-hub trust PATH` to trust a workspace",
                )
                continue
            if key == "name" and prefix != "hub":
                self.problem(dotted, f"ignored: the name comes from the table header [{prefix}]")
                continue
            if key not in schema:
                self.unknown(dotted, key, schema)
                continue
            try:
                structured = CONVERTER.structure(item, schema[key])
            except Exception:
                self.problem(
                    dotted,
                    f"expected {describe_type(schema[key])}, got {describe_value(item)}; "
                    f"[{prefix}] from this source is ignored",
                )
                broken = True
                continue
            out_of_range = number_out_of_range(key, structured)
            if out_of_range is not None:
                # Only this key is dropped: the rest of the table is well-formed and still applies.
                self.problem(dotted, f"{out_of_range}; ignored, the earlier or default value applies")
                continue
            checked[key] = structured
        return None if broken else checked


def number_out_of_range(key: str, value: Any) -> str | None:
    """Why a timing or count is unusable (not finite, or outside NUMBER_BOUNDS), or None if it is fine."""
    bounds = NUMBER_BOUNDS.get(key)
    if bounds is None or not isinstance(value, int | float) or isinstance(value, bool):
        return None
    low, high = bounds
    if not math.isfinite(value) or not low <= value <= high:
        return f"expected a finite number from {low:g} to {high:g}, got {value!r}"
    return None
