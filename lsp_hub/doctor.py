"""`lsp-hub doctor [ROOT]`: what is configured, what is installed, and what would serve files in ROOT.

The doctor starts no language server: it only runs each found binary with its `version_args` (stdin closed,
5 s limit, all in parallel), and only binaries the hub itself would be allowed to run for ROOT.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TextIO

import attrs

from lsp_hub.config.loader import LoadedConfig, load_config
from lsp_hub.config.model import Config, ServerSpec
from lsp_hub.config.resolve import (
    CommandResolution,
    LaunchPlan,
    child_search_path,
    prepare_launch,
    resolve_command,
    resolve_program,
)
from lsp_hub.config.trust import TrustStore

VERSION_TIMEOUT_SECONDS = 5.0
_MAX_VERSION_WIDTH = 48


@attrs.define
class ServerReport:
    spec: ServerSpec
    root: Path  # the root this server would get for files directly in ROOT
    trusted: bool
    resolution: CommandResolution
    languages: list[str]
    version: str = "-"
    launch: LaunchPlan | None = None  # how the hub would start it (pins for an untrusted root), if found

    @property
    def found(self) -> bool:
        return self.resolution.path is not None


def marker_root(start: Path, markers: Sequence[str]) -> Path:
    """The nearest directory at or above `start` holding one of `markers`, else `start` itself."""
    for directory in (start, *start.parents):
        if any((directory / marker).exists() for marker in markers):
            return directory
    return start


def first_output_line(argv: Sequence[str], timeout: float = VERSION_TIMEOUT_SECONDS,
                      env: Mapping[str, str] | None = None) -> str:
    """The first line a program prints (stdout, else stderr), or why there is none. Never waits past `timeout`."""
    try:
        process = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, so a timeout kills its children too
            env=env,
        )
    except OSError as error:
        return f"? ({error.strerror or error})"
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.kill()
        try:
            process.communicate(timeout=1.0)
        except subprocess.TimeoutExpired:  # a child escaped the group and holds the pipes: stop reading
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
            process.wait(timeout=1.0)
        return f"? (no answer in {timeout:g} s)"
    line = _first_line(stdout) or _first_line(stderr)
    if process.returncode != 0:
        return f"? (exit status {process.returncode}{': ' + line if line else ''})"
    return line or "-"


def _first_line(blob: bytes) -> str:
    for line in blob.decode("utf-8", "replace").splitlines():
        text = line.strip()
        if text:
            return text if len(text) <= _MAX_VERSION_WIDTH else text[: _MAX_VERSION_WIDTH - 3] + "..."
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
        versions = pool.map(lambda job: first_output_line(job[1], timeout, _version_env(job[0])), jobs)
        for (report, _), version in zip(jobs, versions, strict=True):
            report.version = version


def _table(rows: list[list[str]], out: TextIO) -> None:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=False)]
        print("  ".join([*cells, row[-1]]).rstrip(), file=out)


def _print_servers(reports: list[ServerReport], out: TextIO) -> None:
    rows = [["SERVER", "STATE", "VERSION", "LANGUAGES", "ROOT MARKERS", "PATH"]]
    for report in reports:
        state = "found" if report.found else "missing"
        if report.spec.disabled:
            state += " (disabled)"
        elif report.launch is not None and report.launch.refused:
            state += " (not started here)"
        where = report.resolution.path or "searched: " + ", ".join(report.resolution.searched)
        rows.append([
            report.spec.name,
            state,
            report.version if report.found else "-",
            ", ".join(report.languages) or "- (in no language's servers)",
            ", ".join(report.spec.root_markers) or "-",
            where,
        ])
    _table(rows, out)
    for report in reports:
        if report.resolution.skipped_local:
            print(f"note: {report.spec.name}: passed over {report.resolution.skipped_local} because "
                  f"{report.root} is not trusted; run `lsp-hub trust {report.root}` to use it", file=out)
        if report.launch is not None and report.launch.refused:
            print(f"note: {report.launch.refused.removeprefix('lsp-hub: ')}", file=out)
        for key, file in report.launch.pinned.items() if report.launch is not None else ():
            print(f"note: {report.spec.name}: {report.root} is not trusted, so {key} = {file} "
                  "(the hub's own, not the workspace's)", file=out)


def _print_routes(root: Path, config: Config, reports: list[ServerReport], out: TextIO) -> None:
    by_name = {report.spec.name: report for report in reports}
    print(f"\nFiles in {root} would be served by:", file=out)
    rows = [["LANGUAGE", "FILES", "SERVERS (precedence order) AND THEIR ROOTS"]]
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
            elif report.launch is not None and report.launch.refused:
                skipped.append(f"{name} not started: workspace not trusted")
            else:
                serving.append(f"{name} at {report.root}")
        text = ", ".join(serving) or "none"
        if skipped:
            text += f"  (skipped: {', '.join(skipped)})"
        files = ", ".join([*(f"*.{ext}" for ext in language.extensions), *language.filenames]) or "-"
        rows.append([language.name, files, text])
    _table(rows, out)


def run_doctor(
    root: Path,
    *,
    cli_config: Path | None,
    out: TextIO,
    trust_store: TrustStore | None = None,
    user_config_path: Path | None = None,
    version_timeout: float = VERSION_TIMEOUT_SECONDS,
) -> int:
    """Print the doctor's report for `root`. Returns 1 if any configuration layer has a problem, else 0."""
    root = Path(os.path.abspath(root))
    store = trust_store if trust_store is not None else TrustStore()
    loaded = load_config(workspace_roots=[root], cli_config=cli_config, trust_store=store,
                         user_config_path=user_config_path)
    root_trusted = any(root == t or t in root.parents for t in loaded.trusted_roots)
    print(f"lsp-hub doctor for {root} ({'trusted' if root_trusted else 'not trusted'} workspace)", file=out)

    print("\nConfiguration layers (later wins):", file=out)
    for layer in loaded.layers:
        trust = "" if layer.trusted or layer.status == "not found" else \
            ", untrusted: may not set command/args/env or add servers"
        print(f"  {layer.kind:<9} {layer.source} ({layer.status}{trust})", file=out)
    print(file=out)

    reports = _server_reports(root, loaded, store)
    _probe_versions(reports, version_timeout)
    _print_servers(reports, out)
    _print_routes(root, loaded.config, reports, out)

    if loaded.problems:
        print(f"\nConfiguration problems ({len(loaded.problems)}); the valid settings still apply:", file=out)
        for problem in loaded.problems:
            print(f"  {problem}", file=out)
        return 1
    print("\nConfiguration: no problems.", file=out)
    return 0
