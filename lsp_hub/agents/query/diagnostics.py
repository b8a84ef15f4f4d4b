"""`diagnostics FILE|DIR...`: the files of the served languages under the names given (walked past dependencies,
virtual environments and build output), asked in batches through `lspHub.diagnostics {uris}`, merged into one
answer that says who checked and who could not, with the linters' exit codes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from lsp_hub.agents.query.documents import Workspace
from lsp_hub.agents.query.errors import EXIT_ANSWER, EXIT_EMPTY, EXIT_USAGE, QueryError
from lsp_hub.agents.query.hub_requests import hub_command, hub_wait_ms, language_entry, languages_of
from lsp_hub.agents.query.options import QueryOptions
from lsp_hub.agents.query.project_setup import setup_notes
from lsp_hub.agents.query.rendering import Answer, DiagnosticsSummary, coverage_notes, diagnostics_answer_text

# A directory's files: these directories are not entered (as the index's walk: dependencies, virtual environments,
# build output, caches, version control), nor any hidden one; larger files are passed over.
SKIPPED_DIRECTORIES = frozenset((
    "node_modules", "bower_components", "jspm_packages", ".venv", "venv", ".env", "virtualenv", ".tox", ".nox",
    "site-packages", "dist", "build", "out", "target", "vendor", "obj", "__pycache__", "coverage", "htmlcov"))
MAX_CHECKED_FILE_BYTES = 1_048_576
DIAGNOSTICS_BATCH = 50  # files opened and waited for together (`lspHub.diagnostics {uris}` takes at most 200)


def files_under(directory: Path, served: Callable[[Path], bool]) -> tuple[list[Path], int]:
    """The files under `directory` that `served` accepts, sorted, and how many were passed over for their size.
    Symbolic links to directories are not followed (no loops, nothing outside)."""
    found: list[Path] = []
    too_large = 0
    stack = [directory]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith(".") and entry.name not in SKIPPED_DIRECTORIES:
                        stack.append(Path(entry.path))
                elif entry.is_file() and served(Path(entry.path)):
                    if entry.stat().st_size > MAX_CHECKED_FILE_BYTES:
                        too_large += 1
                    else:
                        found.append(Path(entry.path))
            except OSError:
                continue
    return sorted(found), too_large


def diagnostics_action(workspace: Workspace, options: QueryOptions) -> Answer:
    if not options.files:
        raise QueryError("lsp-hub query diagnostics: give one or more FILEs or DIRs")
    if options.text_file and len(options.files) != 1:
        raise QueryError("lsp-hub query diagnostics: --text-file goes with one FILE")
    named = [workspace.resolve(name, directories=True) for name in options.files]
    paths = [path for path in named if not path.is_dir()]
    if options.text_file and not paths:
        raise QueryError("lsp-hub query diagnostics: --text-file goes with a FILE, not a directory")
    directories = [path for path in named if path.is_dir()]
    too_large = left_over = 0
    if directories:
        languages = [entry for entry in languages_of(workspace) if entry.get("servers")]

        def served(path: Path) -> bool:
            return language_entry(languages, path) is not None

        for directory in directories:
            found, large = files_under(directory, served)
            paths.extend(found)
            too_large += large
        paths = list(dict.fromkeys(paths))
        if len(paths) > options.limit:  # --limit caps the files of a directory, too
            left_over, paths = len(paths) - options.limit, paths[:options.limit]
    text = None
    if options.text_file:
        try:
            text = Path(options.text_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
            raise QueryError(f"lsp-hub query: cannot read {options.text_file}: {reason}") from None
    summary = DiagnosticsSummary()
    wait_ms = hub_wait_ms(workspace.timeout)
    if text is not None:
        [path] = paths
        workspace.texts[str(path)] = text  # the positions are in the text checked
        uri = workspace.open(path)
        report = hub_command(workspace, "lspHub.diagnostics", {"uri": uri, "timeoutMs": wait_ms, "text": text}) or {}
        if isinstance(report.get("version"), int):
            workspace.connection.documents[uri] = (report["version"], text)
        summary.add(workspace, str(path), report)
    for start in range(0, len(paths) if text is None else 0, DIAGNOSTICS_BATCH):
        batch = paths[start:start + DIAGNOSTICS_BATCH]
        uris = [workspace.open(path) for path in batch]
        answer = hub_command(workspace, "lspHub.diagnostics", {"uris": uris, "timeoutMs": wait_ms}) or {}
        for path, report in zip(batch, answer.get("reports") or [], strict=False):
            summary.add(workspace, str(path), report)
    data = summary.as_json()
    data["files"] = len(paths)
    if left_over or too_large:
        data["complete"] = False
        data["skippedFiles"] = {"limit": left_over, "too_large": too_large}
    text_out = diagnostics_answer_text(data, options.limit)
    notes = setup_notes(workspace.root, paths, data["diagnostics"])
    if notes:  # what the project lacks, so that these diagnostics mislead (a fresh clone nobody installed)
        data["setupNotes"] = notes
        text_out += "".join(f"\n(setup: {note})" for note in notes)
    if left_over:
        text_out += f"\n(not checked: {left_over} more file(s) past --limit {options.limit})"
    if too_large:
        text_out += f"\n(not checked: {too_large} file(s) over {MAX_CHECKED_FILE_BYTES // 1024} KB)"
    if not paths:
        text_out = "not checked: no file here is of a language a server serves"
        data["complete"] = False
    # The linters' convention: 1 issues found, 2 a file no server checked (said on stderr), 0 checked and clean.
    nobody = data["uncheckedFiles"]
    warning = "; ".join(coverage_notes({"uncheckedFiles": nobody})) if nobody else None if paths else text_out
    exit_code = EXIT_EMPTY if data["diagnostics"] else EXIT_USAGE if warning else EXIT_ANSWER
    return Answer(data, text_out, not data["diagnostics"], exit_code, warning)
