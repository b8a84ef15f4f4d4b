"""`lsp-hub doctor [ROOT]`: what is configured, what is installed, and what would serve files in ROOT.

The doctor starts no language server: it only runs each found binary with its `version_args` (stdin closed,
5 s limit, all in parallel), and only binaries the hub itself would be allowed to run for ROOT.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TextIO

import attrs

from lsp_hub.config.loader import LoadedConfig, load_config
from lsp_hub.config.model import Config, ServerSpec
from lsp_hub.config.resolve import (
    HUB_DIRECTORY_LABEL,
    WORKSPACE_BIN_DIRS,
    CommandResolution,
    LaunchPlan,
    child_search_path,
    prepare_launch,
    resolve_command,
    resolve_program,
    search_path,
)
from lsp_hub.config.trust import TrustStore
from lsp_hub.platform.children import kill_group, new_group_options

VERSION_TIMEOUT_SECONDS = 5.0
_MAX_VERSION_WIDTH = 48
# Every line the doctor prints fits a terminal and an agent's context: longer text is wrapped or shortened.
OUTPUT_WIDTH = 100
_DETAIL_INDENT = "    "


@attrs.define(frozen=True)
class VersionProbe:
    """What running a binary with its version arguments gave: its first line, or why it could not run."""

    text: str  # the first output line, "-" when it printed nothing, or "?" when it did not answer
    failure: str | None = None  # the binary is broken: it cannot be executed, or exited non-zero (with its words)
    timed_out: bool = False


@attrs.define
class ServerReport:
    spec: ServerSpec
    root: Path  # the root this server would get for files directly in ROOT
    trusted: bool
    resolution: CommandResolution
    languages: list[str]
    version: str = "-"
    broken: str | None = None  # why the found binary does not run (its version probe failed)
    launch: LaunchPlan | None = None  # how the hub would start it (pins for an untrusted root), if found

    @property
    def found(self) -> bool:
        return self.resolution.path is not None

    @property
    def state(self) -> str:
        """found, missing or broken, and why the hub would not use it here when it would not."""
        state = "missing" if not self.found else "broken" if self.broken is not None else "found"
        if self.spec.disabled:
            state += " (disabled)"
        elif self.launch is not None and self.launch.refused:
            state += " (not started here)"
        return state


def marker_root(start: Path, markers: Sequence[str]) -> Path:
    """The nearest directory at or above `start` holding one of `markers`, else `start` itself."""
    for directory in (start, *start.parents):
        if any((directory / marker).exists() for marker in markers):
            return directory
    return start


def probe_version(argv: Sequence[str], timeout: float = VERSION_TIMEOUT_SECONDS,
                  env: Mapping[str, str] | None = None) -> VersionProbe:
    """Run `argv` (stdin closed) for its first output line (stdout, else stderr). Never waits past `timeout`.

    A program that cannot be executed (a script whose interpreter is gone, a file of another architecture) or that
    exits non-zero (a shim whose toolchain is not installed) is broken: the hub could not start it either. One that
    does not answer in time is not: a busy machine is not the binary's fault.
    """
    try:
        process = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            **new_group_options(),  # its own process group, so a timeout kills its children too
            env=env,
        )
    except OSError as error:
        return VersionProbe("?", failure=f"cannot run: {error.strerror or error}")
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(process.pid)
        process.kill()
        try:
            process.communicate(timeout=1.0)
        except subprocess.TimeoutExpired:  # a child escaped the group and holds the pipes: stop reading
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
            process.wait(timeout=1.0)
        return VersionProbe(f"? (no answer in {timeout:g} s)", timed_out=True)
    if process.returncode != 0:
        # The error is usually the last thing said (a traceback's last line), on stderr.
        said = _last_line(stderr) or _last_line(stdout)
        return VersionProbe("?", failure=f"exit status {process.returncode}{': ' + said if said else ''}")
    return VersionProbe(_first_line(stdout) or _first_line(stderr) or "-")


def first_output_line(argv: Sequence[str], timeout: float = VERSION_TIMEOUT_SECONDS,
                      env: Mapping[str, str] | None = None) -> str:
    """The first line a program prints (stdout, else stderr), or why there is none, as `? (reason)`."""
    probe = probe_version(argv, timeout, env)
    return f"? ({probe.failure})" if probe.failure is not None else probe.text


def _shortened(text: str, width: int = _MAX_VERSION_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _last_line(blob: bytes) -> str:
    lines = [line.strip() for line in blob.decode("utf-8", "replace").splitlines() if line.strip()]
    return _shortened(lines[-1], OUTPUT_WIDTH - 20) if lines else ""


def _first_line(blob: bytes) -> str:
    for line in blob.decode("utf-8", "replace").splitlines():
        text = line.strip()
        if text:
            return _shortened(text)
    return ""


def _version_argv(report: ServerReport) -> list[str] | None:
    spec = report.spec
    if not spec.version_args or report.resolution.path is None:
        return None
    if not spec.version_command:
        return [report.resolution.path, *spec.version_args]
    # A separate version program (basedpyright for basedpyright-langserver) is looked for next to the server first.
    sibling = Path(report.resolution.path).parent / spec.version_command
    if os.sep not in spec.version_command and sibling.is_file() and os.access(sibling, os.X_OK):
        return [str(sibling), *spec.version_args]
    found = resolve_program(spec.version_command, report.root, trusted=report.trusted).path
    return [found, *spec.version_args] if found else None


def _server_reports(root: Path, loaded: LoadedConfig, store: TrustStore) -> list[ServerReport]:
    config = loaded.config

    def trusted(path: Path) -> bool:
        in_session = any(path == t or t in path.parents for t in loaded.trusted_roots)
        return in_session or store.is_trusted(path)

    reports = []
    for name, spec in config.servers.items():
        server_root = marker_root(root, spec.root_markers)
        is_trusted = trusted(server_root)
        languages = [language.name for language in config.languages.values() if name in language.servers]
        resolution = resolve_command(spec, server_root, trusted=is_trusted)
        launch = None if resolution.path is None else \
            prepare_launch(spec, resolution.path, server_root, trusted=is_trusted)
        reports.append(ServerReport(spec, server_root, is_trusted, resolution, languages, launch=launch))
    return reports


def _version_env(report: ServerReport) -> dict[str, str]:
    """The environment a version probe runs in: PATH cleaned as for the server itself, so a
    `#!/usr/bin/env node` program does not find a `node` from a relative or workspace PATH entry."""
    path = child_search_path(report.root, trusted=report.trusted)
    return {**os.environ, **({"PATH": path} if path is not None else {})}


def _probe_versions(reports: list[ServerReport], timeout: float) -> None:
    jobs = [(report, argv) for report in reports if (argv := _version_argv(report)) is not None]
    if not jobs:
        return
    with ThreadPoolExecutor(max_workers=min(8, len(jobs))) as pool:
        probes = pool.map(lambda job: probe_version(job[1], timeout, _version_env(job[0])), jobs)
        for (report, _), probe in zip(jobs, probes, strict=True):
            report.version, report.broken = probe.text, probe.failure


def _emit(text: str, out: TextIO, indent: str = "") -> None:
    """Print `text` wrapped to OUTPUT_WIDTH, continuation lines indented deeper than its first. A path is never cut
    (it must stay copyable): only one longer than the width, alone on its line, passes it."""
    lines = textwrap.wrap(text, width=OUTPUT_WIDTH, initial_indent=indent, subsequent_indent=indent + "    ",
                          break_on_hyphens=False, break_long_words=False) or [""]
    for line in lines:
        print(line, file=out)


def _search_places(root: Path, trusted: bool) -> list[tuple[str, str]]:
    """(kind, where) for every place a server for `root` is looked for, in order: the doctor's list."""
    places = [("workspace", f"{root / relative}" + ("" if trusted else " (not searched: workspace not trusted)"))
              for relative in WORKSPACE_BIN_DIRS]
    path = search_path(root, trusted=trusted)
    own = set(path.hub_directories)
    places += [("PATH", directory) for directory in path.directories if directory not in own]
    places += [("PATH", f"{entry or '(empty)'} (not searched: a relative entry)") for entry in path.ignored_relative]
    places += [("PATH", f"{entry} (not searched: inside the untrusted workspace)") for entry in path.inside_workspace]
    places += [(HUB_DIRECTORY_LABEL, directory) for directory in path.hub_directories]
    return places


def _print_search(root: Path, trusted: bool, out: TextIO) -> None:
    print("Servers are looked for in (the first found is used; a server's own root may differ):", file=out)
    for kind, where in _search_places(root, trusted):
        _emit(f"{kind + ':':<15} {where}", out, "  ")
    print(file=out)


def _print_servers(reports: list[ServerReport], out: TextIO, *, verbose: bool) -> None:
    rows = [["SERVER", "STATE", "VERSION", "LANGUAGES"]]
    details: dict[int, list[str]] = {}
    for report in reports:
        rows.append([report.spec.name, report.state, report.version if report.found and not report.broken else "-",
                     ", ".join(report.languages) or "- (in no language's servers)"])
        lines = details.setdefault(len(rows) - 1, [])
        if report.resolution.path is not None:
            lines.append(report.resolution.path)
        if report.broken is not None:
            lines.append(f"broken: `{' '.join(_version_argv(report) or [])}` failed: {report.broken}")
        if verbose:
            lines.append(f"root: {report.root} ({'trusted' if report.trusted else 'not trusted'}); markers: "
                         + (", ".join(report.spec.root_markers) or "-"))
            if report.resolution.path is None:
                lines.append("searched: " + ", ".join(report.resolution.searched))
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    for index, row in enumerate(rows):
        # A table of its own per row keeps the columns of every row the same width.
        start = "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  "
        print((start + _shortened(row[3], max(OUTPUT_WIDTH - len(start), 8))).rstrip(), file=out)
        for line in details.get(index, []):
            _emit(line, out, _DETAIL_INDENT)
    for report in reports:
        if report.resolution.skipped_local:
            _emit(f"note: {report.spec.name}: passed over {report.resolution.skipped_local} because "
                  f"{report.root} is not trusted; run `lsp-hub trust {report.root}` to use it", out)
        if report.launch is not None and report.launch.refused:
            _emit(f"note: {report.launch.refused.removeprefix('lsp-hub: ')}", out)
        for key, file in report.launch.pinned.items() if report.launch is not None else ():
            _emit(f"note: {report.spec.name}: {report.root} is not trusted, so {key} = {file} "
                  "(not the workspace's own)", out)
        for key, value in report.launch.pinned_values.items() if report.launch is not None else ():
            _emit(f"note: {report.spec.name}: {report.root} is not trusted, so {key} = {value}", out)
        for method in report.launch.spec.untrusted_notifications if report.launch is not None else ():
            _emit(f"note: {report.spec.name}: {report.root} is not trusted, so it is sent {method}", out)
        if report.launch is not None and report.launch.venv_packages:
            _emit(f"note: {report.spec.name}: its .venv's packages are read from "
                  f"{', '.join(report.launch.venv_packages)} (its interpreter is not run)", out)


@attrs.define(frozen=True)
class Route:
    language: str
    files: list[str]
    serving: list[ServerReport]
    skipped: list[str]  # "NAME why" for each server of the language that would not serve


def _routes(config: Config, reports: list[ServerReport]) -> list[Route]:
    by_name = {report.spec.name: report for report in reports}
    routes = []
    for language in config.languages.values():
        serving, skipped = [], []
        for name in language.servers:
            report = by_name.get(name)
            if report is None:
                skipped.append(f"{name} unknown")
            elif report.spec.disabled:
                skipped.append(f"{name} disabled")
            elif not report.found:
                skipped.append(f"{name} missing")
            elif report.broken is not None:
                skipped.append(f"{name} broken")
            elif report.launch is not None and report.launch.refused:
                skipped.append(f"{name} not started: workspace not trusted")
            else:
                serving.append(report)
        files = [*(f"*.{ext}" for ext in language.extensions), *language.filenames]
        routes.append(Route(language.name, files, serving, skipped))
    return routes


def _print_routes(root: Path, routes: list[Route], out: TextIO) -> None:
    print(file=out)
    _emit(f"Files in {root} would be served by (servers in precedence order, at their roots):", out)
    for route in routes:
        text = ", ".join(f"{report.spec.name} at {report.root}" for report in route.serving) or "none"
        if route.skipped:
            text += f" (skipped: {', '.join(route.skipped)})"
        _emit(f"{route.language} ({', '.join(route.files) or '-'}): {text}", out, "  ")


def _json_report(root: Path, root_trusted: bool, loaded: LoadedConfig, reports: list[ServerReport],
                 routes: list[Route]) -> dict[str, Any]:
    return {
        "root": str(root),
        "trusted": root_trusted,
        "layers": [{"kind": layer.kind, "source": layer.source, "status": layer.status, "trusted": layer.trusted}
                   for layer in loaded.layers],
        "searched": [{"kind": kind, "where": where} for kind, where in _search_places(root, root_trusted)],
        "servers": [{
            "name": report.spec.name,
            "state": report.state.split(" ")[0],
            "disabled": report.spec.disabled,
            "notStartedReason": report.launch.refused if report.launch is not None else None,
            "path": report.resolution.path,
            "version": report.version if report.found and report.broken is None else None,
            "brokenReason": report.broken,
            "languages": report.languages,
            "root": str(report.root),
            "rootTrusted": report.trusted,
            "rootMarkers": list(report.spec.root_markers),
            "searched": report.resolution.searched,
            "passedOver": report.resolution.skipped_local,
            "pinned": dict(report.launch.pinned) if report.launch is not None else {},
        } for report in reports],
        "routes": [{"language": route.language, "files": route.files,
                    "servers": [{"name": report.spec.name, "root": str(report.root)} for report in route.serving],
                    "skipped": route.skipped} for route in routes],
        "problems": [str(problem) for problem in loaded.problems],
    }


def run_doctor(
    root: Path,
    *,
    cli_config: Path | None,
    out: TextIO,
    trust_store: TrustStore | None = None,
    user_config_path: Path | None = None,
    version_timeout: float = VERSION_TIMEOUT_SECONDS,
    verbose: bool = False,
    as_json: bool = False,
) -> int:
    """Print the doctor's report for `root` (`as_json`: one JSON object with every detail; `verbose`: each server's
    root, markers and the places searched for it). Returns 1 if any configuration layer has a problem, else 0."""
    root = Path(os.path.abspath(root))
    store = trust_store if trust_store is not None else TrustStore()
    loaded = load_config(workspace_roots=[root], cli_config=cli_config, trust_store=store,
                         user_config_path=user_config_path)
    root_trusted = any(root == t or t in root.parents for t in loaded.trusted_roots)
    reports = _server_reports(root, loaded, store)
    _probe_versions(reports, version_timeout)
    routes = _routes(loaded.config, reports)
    code = 1 if loaded.problems else 0
    if as_json:
        json.dump(_json_report(root, root_trusted, loaded, reports, routes), out, indent=2)
        print(file=out)
        return code

    _emit(f"lsp-hub doctor for {root} ({'trusted' if root_trusted else 'not trusted'} workspace)", out)
    print("\nConfiguration layers (later wins):", file=out)
    for layer in loaded.layers:
        trust = "" if layer.trusted or layer.status == "not found" else \
            ", untrusted: may not set command/args/env or add servers"
        _emit(f"{layer.kind:<9} {layer.source} ({layer.status}{trust})", out, "  ")
    print(file=out)

    _print_search(root, root_trusted, out)
    _print_servers(reports, out, verbose=verbose)
    _print_routes(root, routes, out)

    if loaded.problems:
        print(f"\nConfiguration problems ({len(loaded.problems)}); the valid settings still apply:", file=out)
        for problem in loaded.problems:
            _emit(str(problem), out, "  ")
        return code
    print("\nConfiguration: no problems.", file=out)
    return code
