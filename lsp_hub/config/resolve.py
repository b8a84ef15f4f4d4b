"""Finding a server's executable: the workspace's own tool directories first (if trusted), then PATH, then the
hub's own tool directories.

An untrusted workspace must never get to choose the program lsp-hub starts, so its `.venv/bin` and
`node_modules/.bin` are only looked at to tell the user what was passed over. PATH gets the same rule: relative
entries (`node_modules/.bin:.venv/bin:$PATH`, common in project shells) are never searched, since they mean whatever
directory a process happens to run in, and for an untrusted workspace absolute entries inside it are passed over
too. The result is always an absolute path. Servers inherit the same cleaned PATH (`child_search_path`), or a
`#!/usr/bin/env node` script started in the workspace would find the workspace's `node`.

The hub's own tool directories (`hub_tool_directories`: the scripts directory of the interpreter running lsp-hub,
and the `.tools/npm` that `make setup` fills in the checkout lsp-hub runs from) are searched after PATH, so a
server installed with lsp-hub is found with no sourced script or variable, even with an empty PATH, while a user
who puts another copy on PATH still gets that one. They are the hub's, not the workspace's, so the workspace rule
does not pass them over: whoever can write there already chose the code of the hub that is running.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import site
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from lsp_hub.config.model import ServerSpec
from lsp_hub.platform.commands import System, find_program, is_executable_file, launch_for

# Where a workspace keeps its own tools, searched in this order before PATH.
WORKSPACE_BIN_DIRS: tuple[str, ...] = (".venv/bin", "node_modules/.bin")


@attrs.define(frozen=True)
class CommandResolution:
    path: str | None  # the executable to run (absolute), or None if none was found
    searched: list[str]  # human-readable places searched, in order
    skipped_local: str | None = None  # a workspace binary passed over because the workspace is not trusted


@attrs.define(frozen=True)
class SearchPath:
    """PATH as the hub uses it for one root: the directories searched, and what was left out."""

    directories: list[str]  # in search order: PATH's kept entries, then the hub's own directories not already there
    ignored_relative: list[str]  # relative entries ("" included, which means the current directory)
    inside_workspace: list[str]  # absolute entries inside an untrusted workspace
    hub_directories: list[str] = attrs.field(factory=list)  # the hub's own, searched after PATH (in directories)


# A checkout of lsp-hub holds these; its `.tools/npm` is searched only where both exist, so a venv that merely sits
# beside some other project's `.tools` directory does not make the hub run that project's programs.
_CHECKOUT_MARKERS: tuple[str, ...] = ("scripts/setup.sh", "lsp_hub/__init__.py")
_CHECKOUT_NPM_BIN = ".tools/npm/node_modules/.bin"


def _installed_scripts_directories() -> list[str]:
    """Where the installation running lsp-hub put its programs (`.venv/bin`, a pipx venv's bin, ~/.local/bin)."""
    candidates = [sysconfig.get_path("scripts"), os.path.dirname(os.path.abspath(sys.executable))]
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user_site and is_within(package, Path(user_site)):  # `pip install --user`: its scripts go to ~/.local/bin
        candidates.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    return [candidate for candidate in candidates if candidate]


def _checkout_tool_directories() -> list[str]:
    """`.tools/npm/node_modules/.bin` of the lsp-hub checkout this code (editable install) or its venv lives in."""
    package_parent = Path(__file__).resolve().parent.parent.parent  # <checkout>/lsp_hub/config/resolve.py
    venv_parent = Path(sys.prefix).parent  # <checkout>/.venv
    found = []
    for checkout in (package_parent, venv_parent):
        if all((checkout / marker).is_file() for marker in _CHECKOUT_MARKERS):
            found.append(str(checkout / _CHECKOUT_NPM_BIN))
    return found


@functools.cache
def hub_tool_directories() -> tuple[str, ...]:
    """The hub's own tool directories that exist, absolute and without duplicates (symbolic links resolved)."""
    seen: set[str] = set()
    directories: list[str] = []
    for candidate in (*_installed_scripts_directories(), *_checkout_tool_directories()):
        real = os.path.realpath(candidate)
        if os.path.isabs(candidate) and os.path.isdir(candidate) and real not in seen:
            seen.add(real)
            directories.append(os.path.abspath(candidate))
    return tuple(directories)


def _is_executable(path: Path) -> bool:
    return _absolute_program(str(path)) is not None


def _absolute_program(path: str) -> str | None:
    """`path` if it is a program (on Windows also `path` + a PATHEXT extension, as the shell would take it)."""
    directory, name = os.path.split(path)
    return find_program(name, [directory], System.current(), is_executable_file)


def _which(name: str, directories: list[str]) -> str | None:
    """The program `name` in `directories` by this system's rules (`platform.commands`): never in a relative
    directory, and on Windows with PATHEXT's extensions."""
    return find_program(name, directories, System.current(), is_executable_file)


def is_within(path: str, directory: Path) -> bool:
    """Whether `path` is `directory` or below it, symlinks resolved on both sides."""
    real_path, real_directory = Path(os.path.realpath(path)), Path(os.path.realpath(directory))
    return real_path == real_directory or real_directory in real_path.parents


def search_path(root: Path, *, trusted: bool, workspace: Path | None = None,
                path_value: str | None = None) -> SearchPath:
    """The directories a program for `root` may come from: PATH's, then the hub's own (`hub_tool_directories`).

    Relative entries are dropped. Unless `trusted`, so are entries inside `workspace` (the workspace folder that
    holds `root`; default `root` itself): the workspace rule applied to PATH. `path_value` defaults to $PATH.
    """
    value = os.environ.get("PATH", os.defpath) if path_value is None else path_value
    untrusted_area = workspace if workspace is not None else root
    kept: list[str] = []
    relative: list[str] = []
    inside: list[str] = []
    for entry in value.split(os.pathsep):
        if not os.path.isabs(entry):
            relative.append(entry)
        elif not trusted and is_within(entry, untrusted_area):
            inside.append(entry)
        else:
            kept.append(entry)
    already = {os.path.realpath(entry) for entry in kept}
    own = [directory for directory in hub_tool_directories() if os.path.realpath(directory) not in already]
    return SearchPath([*kept, *own], relative, inside, own)


def child_search_path(root: Path, *, trusted: bool, workspace: Path | None = None) -> str | None:
    """The PATH a server started at `root` inherits (see search_path): the hub's own directories included, since a
    server found there may start its neighbours (basedpyright-langserver runs node). None when the hub has no PATH
    and no directories of its own."""
    if "PATH" not in os.environ and not hub_tool_directories():
        return None
    return os.pathsep.join(search_path(root, trusted=trusted, workspace=workspace).directories)


def _describe_path_search(path: SearchPath) -> str:
    notes = []
    if path.ignored_relative:
        notes.append(f"relative entries ignored: {', '.join(entry or '(empty)' for entry in path.ignored_relative)}")
    if path.inside_workspace:
        notes.append(f"passed over inside the untrusted workspace: {', '.join(path.inside_workspace)}")
    return f"PATH ({'; '.join(notes)})" if notes else "PATH"


def describe_search(path: SearchPath) -> list[str]:
    """The places a PATH-like search looks, for `CommandResolution.searched`: PATH, then each hub directory."""
    return [_describe_path_search(path), *(f"{HUB_DIRECTORY_LABEL} {directory}" for directory in path.hub_directories)]


HUB_DIRECTORY_LABEL = "lsp-hub's own"


def resolve_program(command: str, root: Path, *, trusted: bool, workspace: Path | None = None) -> CommandResolution:
    """Resolve any program name the way server commands are resolved (also used for doctor's version command)."""
    if not command:
        return CommandResolution(None, ["(no command configured)"])
    root = Path(os.path.abspath(root))
    expanded = os.path.expanduser(command)
    if os.path.isabs(expanded):
        return CommandResolution(_absolute_program(expanded), [expanded])
    if os.sep in expanded or (os.altsep and os.altsep in expanded):
        # A relative path names a file inside the workspace: only a trusted workspace may supply it.
        local = root / expanded
        if trusted:
            return CommandResolution(_absolute_program(str(local)), [str(local)])
        skipped = _absolute_program(str(local))
        return CommandResolution(None, [f"{local} (not used: workspace not trusted)"], skipped)

    searched: list[str] = []
    skipped_local: str | None = None
    for relative in WORKSPACE_BIN_DIRS:
        directory = root / relative
        found = _which(expanded, [str(directory)]) if directory.is_dir() else None
        if trusted:
            searched.append(str(directory))
            if found is not None:
                return CommandResolution(found, searched)
        elif found is not None and skipped_local is None:
            skipped_local = found
    path = search_path(root, trusted=trusted, workspace=workspace)
    if skipped_local is None and path.inside_workspace:
        skipped_local = _which(expanded, path.inside_workspace)
    searched.extend(describe_search(path))
    found = _which(expanded, path.directories)
    if found is not None and skipped_local is not None and os.path.realpath(found) == os.path.realpath(skipped_local):
        skipped_local = None  # the workspace's copy is the hub's own (lsp-hub's checkout as the workspace): used
    return CommandResolution(found, searched, skipped_local)


def resolve_command(spec: ServerSpec, root: Path, *, trusted: bool,
                    workspace: Path | None = None) -> CommandResolution:
    """Where `spec.command` is for a server running at `root` (in the workspace folder `workspace`, default root).

    Order: `<root>/.venv/bin`, `<root>/node_modules/.bin` (both only when `trusted`), then PATH's absolute entries
    (those inside an untrusted workspace passed over), then the hub's own tool directories. An absolute command is
    used as is if it is executable; a relative path with a slash is taken inside the root, trusted only.
    """
    return resolve_program(spec.command, root, trusted=trusted, workspace=workspace)


@attrs.define(frozen=True)
class LaunchPlan:
    """How to start a server at one root: its spec as the backend should see it, or why it must not start."""

    spec: ServerSpec
    refused: str | None = None
    pinned: dict[str, str] = attrs.field(factory=dict)  # pins applied (pin_untrusted, programs), with each file
    pinned_values: dict[str, str] = attrs.field(factory=dict)  # pin_untrusted_values applied, each value as JSON
    venv_packages: list[str] = attrs.field(factory=list)  # the .venv site-packages it reads (untrusted_venv_packages)
    # What starts the program, before its arguments: the program itself, or (Windows) node and the script of an
    # npm shim, or cmd.exe for another batch file (`platform.commands.launch_for`).
    program_argv: list[str] = attrs.field(factory=list)


# The spec tables a pin_untrusted key may point into (the first part of the dotted key).
PINNABLE_TABLES: tuple[str, ...] = ("initialization_options", "settings")


def find_upward(start: Path, relative: str) -> Path | None:
    """`<directory>/<relative>` for the nearest directory at or above `start` that has it as a file."""
    for directory in (start, *start.parents):
        candidate = directory / relative
        if candidate.is_file():
            return candidate
    return None


def _value_at(table: dict[str, Any] | None, dotted: list[str]) -> Any:
    for key in dotted:
        if not isinstance(table, dict):
            return None
        table = table.get(key)
    return table


def venv_site_packages(root: Path) -> list[str]:
    """The site-packages directories of `root/.venv` (POSIX `lib/pythonX.Y/`, Windows `Lib/`), inside the root."""
    venv = root / ".venv"
    if not (venv / "pyvenv.cfg").is_file():
        return []
    found = [*sorted(venv.glob("lib/python*/site-packages")), *sorted(venv.glob("Lib/site-packages"))]
    return list(dict.fromkeys(os.path.realpath(path) for path in found if path.is_dir() and is_within(str(path), root)))


def _with_value_at(table: dict[str, Any] | None, dotted: list[str], value: Any) -> dict[str, Any]:
    """A copy of `table` with `value` at the dotted key, making (or replacing non-table) intermediate tables."""
    result = dict(table or {})
    head, *rest = dotted
    if rest:
        inner = result.get(head)
        result[head] = _with_value_at(inner if isinstance(inner, dict) else None, rest, value)
    else:
        result[head] = value
    return result


def _pin(spec: ServerSpec, command_path: str, root: Path, workspace: Path) -> LaunchPlan:
    """Apply an untrusted root's pins (`pin_untrusted`, `pin_untrusted_programs`, `pin_untrusted_values`,
    `untrusted_venv_packages`), or refuse when a pinned file or program cannot be found outside the workspace."""
    command_home = Path(os.path.realpath(command_path)).parent
    tables: dict[str, dict[str, Any] | None] = {"initialization_options": spec.initialization_options,
                                                "settings": spec.settings}
    pinned: dict[str, str] = {}
    pinned_values: dict[str, str] = {}
    hint = f"run `lsp-hub trust {root}` to let it use the workspace's own"
    pins: list[tuple[str, str, str | tuple[str, ...]]] = [
        (key, "pin_untrusted", relative) for key, relative in spec.pin_untrusted.items() if relative]
    pins += [(key, "pin_untrusted_programs", programs) for key, programs in spec.pin_untrusted_programs.items()
             if programs]  # an empty value: turned off by a trusted layer
    if spec.untrusted_venv_packages:
        pins.append((spec.untrusted_venv_packages, "untrusted_venv_packages", ""))
    pins += [(key, "pin_untrusted_values", "") for key in spec.pin_untrusted_values]
    for key, kind, wanted in sorted(pins):
        table, _, inner_key = key.partition(".")
        if table not in PINNABLE_TABLES or not inner_key:
            return LaunchPlan(spec, refused=(
                f"lsp-hub: {spec.name} was not started for {root}: its {kind} key {key!r} must start with "
                f"{' or '.join(name + '.' for name in PINNABLE_TABLES)}; {hint}"))
        dotted = inner_key.split(".")
        if kind == "pin_untrusted_values":
            value = spec.pin_untrusted_values[key]
            tables[table] = _with_value_at(tables[table], dotted, value)
            pinned_values[key] = json.dumps(value)
            continue
        if kind == "untrusted_venv_packages":
            continue  # checked here, applied after the loop: it adds to a list rather than setting one value
        if isinstance(wanted, str):
            found = find_upward(command_home, wanted)
            if found is None or (is_within(str(found), workspace) and not _in_hub_install(str(found))):
                return LaunchPlan(spec, refused=(
                    f"lsp-hub: {spec.name} was not started for {root}: the workspace is not trusted, so it must not "
                    f"run the workspace's {wanted}, and none was found outside the workspace next to {command_home} "
                    f"to use instead; {hint}"))
            file = os.path.realpath(found)
        else:
            program = _program_outside(wanted, root, workspace)
            if program is None:
                return LaunchPlan(spec, refused=(
                    f"lsp-hub: {spec.name} was not started for {root}: the workspace is not trusted, so {key} must "
                    f"name a {' or '.join(wanted)} outside it, and none was found on PATH or beside lsp-hub; {hint}"))
            file = program
        tables[table] = _with_value_at(tables[table], dotted, file)
        pinned[key] = file
    packages = venv_site_packages(root) if spec.untrusted_venv_packages else []
    if packages:  # read as sources (the packages an agent's `uv sync` installed): no interpreter of the workspace runs
        table, _, inner_key = spec.untrusted_venv_packages.partition(".")
        existing = _value_at(tables[table], inner_key.split("."))
        listed = [item for item in existing if item not in packages] if isinstance(existing, list) else []
        tables[table] = _with_value_at(tables[table], inner_key.split("."), [*listed, *packages])
    spec = attrs.evolve(spec, initialization_options=tables["initialization_options"],
                        settings=tables["settings"] or {})
    return LaunchPlan(spec, pinned=pinned, pinned_values=pinned_values, venv_packages=packages)


def _in_hub_install(path: str) -> bool:
    """Whether `path` belongs to an installation of the hub's own tool directories (the npm prefix above
    `.tools/npm/node_modules/.bin`, the venv above its `bin`): the hub's, even inside a workspace (its checkout
    opened as one, or the sample in it), as for commands."""
    for directory in hub_tool_directories():
        tools = Path(directory)
        install = tools.parent.parent if tools.parent.name == "node_modules" else tools.parent
        if is_within(path, install):
            return True
    return False


def _program_outside(names: Iterable[str], root: Path, workspace: Path) -> str | None:
    """The first of `names` found where an untrusted root's server command would be (never the workspace's own)."""
    for name in names:
        found = resolve_program(name, root, trusted=False, workspace=workspace).path
        if found is not None:
            return found
    return None


def prepare_launch(spec: ServerSpec, command_path: str, root: Path, *, trusted: bool,
                   workspace: Path | None = None) -> LaunchPlan:
    """The spec a backend at `root` runs with.

    PATH is cleaned as for resolution (unless the configuration itself sets PATH in `env`, which only trusted layers
    can). For an untrusted root, `pin_untrusted` points the server at the hub's own files: typescript-language-server
    would otherwise prefer the workspace's node_modules/typescript and run it. A pin always wins over a configured
    value there: the configuration is shared by all roots, and a trusted root's project file may set that key.
    """
    env = dict(spec.env)
    path = child_search_path(root, trusted=trusted, workspace=workspace)
    if path is not None and "PATH" not in env:
        env["PATH"] = path
    spec = attrs.evolve(spec, env=env)
    launch = launch_for(command_path, spec.args, System.current(), read_text=_read_shim, is_file=os.path.isfile,
                        find_node=lambda: resolve_program("node", root, trusted=trusted, workspace=workspace).path)
    if launch.refused is not None:
        return LaunchPlan(spec, refused=f"lsp-hub: {spec.name} was not started for {root}: {launch.refused}")
    if not trusted and spec.trusted_only:
        return LaunchPlan(spec, refused=(
            f"lsp-hub: {spec.name} was not started for {root}: loading a project runs the project's own code "
            f"(build scripts, macros), and the workspace is not trusted; run `lsp-hub trust {root}` if you trust "
            "it"))
    if trusted:  # nothing pinned, nothing of an untrusted root's said
        return LaunchPlan(attrs.evolve(spec, untrusted_notifications={}), program_argv=launch.argv)
    if not (
        spec.pin_untrusted or spec.pin_untrusted_programs or spec.pin_untrusted_values or spec.untrusted_venv_packages
    ):
        return LaunchPlan(spec, program_argv=launch.argv)
    plan = _pin(spec, command_path, root, workspace if workspace is not None else root)
    return attrs.evolve(plan, program_argv=launch.argv)


def _read_shim(path: str) -> str | None:
    """A batch file's text, if it is small enough to be a shim (npm's are under 1 KB)."""
    with contextlib.suppress(OSError), open(path, encoding="utf-8", errors="replace") as shim:
        return shim.read(64 * 1024)
    return None
