"""`lsp-hub query ACTION ...`: the command line. Parses it into a `QueryOptions` (checking the input before a hub is
reached or started: bad input costs no hub), connects (`--socket`, `--no-daemon`, else the daemon), runs the
action, prints the text or the JSON (held to `--limit` items), and exits with the action's code."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from lsp_hub.agents.query.actions import run_action
from lsp_hub.agents.query.connection import HubConnection, connect_default, connect_socket, spawn_hub
from lsp_hub.agents.query.documents import Workspace, find_root, resolve_target
from lsp_hub.agents.query.errors import EXIT_ANSWER, EXIT_EMPTY, QueryError
from lsp_hub.agents.query.navigation_actions import SYMBOL_ACTIONS
from lsp_hub.agents.query.options import (
    ACTION_OPTIONS,
    ACTIONS,
    DEFAULT_LIMIT,
    DEFAULT_TIMEOUT_SECONDS,
    OPTION_FLAGS,
    TARGET_ACTIONS,
    QueryOptions,
)
from lsp_hub.agents.query.positions import location, parse_location
from lsp_hub.agents.query.rendering import cap_items


class _UsageParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would print usage and exit
        raise QueryError(f"{self.prog}: {message}")


EXIT_CODES = """exit codes (every action: 2 bad input -- a bad position, a missing file, a file outside the root,
an unknown or ambiguous symbol -- and 3 the hub or a server failed, or no answer within --timeout):
  diagnostics       0 checked by a server and clean, 1 issues found, 2 a file no server checked (stderr
                    says who could not and why: not installed, disabled, failed, starting, no report in time,
                    no server for the language)
  definition, declaration, type-definition, implementation, references, hover, symbols, incoming-calls,
  outgoing-calls, callers, repomap, relevant, languages
                    0 an answer, 1 an empty answer (stderr says why, for a file's question)
  rename, format    0 edits shown (or applied with --apply), 1 nothing to change
  code-actions      0 actions listed (or an action applied with --apply N|TITLE), 1 no action offered
  syntax            0 no syntax errors (or not checked), 1 syntax errors (as `lsp-hub syntax`)
  apply             0 written (the answer says what the servers and the dependents found), 2 refused (nothing
                    written: a syntax error, old_text not found, a file changed since)
  undo              0 undone, 1 nothing to undo, 2 refused (a file changed since that write)
  status            0
  outline, zoom, imports, impact, search, context, call-tree, trace
                    0 an answer, 1 an empty answer (the index's own: no server needed)"""


# The argparse destinations that differ from QueryOptions' field names (repeatable flags, named in the singular).
_DESTINATIONS = {"globs": "glob", "targets": "target"}


def _parser() -> _UsageParser:
    parser = _UsageParser(
        prog="lsp-hub query",
        description="Ask the hub one question; one answer on stdout.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("action", choices=ACTIONS, metavar="ACTION", help=", ".join(ACTIONS))
    parser.add_argument(
        "operands", nargs="*", help="FILE:LINE:COL (or FILE...; diagnostics: FILE or DIR...), then NEW_NAME for rename"
    )
    parser.add_argument("--symbol", help="a name (greet, Class.method, module.func) instead of FILE:LINE:COL")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-daemon", action="store_true", help="run a hub for this one query")
    parser.add_argument(
        "--socket",
        default=os.environ.get("LSP_HUB_SOCKET"),
        help="talk to the hub listening on this unix socket, or through a daemon's endpoint file (daemon.endpoint; "
        "default $LSP_HUB_SOCKET)",
    )
    parser.add_argument(
        "--root",
        help="the workspace root, where relative FILEs start (default: the nearest "
        "ancestor with a root marker; FILEs start in the current directory)",
    )
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS, help="seconds per request")
    parser.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        help="items in the answer, text and --json alike (the JSON then says how many were left "
        "out); diagnostics DIR: files checked (default 50)",
    )
    parser.add_argument(
        "--apply",
        nargs="?",
        const=True,
        default=None,
        help="rename, format: write the files; code-actions --apply N|TITLE: apply that action",
    )
    parser.add_argument("--query", help="symbols: search the workspace")
    parser.add_argument("--text-file", help="diagnostics: check this text as FILE's new content")
    parser.add_argument("--budget", type=int, default=None, help="repomap: token budget (1024); context: bytes (8000)")
    parser.add_argument("--mention", nargs="+", default=[], help="repomap: identifiers to favour")
    parser.add_argument("--description", help="relevant: the task")
    parser.add_argument("--top", type=int, default=10, help="relevant: how many files")
    parser.add_argument(
        "--depth",
        type=int,
        default=None,
        help="callers, imports: 1; impact: 2; call-tree: 3; trace: 6 (imports 0: unlimited)",
    )
    parser.add_argument(
        "--direction",
        choices=("up", "down", "both"),
        default="both",
        help="imports: up (importers), down (imports) or both",
    )
    parser.add_argument("--regex", action="store_true", help="search: PATTERN is a regular expression")
    parser.add_argument("--ignore-case", action="store_true", help="search: case-insensitive")
    parser.add_argument("--glob", action="append", default=[], help="search: only files matching G (repeatable)")
    parser.add_argument("--structural", help="search: an ast-grep pattern, e.g. '$A.get($B)' (with --lang)")
    parser.add_argument("--lang", help="search --structural: the language (python, typescript, go, rust, ...)")
    parser.add_argument("--target", action="append", default=[], help="context: a file the task is about")
    parser.add_argument(
        "--include-unresolved", action="store_true", help="call-tree: list calls outside the workspace one by one"
    )
    parser.add_argument(
        "--index-only", action="store_true", help="callers: the index's answer alone, no server started or asked"
    )
    parser.add_argument("--edits", help="apply: a JSON file of edits, [{path, old_text, new_text} | {path, content}]")
    parser.add_argument("--force", action="store_true", help="apply: replace read-only files too")
    return parser


def options_from(argv: list[str]) -> QueryOptions:
    """The command line as a QueryOptions: the positional operands spread over what each action takes."""
    parser = _parser()
    arguments = parser.parse_intermixed_args(argv)
    action: str = arguments.action
    _check_own_options(parser, arguments)
    operands: list[str] = list(arguments.operands)
    apply: bool | int | str | None = arguments.apply
    if action == "code-actions" and isinstance(apply, str) and not apply.isdigit() and not _looks_like_location(apply):
        apply = apply.strip()  # a title
        if not apply:
            raise QueryError("lsp-hub query code-actions: --apply takes a number or a title")
    elif isinstance(apply, str) and not (action == "code-actions" and apply.isdigit()):
        # `format --apply FILE`: argparse took the operand as the option's value.
        operands.append(apply)
        apply = True
    target: str | None = None
    new_name: str | None = None
    description: str | None = arguments.description
    if action in TARGET_ACTIONS or action == "callers":
        if arguments.symbol is None:
            if not operands:
                raise QueryError(f"lsp-hub query {action}: give FILE:LINE:COL or --symbol NAME")
            target, operands = operands[0], operands[1:]
        if action == "rename":
            if len(operands) != 1:
                raise QueryError("lsp-hub query rename: give TARGET NEW_NAME")
            new_name, operands = operands[0], []
    elif action in ("relevant", "context") and operands and description is None:
        description, operands = operands[-1], operands[:-1]
    elif action in SYMBOL_ACTIONS and arguments.symbol is None and operands and _looks_like_location(operands[0]):
        target, operands = operands[0], operands[1:]
    pattern: str | None = None
    if action == "search" and operands:
        pattern, operands = operands[0], operands[1:]
    if action in (*SYMBOL_ACTIONS, "search", "context") and len(operands) > (1 if action == "impact" else 0):
        raise QueryError(f"lsp-hub query {action}: unexpected {' '.join(operands)}")
    if (action in TARGET_ACTIONS or action == "callers") and operands:
        raise QueryError(f"lsp-hub query {action}: unexpected {' '.join(operands)}")
    if action == "code-actions" and isinstance(apply, str) and apply.isdigit():
        apply = int(apply)
    options = QueryOptions(
        action=action,
        symbol=arguments.symbol,
        files=operands,
        new_name=new_name,
        query=arguments.query,
        apply=apply,
        limit=arguments.limit,
        json=arguments.json,
        timeout=arguments.timeout,
        socket=arguments.socket,
        no_daemon=arguments.no_daemon,
        text_file=arguments.text_file,
        budget=arguments.budget,
        mention=arguments.mention,
        description=description,
        top=arguments.top,
        depth=arguments.depth,
        edits=arguments.edits,
        force=arguments.force,
        root=_root_given(arguments.root),
        direction=arguments.direction,
        regex=arguments.regex,
        ignore_case=arguments.ignore_case,
        globs=arguments.glob,
        structural=arguments.structural,
        lang=arguments.lang,
        targets=arguments.target,
        include_unresolved=arguments.include_unresolved,
        index_only=arguments.index_only,
        pattern=pattern,
    )
    options.check_settings()
    options.location = location(target) if target is not None else None
    return options


def _check_own_options(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> None:
    """An option of another action is an error that names this action's own (not silently dropped)."""
    action = arguments.action
    own = ACTION_OPTIONS.get(action, ())
    given = []
    for field, flag in OPTION_FLAGS.items():
        destination = _DESTINATIONS.get(field, field)
        if field not in own and getattr(arguments, destination) != parser.get_default(destination):
            given.append(flag)
    if given:
        takes = ", ".join(OPTION_FLAGS[field] for field in own)
        raise QueryError(
            f"lsp-hub query {action}: {', '.join(given)} {'is not an option' if len(given) == 1 else 'are not options'}"
            f" of {action}" + (f" (its own: {takes})" if takes else "")
        )


def _looks_like_location(text: str) -> bool:
    try:
        parse_location(text)
    except QueryError:
        return False
    return True


def _root_given(name: str | None) -> Path | None:
    if not name:
        return None
    root = Path(name).expanduser().resolve()
    if not root.is_dir():
        raise QueryError(f"lsp-hub query: --root {name} is not a directory")
    return root


def _root(options: QueryOptions) -> Path:
    """--root, else the nearest ancestor of the current directory with a root marker; a FILE outside that
    project has its own."""
    if options.root is not None:
        return options.root
    cwd = Path.cwd().resolve()
    root = find_root(cwd)
    first = options.files[0] if options.files else options.location.file if options.location else None
    if first is not None:  # a file outside the current directory's project: its own project
        file = Path(first).expanduser().resolve()
        if file.exists() and root not in file.parents:
            root = find_root(file.parent)
    return root


Connector = Callable[[Path], HubConnection]


def query_main(
    argv: list[str], *, out: TextIO | None = None, err: TextIO | None = None, connection: HubConnection | None = None
) -> int:
    """Run one query; returns the exit code. `connection`: a hub already connected (tests share one)."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        options = options_from(argv)
        root = connection.initialized_root if connection and connection.initialized_root else _root(options)
        workspace = Workspace(root, options.timeout, anchor=options.root)
        # Positions and files are checked before a hub is reached (or started).
        if options.location is not None:
            resolve_target(workspace, options.location, None)
        for name in options.files:
            workspace.resolve(name, directories=options.action in ("diagnostics", "outline"))
        if connection is None:
            if options.socket and not options.no_daemon:
                connection = connect_socket(options.socket)
            elif options.no_daemon:
                connection = spawn_hub(root)
            else:
                connection = connect_default(root)
        workspace.hub = connection
        connection.notices = err
        connection.initialize(root, options.timeout)
        applied: list[Any] = []
        if options.apply is not None:
            from lsp_hub.agents.query.edit_actions import write_through_verified  # only a query that writes

            workspace.write_through = write_through_verified(workspace, applied)
        answer = run_action(options, workspace)
        for written in applied:  # --apply: what the verified write found, after the diff
            answer.data["write"] = written.data
            answer.text = f"{answer.text}\n{written.text}" if answer.text else written.text
        out.write(
            json.dumps(cap_items(answer.data, options.limit), ensure_ascii=False) + "\n"
            if options.json
            else (answer.text + "\n" if answer.text else "")
        )
        out.flush()
        detail = answer.data.get("empty_detail")
        if answer.empty and detail and not options.json and str(detail) not in answer.text:  # said once
            err.write(f"lsp-hub query {options.action}: {detail}\n")
        if answer.warning:
            err.write(f"lsp-hub query {options.action}: {answer.warning}\n")
        if answer.exit_code is not None:
            return answer.exit_code
        return EXIT_EMPTY if answer.empty else EXIT_ANSWER
    except QueryError as error:
        err.write(f"{error}\n")
        return error.code
    except KeyboardInterrupt:
        return 130
    finally:
        if connection is not None:
            connection.close()
