"""The index verbs of the `lsp-hub` command line (same code as the lspHub.* commands).

    lsp-hub repomap [ROOT] [--budget N] [--focus FILE ...] [--mention IDENT ...] [--json]
    lsp-hub relevant [ROOT] "DESCRIPTION" [--target FILE ...] [--top N] [--history-commits N] [--json]
    lsp-hub syntax FILE [--json]                  exit code 1 when there are syntax errors
    lsp-hub callers FILE:LINE:COL | --symbol NAME [--root ROOT] [--depth N] [--json]
    lsp-hub index [ROOT]                          build or refresh the cache, print statistics

Lines and columns are 1-based here and 0-based in LSP. `--json` prints exactly the command's result object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from lsp_hub.index import api, background
from lsp_hub.index.walk import not_a_project
from lsp_hub.index.workspace import WorkspaceIndex

if TYPE_CHECKING:
    from lsp_hub.index.syntax_checkers import SyntaxCheckers

# Given the file to check, the parsers the syntax verb may run (the caller, `lsp_hub.cli`, applies the trust rules).
SyntaxCheckersFor = Callable[[Path], "SyntaxCheckers"]

VERBS = ("repomap", "relevant", "syntax", "callers", "index")


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit the process
        raise _UsageError(f"{self.prog}: {message}")


def _parser(verb: str) -> _Parser:
    parser = _Parser(prog=f"lsp-hub {verb}")
    if verb == "repomap":
        parser.add_argument("root", nargs="?")
        parser.add_argument("--budget", type=int, default=1024, help="token budget (default 1024)")
        parser.add_argument("--focus", nargs="+", default=[], metavar="FILE", help="files already at hand")
        parser.add_argument("--mention", nargs="+", default=[], metavar="IDENT", help="identifiers to favour")
    elif verb == "relevant":
        from lsp_hub.index import history  # here: the other verbs read no history

        parser.add_argument("arguments", nargs="+", metavar="[ROOT] DESCRIPTION")
        parser.add_argument("--target", nargs="+", default=[], metavar="FILE")
        parser.add_argument("--top", type=int, default=10)
        parser.add_argument(
            "--history-commits",
            type=int,
            default=history.DEFAULT_HISTORY_COMMITS,
            metavar="N",
            help="recent git commits read for files that change together (0: none; default "
            f"{history.DEFAULT_HISTORY_COMMITS})",
        )
    elif verb == "syntax":
        parser.add_argument("file")
    elif verb == "callers":
        parser.add_argument("location", nargs="?", metavar="FILE:LINE:COL | ROOT (with --symbol)")
        parser.add_argument("--symbol")
        parser.add_argument("--root")
        parser.add_argument("--depth", type=int, default=1)
    elif verb == "index":
        parser.add_argument("root", nargs="?")
    parser.add_argument("--json", action="store_true", help="print the command's JSON result")
    return parser


def index_cli_main(
    argv: list[str],
    out: TextIO,
    syntax_checkers_for: SyntaxCheckersFor | None = None,
    run_after_exit: background.RunAfterExit | None = None,
) -> int:
    """Run one index verb; `argv[0]` is the verb. Returns the exit code (2 for usage errors). Without
    `syntax_checkers_for`, TypeScript is judged by tree-sitter (the library does not look for programs itself).
    `run_after_exit`: runs work in a child that outlives the process (which ends on return): what a map stores for
    the next process is handed to it."""
    if not argv or argv[0] not in VERBS:
        out.write(f"usage: lsp-hub {{{'|'.join(VERBS)}}} ...\n")
        return 2
    verb, rest = argv[0], argv[1:]
    try:
        options = _parser(verb).parse_args(rest)
        if verb == "syntax":
            return _syntax(options, out, syntax_checkers_for)
        if verb == "repomap":
            return _repomap(options, out, run_after_exit)
        if verb == "relevant":
            return _relevant(options, out)
        if verb == "callers":
            return _callers(options, out)
        return _index(options, out)
    except _UsageError as error:
        sys.stderr.write(f"{error}\n")
        return 2
    except ValueError as error:
        sys.stderr.write(f"lsp-hub {verb}: {error}\n")
        return 2


def _current_directory(verb: str) -> str:
    """The root a verb given none works on: the current directory, unless it is no project (`not_a_project`: home,
    above it, the file system's root), which the hub never takes as one either: indexing it by a slip of the
    directory would walk and parse everything below for minutes."""
    here = Path.cwd().resolve()
    what = not_a_project(here)
    if what is not None:
        raise _UsageError(
            f"lsp-hub {verb}: the current directory, {here}, is {what}, not a project; give the project's directory "
            f"(lsp-hub {verb} DIR), or {here} itself if you mean it"
        )
    return "."


def _open_index(root: str | Path) -> WorkspaceIndex:
    path = Path(root).resolve()
    if not path.is_dir():
        raise ValueError(f"{root} is not a directory")
    index = WorkspaceIndex(path, store_beside=True)  # the rows of a new root are written while its map is made
    index.bring_up_to_date()
    return index


def _print_json(result: Any, out: TextIO) -> None:
    out.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")


def _incomplete_note(result: dict[str, Any], out: TextIO) -> None:
    if result.get("complete", True):
        return
    skipped = result.get("skippedFiles") or []
    count = result.get("skippedCount", len(skipped))
    reasons = sorted({entry["reason"] for entry in skipped})
    out.write(f"# incomplete: {count} source file(s) left out ({', '.join(reasons)})\n")


def _repomap(options: argparse.Namespace, out: TextIO, run_after_exit: background.RunAfterExit | None) -> int:
    index = _open_index(options.root or _current_directory("repomap"))
    focus = [str(Path(value).resolve()) for value in options.focus]

    def write(result: dict[str, Any]) -> None:
        if options.json:
            _print_json(result, out)
        else:
            out.write(result["text"])
            _incomplete_note(result, out)
        out.flush()

    arguments = {"focusFiles": focus, "mentionedIdents": options.mention, "tokenBudget": options.budget}
    background.map_then_store(index, arguments, write, run_after_exit)
    return 0


def _relevant(options: argparse.Namespace, out: TextIO) -> int:
    positional: list[str] = options.arguments
    if len(positional) > 2:
        raise _UsageError("lsp-hub relevant: expected [ROOT] DESCRIPTION (quote the description)")
    if len(positional) == 2:
        root, description = positional
    else:
        root, description = _current_directory("relevant"), positional[0]
    index = _open_index(root)
    targets = [str(Path(value).resolve()) for value in options.target]
    result = api.relevant_files(
        index,
        {
            "description": description,
            "targets": targets,
            "topN": options.top,
            "historyCommits": options.history_commits,
        },
    )
    if options.json:
        _print_json(result, out)
        return 0
    for entry in result["files"]:
        out.write(f"{entry['score']:7.3f}  {entry['path']}  ({'; '.join(entry['reasons'])})\n")
    if not result["files"]:
        out.write("no relevant files found\n")
    from lsp_hub.index import history

    if result.get("history") == history.STATE_NONE and result.get("historyReason") != history.REASON_DISABLED:
        out.write(f"# no git history used ({result.get('historyReason')})\n")
    _incomplete_note(result, out)
    return 0


def _syntax(options: argparse.Namespace, out: TextIO, syntax_checkers_for: SyntaxCheckersFor | None) -> int:
    path = Path(options.file)
    if path.is_dir():
        raise ValueError(f"{options.file} is a directory; give one file")
    if not path.is_file():
        raise ValueError(f"{options.file}: no such file")
    checkers = syntax_checkers_for(path.resolve()) if syntax_checkers_for is not None else None
    result = api.syntax_check({"uri": str(path.resolve())}, checkers=checkers)
    if options.json:
        _print_json(result, out)
    elif not result["checked"]:
        out.write(f"{options.file}: not checked ({result.get('reason')})\n")
    elif result["ok"]:
        out.write(f"{options.file}: ok ({_checker_note(result)})\n")
    else:
        for error in result["errors"]:
            start = error["range"]["start"]
            out.write(f"{options.file}:{start['line'] + 1}:{start['character'] + 1}: {error['message']}\n")
        out.write(f"({_checker_note(result)})\n")
    return 0 if result["ok"] else 1


def _checker_note(result: dict[str, Any]) -> str:
    """ "checked by cpython-3.11", and why tree-sitter judged when it stood in for the language's own parser."""
    note = f"checked by {result.get('checker')}"
    if result.get("fallbackReason"):
        note += f": {result['fallbackReason']}"
    return note


def _parse_location(text: str) -> tuple[str, int, int]:
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise _UsageError(f"lsp-hub callers: expected FILE:LINE:COL (1-based), not {text!r}")
    line, column = int(parts[1]), int(parts[2])
    if line < 1 or column < 1:
        raise _UsageError("lsp-hub callers: LINE and COL are 1-based")
    return parts[0], line - 1, column - 1


def _default_root(file: Path) -> Path:
    """The current directory when the file is inside it (and it is a project: `not_a_project`), else the file's
    directory."""
    cwd = Path.cwd().resolve()
    if not_a_project(cwd) is not None:
        return file.parent
    return cwd if file == cwd or cwd in file.parents else file.parent


def _callers(options: argparse.Namespace, out: TextIO) -> int:
    if options.symbol is None and options.location is None:
        raise _UsageError("lsp-hub callers: give FILE:LINE:COL or --symbol NAME")
    arguments: dict[str, Any] = {"depth": options.depth}
    if options.symbol is not None:
        if options.root is not None and options.location is not None:
            raise _UsageError("lsp-hub callers: give the root once, as ROOT or --root ROOT, with --symbol")
        root = Path(options.root if options.root is not None else _symbol_root(options.location)).resolve()
        arguments["symbol"] = options.symbol
    else:
        file_text, line, column = _parse_location(options.location)
        file = Path(file_text).resolve()
        root = Path(options.root).resolve() if options.root else _default_root(file)
        arguments.update({"uri": file.as_uri(), "position": {"line": line, "character": column}})
    index = _open_index(root)
    result = api.callers(index, arguments)
    if options.json:
        _print_json(result, out)
        return 0
    out.write(f"{result['symbol'] or '(no symbol at that position)'}\n")
    for definition in result["definitions"]:
        out.write(f"  defined at {_location_text(index, definition)}\n")
    for caller in result["callers"]:
        indent = "  " * caller["depth"]
        name = (caller["caller"] or "(top level)") + (f" (in {caller['callerIn']})" if "callerIn" in caller else "")
        out.write(f"{indent}{_location_text(index, caller['location'])}  {name}\n")
    if not result["callers"]:
        out.write("  no callers found\n")
    _incomplete_note(result, out)
    return 0


def _symbol_root(positional: str | None) -> str:
    """The root of `callers ROOT --symbol NAME` (as `repomap ROOT`); without one, the current directory. Anything
    else there is refused rather than passed over: the index would have been built of the current directory."""
    if positional is None:
        return _current_directory("callers")
    if Path(positional).is_dir():
        return positional
    raise _UsageError(
        f"lsp-hub callers: {positional!r} is not a directory; give FILE:LINE:COL or [ROOT] --symbol NAME, not both"
    )


def _location_text(index: WorkspaceIndex, location: dict[str, Any]) -> str:
    path = index.relative_path(location["uri"]) or location["uri"]
    start = location["range"]["start"]
    return f"{path}:{start['line'] + 1}:{start['character'] + 1}"


def _index(options: argparse.Namespace, out: TextIO) -> int:
    given = options.root or _current_directory("index")
    root = Path(given).resolve()
    if not root.is_dir():
        raise ValueError(f"{given} is not a directory")
    index = WorkspaceIndex(root)
    interactive = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if interactive:
            sys.stderr.write(f"\rIndexing {done}/{total} files")
            if done == total:
                sys.stderr.write("\n")

    statistics = index.build(progress)
    if options.json:
        _print_json(statistics, out)
        return 0
    languages = ", ".join(f"{language} {count}" for language, count in statistics["languages"].items())
    out.write(f"{root}\n")
    out.write(f"  {statistics['files']} files, {statistics['symbols']} symbols ({languages or 'none'})\n")
    out.write(
        f"  built in {statistics['lastBuildSeconds']:.2f} s, {statistics['parsedFiles']} parsed, the rest "
        f"from the cache\n"
    )
    skipped = ", ".join(f"{reason} {count}" for reason, count in statistics["skipReasons"].items())
    if skipped:
        out.write(f"  skipped: {skipped}\n")
    if index.store is not None:
        out.write(f"  cache: {index.store.path}\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return index_cli_main(list(sys.argv[1:] if argv is None else argv), sys.stdout)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
