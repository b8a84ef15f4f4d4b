"""What a layer that may not choose programs (an untrusted project's `.lsp-hub.toml`, a network client's options)
is refused: new servers, program keys, settings whose names may name a program (at any depth, inside lists too),
and taking an extension, language id or file name from the language an earlier layer gave it to. Every dropped
key is reported."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from lsp_hub.config.layers import CLAIM_KEYS, CLIENT_SOURCE, ConfigProblem, Layer

# Keys that choose which program runs and how: only trusted layers may set them.
PROGRAM_KEYS: tuple[str, ...] = (
    "command", "args", "env", "version_command", "version_args", "pin_untrusted", "pin_untrusted_programs",
    "pin_untrusted_values", "untrusted_notifications", "untrusted_venv_packages", "trusted_only")
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
CLAIM_WORDS: dict[str, str] = {"extensions": "extension", "language_ids": "language id", "filenames": "file name"}
CLAIM_SHOWN: dict[str, str] = {"extensions": ".{}", "language_ids": "{}", "filenames": "{}"}
# Why a network client's program-choosing keys are dropped, and where they belong instead.
NETWORK_CLIENT_HINT = (
    "only the editor that started lsp-hub may choose programs or trust a workspace; "
    "put this in the user config file or run `lsp-hub trust PATH`"
)


def restrict_untrusted(
    layer: Layer,
    servers: Mapping[str, Any],
    languages: Mapping[str, Mapping[str, Any]],
    source: str,
    hint: str,
    problems: list[ConfigProblem],
) -> None:
    """Drop what an untrusted layer may not do: define servers, choose programs, or take an extension, language id
    or file name away from the language an earlier layer gave it to."""
    for name in list(layer.servers):
        if name not in servers:
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
                table[key] = _unclaimed(table[key], name, key, languages, source, problems)


def _unclaimed(
    claimed: Sequence[str],
    language: str,
    key: str,
    languages: Mapping[str, Mapping[str, Any]],
    source: str,
    problems: list[ConfigProblem],
) -> tuple[str, ...]:
    """The values of an untrusted `[language.NAME] key` list that no other language owns yet; each other one is
    reported. Otherwise a cloned repository could send .py files to a language of its own, with no server."""
    kept: list[str] = []
    for value in claimed:
        owner = next(
            (other for other, table in languages.items() if other != language and value in table.get(key, ())), None
        )
        if owner is None:
            kept.append(value)
            continue
        who = "this client" if source == CLIENT_SOURCE else "an untrusted workspace"
        problems.append(
            ConfigProblem(
                source,
                f"language.{language}.{key}",
                f"{CLAIM_WORDS[key]} {CLAIM_SHOWN[key].format(value)} belongs to {owner}; {who} cannot reassign it",
            )
        )
    return tuple(kept)


def _without_program_settings(
    value: Mapping[str, Any], prefix: str, source: str, hint: str, problems: list[ConfigProblem]
) -> dict[str, Any]:
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
        return [
            _without_program_values(element, f"{prefix}[{index}]", source, hint, problems)
            for index, element in enumerate(item)
        ]
    return item


def strip_program_settings(value: Any, prefix: str) -> tuple[Any, list[str]]:
    """Settings from a client that may not choose programs, without the keys that may name one; and those keys."""
    if PROGRAM_SETTING_NAME.search(prefix.rsplit(".", 1)[-1]):
        return None, [prefix]  # a section asked for by a name that may name a program ("python.pythonPath")
    dropped: list[ConfigProblem] = []
    kept = _without_program_values(value, prefix, CLIENT_SOURCE, NETWORK_CLIENT_HINT, dropped)
    return kept, [problem.key for problem in dropped]
