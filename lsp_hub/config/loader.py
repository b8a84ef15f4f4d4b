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
or count that is not finite or lies outside NUMBER_BOUNDS. Checking one layer is `layers.py`.

Trust: a project `.lsp-hub.toml` comes with a cloned repository. Unless its root is trusted (the user ran
`lsp-hub trust PATH`, or the client says the editor trusts the workspace), it may not choose programs: its
`command`, `args`, `env`, `version_command` and `version_args` keys are dropped, servers it would define are
ignored, and so are settings whose names suggest a program or code to load (`pythonPath`, `tsserver.path`,
`plugins`, `npmLocation`, gopls' `env`...) at any depth of `settings` and `initialization_options`, tables inside
lists included, since a server told to run one would run what the repository chose. Nor may it take an extension,
language id or file name from the language an earlier layer gave it to (`[language.evil] extensions = ["py"]`
would leave .py files without their servers). Every dropped key is reported (`untrusted.py`).

The client layer is trusted only when the client speaks for the user: the editor that started the hub over stdio
(or a same-user client of the daemon's socket). Any other client (TCP, WebSocket) is held to the untrusted
project's rules, and its trust flag is ignored: whoever can reach a port is not thereby the user.
"""

from __future__ import annotations

import functools
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from lsp_hub.config.layers import CLAIM_KEYS, CLIENT_SOURCE, DEFAULTS_SOURCE, ConfigProblem, Layer, LayerChecker
from lsp_hub.config.model import Config, HubOptions, IndexOptions, LanguageSpec, ServerSpec
from lsp_hub.config.paths import PROJECT_CONFIG_NAME, user_config_file
from lsp_hub.config.reading import (
    MAX_NESTING,
    ConfigFileRefused,
    nests_deeper_than,
    parse_config_toml,
    read_config_text,
)
from lsp_hub.config.schema import CONVERTER, describe_value
from lsp_hub.config.trust import TrustStore
from lsp_hub.config.untrusted import NETWORK_CLIENT_HINT, restrict_untrusted

# Server keys holding tables that merge recursively across layers.
MERGED_TABLE_KEYS: frozenset[str] = frozenset(
    {"env", "initialization_options", "settings", "pin_untrusted", "pin_untrusted_programs", "pin_untrusted_values",
     "untrusted_notifications"})
# Set by the editor when its own workspace trust covers this workspace (VS Code sends the camelCase spelling).
CLIENT_TRUST_KEYS: tuple[str, ...] = ("trust_workspace", "trustWorkspace")


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


def _read_toml(
    path: Path, source: str, problems: list[ConfigProblem], *, required: bool, confine_to: Path | None = None
) -> tuple[Any, str]:
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


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` on top of `base`, table by table (`override` wins where a key is no table on both sides)."""
    merged = dict(base)
    for key, value in override.items():
        current = merged.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            merged[key] = deep_merge(current, value)
        else:
            merged[key] = value
    return merged


def _merge_table(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        current = merged.get(key)
        if key in MERGED_TABLE_KEYS and isinstance(value, Mapping) and isinstance(current, Mapping):
            merged[key] = deep_merge(current, value)
        else:
            merged[key] = value
    return merged


def _apply(merged: _Merged, layer: Layer, source: str) -> None:
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


def _build(merged: _Merged, problems: list[ConfigProblem], trust_workspace: bool) -> Config:
    servers: dict[str, ServerSpec] = {}
    for name, table in merged.servers.items():
        if not table.get("command"):
            problems.append(
                ConfigProblem(
                    merged.server_origin.get(name, DEFAULTS_SOURCE),
                    f"server.{name}",
                    "no command: every server needs `command`; server ignored",
                )
            )
            continue
        servers[name] = CONVERTER.structure({"name": name, **table}, ServerSpec)
    languages: dict[str, LanguageSpec] = {}
    for name, table in merged.languages.items():
        listed = tuple(table.get("servers", ()))
        unknown = [server for server in listed if server not in servers]
        if unknown:
            source = merged.language_servers_origin.get(name, DEFAULTS_SOURCE)
            problems.append(
                ConfigProblem(
                    source, f"language.{name}.servers", f"unknown server(s) {', '.join(map(repr, unknown))}; left out"
                )
            )
            table = {**table, "servers": tuple(server for server in listed if server in servers)}
        languages[name] = CONVERTER.structure({"name": name, **table}, LanguageSpec)
    hub = CONVERTER.structure({**merged.hub, "trust_workspace": trust_workspace}, HubOptions)
    index = CONVERTER.structure(merged.index, IndexOptions)
    return Config(servers=servers, languages=languages, hub=hub, index=index)


def _client_trust_flag(
    options: Mapping[str, Any], problems: list[ConfigProblem], *, may_trust: bool
) -> tuple[bool, dict[str, Any]]:
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

    def add_layer(
        data: Any,
        source: str,
        kind: str,
        *,
        accept_camel_case: bool = False,
        restrict: Callable[[Layer], None] | None = None,
    ) -> None:
        if not isinstance(data, Mapping):
            problems.append(ConfigProblem(source, "", f"expected a table, got {describe_value(data)}"))
            return
        layer = LayerChecker(source, problems, accept_camel_case=accept_camel_case).check(data)
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
    client_trusted, client_options = (
        (False, None)
        if init_options is None
        else _client_trust_flag(init_options, problems, may_trust=client_may_choose_programs)
    )
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
            restrict = (
                None
                if trusted
                else functools.partial(
                    restrict_untrusted,
                    servers=merged.servers,
                    languages=merged.languages,
                    source=source,
                    hint=f"workspace not trusted; run `lsp-hub trust {root}`",
                    problems=problems,
                )
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
        restrict = (
            None
            if client_may_choose_programs
            else functools.partial(
                restrict_untrusted,
                servers=merged.servers,
                languages=merged.languages,
                source=CLIENT_SOURCE,
                hint=NETWORK_CLIENT_HINT,
                problems=problems,
            )
        )
        add_layer(client_options, CLIENT_SOURCE, "client", accept_camel_case=True, restrict=restrict)
    refused_client_keys = [
        problem.key
        for problem in problems
        if problem.source == CLIENT_SOURCE and NETWORK_CLIENT_HINT in problem.message
    ]

    config = _build(merged, problems, client_trusted)
    return LoadedConfig(
        config=config,
        problems=problems,
        trusted_roots=frozenset(trusted_roots),
        layers=layers,
        refused_client_keys=refused_client_keys,
    )
