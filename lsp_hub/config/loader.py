"""Layered configuration loading: defaults, user file, project files, --config, the client's lspHub options.

Later layers win, table by table and key by key: a layer holding `[server.ruff] disabled = true` keeps every other
key ruff got from earlier layers. Tables inside a server (`env`, `initialization_options`, `settings`,
`pin_untrusted`) merge recursively; lists replace. A language that lists an extension, language id or file name
takes it away from the languages of earlier layers, so a later layer can re-assign `py` without editing
`[language.python]`.

Errors never stop loading. A file is read only if it is a regular file of at most 1 MB of UTF-8, nested at most
100 levels, with dotted keys of at most 20 parts (`reading.py`); a project file's symbolic link must stay inside its
workspace. A file refused for that, or that is not valid TOML, is skipped whole. A value of the wrong type skips the
table that holds it (`[server.ruff]` of that file only: a half-applied server table could start a server with
half its arguments). An unknown key is reported and dropped; the rest of its table still applies. So is a timing
or count that is not finite or lies outside NUMBER_BOUNDS.

Trust: a project `.lsp-hub.toml` comes with a cloned repository. Unless its root is trusted (the user ran
`lsp-hub trust PATH`, or the client says the editor trusts the workspace), it may not choose programs: its
`command`, `args`, `env`, `version_command` and `version_args` keys are dropped, servers it would define are
ignored, and so are settings whose names suggest a program or code to load (`pythonPath`, `tsserver.path`,
`plugins`, `npmLocation`, gopls' `env`...) at any depth of `settings` and `initialization_options`, tables inside
lists included, since a server told to run one would run what the repository chose. Nor may it take an extension,
language id or file name from the language an earlier layer gave it to (`[language.evil] extensions = ["py"]`
would leave .py files without their servers). Every dropped key is reported.

The client layer is trusted only when the client speaks for the user: the editor that started the hub over stdio
(or a same-user client of the daemon's socket). Any other client (TCP, WebSocket) is held to the untrusted
project's rules, and its trust flag is ignored: whoever can reach a port is not thereby the user.
"""

from __future__ import annotations

import difflib
import functools
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from lsp_hub.config.model import Config, HubOptions, IndexOptions, LanguageSpec, ServerSpec
from lsp_hub.config.paths import PROJECT_CONFIG_NAME, user_config_file
from lsp_hub.config.reading import (
    MAX_NESTING,
    ConfigFileRefused,
    nests_deeper_than,
    parse_config_toml,
    read_config_text,
)
from lsp_hub.config.schema import (
    CONVERTER,
    HUB_SCHEMA,
    INDEX_SCHEMA,
    LANGUAGE_SCHEMA,
    SERVER_SCHEMA,
    describe_type,
    describe_value,
)
from lsp_hub.config.trust import TrustStore

DEFAULTS_SOURCE = "built-in defaults"
CLIENT_SOURCE = "initializationOptions"

# Keys that choose which program runs and how: only trusted layers may set them.
PROGRAM_KEYS: tuple[str, ...] = ("command", "args", "env", "version_command", "version_args", "pin_untrusted")
# Setting names that commonly point a server at a program or code to run: python.pythonPath, tsserver.path and
# fallbackPath, typescript-language-server's plugins (tsserver loads their JavaScript) and npmLocation, gopls' env
# (GOFLAGS=-toolexec=...) and buildFlags, rust-analyzer's overrideCommand and procMacro.server, java.home... An
# untrusted project may not set them at any depth of settings or initialization_options, inside lists included.
PROGRAM_SETTING_NAME = re.compile(
    r"path"  # anywhere: pythonPath, tsserver.path, fallbackPath, venvPath, pathToNode, extraPaths
    r"|plugin"  # anywhere: plugins, globalPlugins, pluginProbeLocations
    r"|(executable|interpreter|commands?|cmd|binary|program|runtime|launcher|wrapper|location|home|flags|args"
    r"|arguments)$"
    r"|^(tsdk|env|environment|extraenv|server|venv|exe|node|npm)$",
    re.IGNORECASE,
)
# Server keys holding tables that merge recursively across layers.
MERGED_TABLE_KEYS: frozenset[str] = frozenset({"env", "initialization_options", "settings", "pin_untrusted"})
# Language keys whose values belong to one language only; a later layer's claim moves them.
CLAIM_KEYS: tuple[str, ...] = ("extensions", "language_ids", "filenames")
CLAIM_WORDS: dict[str, str] = {"extensions": "extension", "language_ids": "language id", "filenames": "file name"}
CLAIM_SHOWN: dict[str, str] = {"extensions": ".{}", "language_ids": "{}", "filenames": "{}"}
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
    "max_document_bytes": (1024, 1024 ** 3),
    "dependents_limit": (0, 1000),
    "dependents_timeout_ms": (0, 600_000),
    "undo_depth": (0, 1000),
    "daemon_idle_exit_seconds": (0.0, 30 * 24 * 3600.0),  # 0 means never
    "cache_max_mb": (1, 1024 * 1024),
}
# Set by the editor when its own workspace trust covers this workspace (VS Code sends the camelCase spelling).
CLIENT_TRUST_KEYS: tuple[str, ...] = ("trust_workspace", "trustWorkspace")
# Why a network client's program-choosing keys are dropped, and where they belong instead.
NETWORK_CLIENT_HINT = ("only the editor that started lsp-hub may choose programs or trust a workspace; "
                       "put this in the user config file or run `lsp-hub trust PATH`")


@attrs.define(frozen=True)
class ConfigProblem:
    """Something wrong in one layer: where, which key, and what was expected."""

    source: str  # a file path, DEFAULTS_SOURCE or CLIENT_SOURCE
    key: str  # dotted, e.g. "server.ruff.args"; empty for problems with the whole source
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.key}: {self.message}" if self.key else f"{self.source}: {self.message}"


@attrs.define(frozen=True)
class ConfigLayer:
    """One source that was considered, for `lsp-hub doctor` and logs."""

    source: str
    kind: str  # "defaults", "user", "project", "cli", "client"
    status: str  # "loaded", "not found", "invalid", "unreadable", "refused" (not a small regular file), "not read"
    trusted: bool = True


@attrs.define
class LoadedConfig:
    config: Config
    problems: list[ConfigProblem]
    # Workspace roots whose project files and local binaries are honoured (as given and with symlinks resolved).
    trusted_roots: frozenset[Path]
    layers: list[ConfigLayer] = attrs.field(factory=list)
    # Keys of initializationOptions.lspHub dropped because the client may not choose programs ("server.x.command").
    refused_client_keys: list[str] = attrs.field(factory=list)


# ==================================================================================================== layers
@attrs.define
class _Layer:
    """A checked layer: only known keys with well-typed values."""

    servers: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    languages: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    hub: dict[str, Any] = attrs.field(factory=dict)
    index: dict[str, Any] = attrs.field(factory=dict)


def _snake_case(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


class _LayerChecker:
    """Turns one raw mapping into a _Layer, appending what is wrong to `problems`."""

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

    def check(self, data: Mapping[str, Any]) -> _Layer:
        layer = _Layer()
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
                self.problem(dotted, "ignored: only the editor (initializationOptions) can set this; "
                             "run `lsp-hub trust PATH` to trust a workspace")
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
                self.problem(dotted, f"expected {describe_type(schema[key])}, got {describe_value(item)}; "
                             f"[{prefix}] from this source is ignored")
                broken = True
                continue
            out_of_range = _number_out_of_range(key, structured)
            if out_of_range is not None:
                # Only this key is dropped: the rest of the table is well-formed and still applies.
                self.problem(dotted, f"{out_of_range}; ignored, the earlier or default value applies")
                continue
            checked[key] = structured
        return None if broken else checked


def _number_out_of_range(key: str, value: Any) -> str | None:
    """Why a timing or count is unusable (not finite, or outside NUMBER_BOUNDS), or None if it is fine."""
    bounds = NUMBER_BOUNDS.get(key)
    if bounds is None or not isinstance(value, int | float) or isinstance(value, bool):
        return None
    low, high = bounds
    if not math.isfinite(value) or not low <= value <= high:
        return f"expected a finite number from {low:g} to {high:g}, got {value!r}"
    return None


def _read_toml(path: Path, source: str, problems: list[ConfigProblem], *, required: bool,
               confine_to: Path | None = None) -> tuple[Any, str]:
    """The parsed file and a status; missing optional files are silently absent. `confine_to`: the workspace root
    a project file's symbolic link must stay inside."""
    try:
        return parse_config_toml(read_config_text(path, confine_to=confine_to)), "loaded"
    except FileNotFoundError:
        if required:
            problems.append(ConfigProblem(source, "", "file not found"))
        return None, "not found"
    except ConfigFileRefused as refused:
        problems.append(ConfigProblem(source, "", f"{refused.reason}; file ignored"))
        return None, "refused"
    except OSError as error:
        problems.append(ConfigProblem(source, "", f"cannot read file: {error.strerror or error}"))
        return None, "unreadable"
    except tomllib.TOMLDecodeError as error:
        problems.append(ConfigProblem(source, "", f"invalid TOML, file ignored: {error}"))
        return None, "invalid"


def _load_defaults_text() -> str:
    return resources.files("lsp_hub.config").joinpath("defaults.toml").read_text(encoding="utf-8")


# ==================================================================================================== merging
@attrs.define
class _Merged:
    servers: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    languages: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    hub: dict[str, Any] = attrs.field(factory=dict)
    index: dict[str, Any] = attrs.field(factory=dict)
    # Which source first defined each server, and last set each language's server list (for later problems).
    server_origin: dict[str, str] = attrs.field(factory=dict)
    language_servers_origin: dict[str, str] = attrs.field(factory=dict)


def _deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        current = merged.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            merged[key] = _deep_merge(current, value)
        else:
            merged[key] = value
    return merged


def _merge_table(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        current = merged.get(key)
        if key in MERGED_TABLE_KEYS and isinstance(value, Mapping) and isinstance(current, Mapping):
            merged[key] = _deep_merge(current, value)
        else:
            merged[key] = value
    return merged


def _apply(merged: _Merged, layer: _Layer, source: str) -> None:
    for name, table in layer.servers.items():
        merged.server_origin.setdefault(name, source)
        merged.servers[name] = _merge_table(merged.servers.get(name, {}), table)
    for name, table in layer.languages.items():
        for key in CLAIM_KEYS:
            claimed = set(table.get(key, ()))
            if not claimed:
                continue
            for other_name, other in merged.languages.items():
                if other_name != name and key in other:
                    other[key] = tuple(value for value in other[key] if value not in claimed)
        if "servers" in table:
            merged.language_servers_origin[name] = source
        merged.languages[name] = _merge_table(merged.languages.get(name, {}), table)
    merged.hub = _merge_table(merged.hub, layer.hub)
    merged.index = _merge_table(merged.index, layer.index)


def _restrict_untrusted(layer: _Layer, merged: _Merged, source: str, hint: str,
                        problems: list[ConfigProblem]) -> None:
    """Drop what an untrusted layer may not do: define servers, choose programs, or take an extension, language id
    or file name away from the language an earlier layer gave it to."""
    for name in list(layer.servers):
        if name not in merged.servers:
            problems.append(ConfigProblem(source, f"server.{name}", f"new server ignored: {hint}"))
            del layer.servers[name]
            continue
        table = layer.servers[name]
        for key in PROGRAM_KEYS:
            if key in table:
                problems.append(ConfigProblem(source, f"server.{name}.{key}", f"ignored: {hint}"))
                del table[key]
        for key in ("settings", "initialization_options"):
            if isinstance(table.get(key), Mapping):
                table[key] = _without_program_settings(table[key], f"server.{name}.{key}", source, hint, problems)
    for name, table in layer.languages.items():
        for key in CLAIM_KEYS:
            if key in table:
                table[key] = _unclaimed(table[key], name, key, merged, source, problems)


def _unclaimed(claimed: Sequence[str], language: str, key: str, merged: _Merged, source: str,
               problems: list[ConfigProblem]) -> tuple[str, ...]:
    """The values of an untrusted `[language.NAME] key` list that no other language owns yet; each other one is
    reported. Otherwise a cloned repository could send .py files to a language of its own, with no server."""
    kept: list[str] = []
    for value in claimed:
        owner = next((other for other, table in merged.languages.items()
                      if other != language and value in table.get(key, ())), None)
        if owner is None:
            kept.append(value)
            continue
        who = "this client" if source == CLIENT_SOURCE else "an untrusted workspace"
        problems.append(ConfigProblem(source, f"language.{language}.{key}",
                                      f"{CLAIM_WORDS[key]} {CLAIM_SHOWN[key].format(value)} belongs to {owner}; "
                                      f"{who} cannot reassign it"))
    return tuple(kept)


def _without_program_settings(value: Mapping[str, Any], prefix: str, source: str, hint: str,
                              problems: list[ConfigProblem]) -> dict[str, Any]:
    """`value` without keys that may name a program, at every depth (tables inside lists too), each one reported."""
    kept: dict[str, Any] = {}
    for key, item in value.items():
        dotted = f"{prefix}.{key}"
        if PROGRAM_SETTING_NAME.search(str(key)):
            problems.append(ConfigProblem(source, dotted, f"ignored: it may name a program to run; {hint}"))
        else:
            kept[key] = _without_program_values(item, dotted, source, hint, problems)
    return kept


def _without_program_values(item: Any, prefix: str, source: str, hint: str, problems: list[ConfigProblem]) -> Any:
    """One setting's value, filtered: a list is walked element by element (`plugins = [{...}]` hides one level down
    under an innocent name like `extras = [{ plugins = [...] }]`)."""
    if isinstance(item, Mapping):
        return _without_program_settings(item, prefix, source, hint, problems)
    if isinstance(item, list | tuple):
        return [_without_program_values(element, f"{prefix}[{index}]", source, hint, problems)
                for index, element in enumerate(item)]
    return item


def strip_program_settings(value: Any, prefix: str) -> tuple[Any, list[str]]:
    """Settings from a client that may not choose programs, without the keys that may name one; and those keys."""
    if PROGRAM_SETTING_NAME.search(prefix.rsplit(".", 1)[-1]):
        return None, [prefix]  # a section asked for by a name that may name a program ("python.pythonPath")
    dropped: list[ConfigProblem] = []
    kept = _without_program_values(value, prefix, CLIENT_SOURCE, NETWORK_CLIENT_HINT, dropped)
    return kept, [problem.key for problem in dropped]


def _build(merged: _Merged, problems: list[ConfigProblem], trust_workspace: bool) -> Config:
    servers: dict[str, ServerSpec] = {}
    for name, table in merged.servers.items():
        if not table.get("command"):
            problems.append(ConfigProblem(merged.server_origin.get(name, DEFAULTS_SOURCE), f"server.{name}",
                                          "no command: every server needs `command`; server ignored"))
            continue
        servers[name] = CONVERTER.structure({"name": name, **table}, ServerSpec)
    languages: dict[str, LanguageSpec] = {}
    for name, table in merged.languages.items():
        listed = tuple(table.get("servers", ()))
        unknown = [server for server in listed if server not in servers]
        if unknown:
            source = merged.language_servers_origin.get(name, DEFAULTS_SOURCE)
            problems.append(ConfigProblem(source, f"language.{name}.servers",
                                          f"unknown server(s) {', '.join(map(repr, unknown))}; left out"))
            table = {**table, "servers": tuple(server for server in listed if server in servers)}
        languages[name] = CONVERTER.structure({"name": name, **table}, LanguageSpec)
    hub = CONVERTER.structure({**merged.hub, "trust_workspace": trust_workspace}, HubOptions)
    index = CONVERTER.structure(merged.index, IndexOptions)
    return Config(servers=servers, languages=languages, hub=hub, index=index)


def _client_trust_flag(options: Mapping[str, Any], problems: list[ConfigProblem], *,
                       may_trust: bool) -> tuple[bool, dict[str, Any]]:
    """The editor's workspace-trust flag (top level or inside `hub`), and the options without it."""
    remaining = dict(options)
    trusted = False
    hub = remaining.get("hub")
    candidates: list[tuple[str, Any]] = [(key, remaining.pop(key)) for key in CLIENT_TRUST_KEYS if key in remaining]
    if isinstance(hub, Mapping):
        hub = dict(hub)
        candidates += [(f"hub.{key}", hub.pop(key)) for key in CLIENT_TRUST_KEYS if key in hub]
        remaining["hub"] = hub
    for key, value in candidates:
        if not may_trust:
            problems.append(ConfigProblem(CLIENT_SOURCE, key, f"ignored: {NETWORK_CLIENT_HINT}"))
        elif isinstance(value, bool):
            trusted = trusted or value
        else:
            problems.append(ConfigProblem(CLIENT_SOURCE, key, f"expected true or false, got {describe_value(value)}"))
    return trusted, remaining


def _unique_roots(roots: Sequence[Path]) -> list[Path]:
    seen: set[Path] = set()
    unique: list[Path] = []
    for root in roots:
        absolute = Path(os.path.abspath(root))
        if absolute.resolve() not in seen:
            seen.add(absolute.resolve())
            unique.append(absolute)
    return unique


def load_config(
    *,
    workspace_roots: Sequence[Path],
    cli_config: Path | None = None,
    init_options: Mapping[str, Any] | None = None,
    trust_store: TrustStore | None = None,
    user_config_path: Path | None = None,
    client_may_choose_programs: bool = True,
    unread_project_reason: str | None = None,
) -> LoadedConfig:
    """Load every layer, later winning: defaults, user file, each root's `.lsp-hub.toml`, `--config`, the client.

    `init_options` is the client's `initializationOptions.lspHub` (same schema; camelCase keys accepted). It may
    hold `trust_workspace`/`trustWorkspace: true`, meaning the editor trusts the workspace for this session.
    With `client_may_choose_programs` false (a network client), that flag and every program-choosing key of the
    client layer are dropped and listed in `refused_client_keys`.
    With `unread_project_reason`, no root's project file is read: each is reported with that reason (the session
    passes it when reading them took too long).
    Never raises for a bad layer: problems come back in `LoadedConfig.problems`.
    """
    problems: list[ConfigProblem] = []
    layers: list[ConfigLayer] = []
    merged = _Merged()
    store = trust_store if trust_store is not None else TrustStore()

    def add_layer(data: Any, source: str, kind: str, *, accept_camel_case: bool = False,
                  restrict: Callable[[_Layer], None] | None = None) -> None:
        if not isinstance(data, Mapping):
            problems.append(ConfigProblem(source, "", f"expected a table, got {describe_value(data)}"))
            return
        layer = _LayerChecker(source, problems, accept_camel_case=accept_camel_case).check(data)
        if restrict is not None:
            restrict(layer)
        _apply(merged, layer, source)

    # 1. Built-in defaults.
    try:
        add_layer(tomllib.loads(_load_defaults_text()), DEFAULTS_SOURCE, "defaults")
        layers.append(ConfigLayer(DEFAULTS_SOURCE, "defaults", "loaded"))
    except (OSError, tomllib.TOMLDecodeError) as error:  # a packaging mistake; still serve with the other layers
        problems.append(ConfigProblem(DEFAULTS_SOURCE, "", f"cannot load: {error}"))
        layers.append(ConfigLayer(DEFAULTS_SOURCE, "defaults", "invalid"))

    # 2. The user's file.
    user_path = user_config_path if user_config_path is not None else user_config_file()
    data, status = _read_toml(user_path, str(user_path), problems, required=False)
    layers.append(ConfigLayer(str(user_path), "user", status))
    if data is not None:
        add_layer(data, str(user_path), "user")

    # 3. Each workspace root's project file, trusted or not.
    client_trusted, client_options = (False, None) if init_options is None else \
        _client_trust_flag(init_options, problems, may_trust=client_may_choose_programs)
    store.list()
    trust_store_problem = store.problem  # a corrupt trust file is reported even when no root asks
    trusted_roots: set[Path] = set()
    for root in _unique_roots(workspace_roots):
        trusted = client_trusted or store.is_trusted(root)
        if trusted:
            trusted_roots.update({root, root.resolve()})
        project_path = root / PROJECT_CONFIG_NAME
        source = str(project_path)
        if unread_project_reason is not None:
            problems.append(ConfigProblem(source, "", unread_project_reason))
            layers.append(ConfigLayer(source, "project", "not read", trusted))
            continue
        data, status = _read_toml(project_path, source, problems, required=False, confine_to=root)
        layers.append(ConfigLayer(source, "project", status, trusted))
        if data is not None:
            restrict = None if trusted else functools.partial(
                _restrict_untrusted, merged=merged, source=source,
                hint=f"workspace not trusted; run `lsp-hub trust {root}`", problems=problems
            )
            add_layer(data, source, "project", restrict=restrict)
    if trust_store_problem is not None:
        problems.append(ConfigProblem(str(store.path), "", trust_store_problem.removeprefix(f"{store.path}: ")))

    # 4. --config PATH.
    if cli_config is not None:
        data, status = _read_toml(cli_config, str(cli_config), problems, required=True)
        layers.append(ConfigLayer(str(cli_config), "cli", status))
        if data is not None:
            add_layer(data, str(cli_config), "cli")

    # 5. The client's initializationOptions.lspHub: the user's own editor settings when the client is the user's.
    if client_options is not None and nests_deeper_than(client_options, MAX_NESTING):
        problems.append(ConfigProblem(CLIENT_SOURCE, "", f"nests deeper than {MAX_NESTING} levels; ignored"))
        client_options = None
    if client_options is not None:
        layers.append(ConfigLayer(CLIENT_SOURCE, "client", "loaded", client_may_choose_programs))
        restrict = None if client_may_choose_programs else functools.partial(
            _restrict_untrusted, merged=merged, source=CLIENT_SOURCE, hint=NETWORK_CLIENT_HINT, problems=problems)
        add_layer(client_options, CLIENT_SOURCE, "client", accept_camel_case=True, restrict=restrict)
    refused_client_keys = [problem.key for problem in problems
                           if problem.source == CLIENT_SOURCE and NETWORK_CLIENT_HINT in problem.message]

    config = _build(merged, problems, client_trusted)
    return LoadedConfig(config=config, problems=problems, trusted_roots=frozenset(trusted_roots), layers=layers,
                        refused_client_keys=refused_client_keys)
