"""`QueryOptions`: one question to the hub, typed. `lsp-hub query` builds it from its command line and `lsp-hub mcp`
from a tool's arguments; both hand it to `run_action`. Its defaults are the command line's."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lsp_hub.agents.query.errors import QueryError
from lsp_hub.agents.query.positions import Location

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_LIMIT = 50
LOCATION_ACTIONS = {"definition": "textDocument/definition", "declaration": "textDocument/declaration",
                    "type-definition": "textDocument/typeDefinition",
                    "implementation": "textDocument/implementation", "references": "textDocument/references"}
TARGET_ACTIONS = (*LOCATION_ACTIONS, "hover", "rename", "code-actions", "incoming-calls", "outgoing-calls")
PROJECT_WIDE_ACTIONS = ("references", "implementation", "rename", "incoming-calls")
NAVIGATION_ACTIONS = ("outline", "zoom", "imports", "impact", "search", "context", "call-tree", "trace")
ACTIONS = (*TARGET_ACTIONS, "symbols", "diagnostics", "format", "repomap", "relevant", "callers", "syntax",
           "status", "languages", "apply", "undo", *NAVIGATION_ACTIONS)
APPLYING_ACTIONS = ("rename", "format", "code-actions")
# The options of one action or a few, by QueryOptions field: an action given another's option says so rather than
# answering as if it had not been given (`context --symbol X` gave the plain repo map).
ACTION_OPTIONS: dict[str, tuple[str, ...]] = {
    **{action: ("symbol",) for action in (*LOCATION_ACTIONS, "hover", "incoming-calls", "outgoing-calls")},
    "rename": ("symbol", "apply"), "code-actions": ("symbol", "apply"), "format": ("apply",),
    "symbols": ("query",), "diagnostics": ("text_file",), "repomap": ("budget", "mention"),
    "relevant": ("description", "top"), "callers": ("symbol", "depth", "index_only"), "apply": ("edits", "force"),
    "zoom": ("symbol",), "imports": ("depth", "direction"), "impact": ("symbol", "depth"),
    "search": ("regex", "ignore_case", "globs", "structural", "lang"), "context": ("description", "targets", "budget"),
    "call-tree": ("symbol", "depth", "include_unresolved"), "trace": ("symbol", "depth"),
}
# Each of those fields' flag on the command line.
OPTION_FLAGS: dict[str, str] = {
    "symbol": "--symbol", "apply": "--apply", "query": "--query", "text_file": "--text-file", "budget": "--budget",
    "mention": "--mention", "description": "--description", "top": "--top", "depth": "--depth",
    "direction": "--direction", "regex": "--regex", "ignore_case": "--ignore-case", "globs": "--glob",
    "structural": "--structural", "lang": "--lang", "targets": "--target",
    "include_unresolved": "--include-unresolved", "edits": "--edits", "force": "--force", "index_only": "--index-only",
}


@dataclass
class QueryOptions:
    """What to ask (`action`, one of ACTIONS), about what, and how to answer."""

    action: str
    location: Location | None = None  # the target of a TARGET_ACTIONS action or `callers`, unless `symbol`
    symbol: str | None = None  # a name instead of a location: greet, Class.method, module.func
    files: list[str] = field(default_factory=list)  # symbols/format/syntax: one; diagnostics: files or directories
    new_name: str | None = None  # rename
    query: str | None = None  # symbols: search the workspace for this
    # rename, format: True writes the change; code-actions: the number (1-based) or the title of the action.
    apply: bool | int | str | None = None
    limit: int = DEFAULT_LIMIT  # items in the answer, text and JSON alike; diagnostics DIR: files checked
    root: Path | None = None  # the workspace root; relative file names start here when it is given
    json: bool = False
    timeout: float = DEFAULT_TIMEOUT_SECONDS  # seconds per request
    socket: str | None = None  # the hub listening on this unix socket
    no_daemon: bool = False  # a hub of its own for this one query
    text_file: str | None = None  # diagnostics: check this text as the file's new content
    budget: int | None = None  # repomap: token budget (1,024); context: bytes (8,000)
    mention: list[str] = field(default_factory=list)  # repomap: identifiers to favour
    description: str | None = None  # relevant: the task
    top: int = 10  # relevant: how many files
    depth: int | None = None  # callers, imports (1), impact (2), call-tree (3), trace (6); imports 0: all
    edits: str | None = None  # apply: a JSON file of edits
    force: bool = False  # apply: replace read-only files too
    direction: str = "both"  # imports: up (who imports it), down (what it imports), both
    regex: bool = False  # search: the pattern is a regular expression
    ignore_case: bool = False  # search
    globs: list[str] = field(default_factory=list)  # search: only files matching these (ripgrep's --glob)
    pattern: str | None = None  # search: the text (or with --regex, the expression) to find
    structural: str | None = None  # search: an ast-grep pattern instead of text
    lang: str | None = None  # search --structural: the language
    targets: list[str] = field(default_factory=list)  # context: the files the task is about
    include_unresolved: bool = False  # call-tree: list calls outside the workspace one by one
    index_only: bool = False  # callers: the index alone (no server started or asked)

    def check(self) -> None:
        """QueryError (one line, exit code 2) for options that do not go together."""
        self.check_settings()
        if (self.action in TARGET_ACTIONS or self.action == "callers") and self.location is None \
                and self.symbol is None:
            raise QueryError(f"lsp-hub query {self.action}: give FILE:LINE:COL or --symbol NAME")

    def check_settings(self) -> None:
        """The checks that do not need the target (the command line makes those before it reads the target)."""
        if self.action not in ACTIONS:
            raise QueryError(f"lsp-hub query: unknown action {self.action!r} (one of: {', '.join(ACTIONS)})")
        if self.action == "code-actions" and self.apply is True:
            raise QueryError("lsp-hub query code-actions: --apply takes the number or the title of an action")
        if self.action == "apply" and not self.edits:
            raise QueryError("lsp-hub query apply: give --edits FILE.json")
        if self.apply is not None and self.action not in APPLYING_ACTIONS:
            raise QueryError(f"lsp-hub query {self.action}: --apply only goes with rename, format, code-actions")
        if self.direction not in ("up", "down", "both"):
            raise QueryError("lsp-hub query imports: --direction is up, down or both")
        if self.timeout <= 0 or self.limit < 1:
            raise QueryError("lsp-hub query: --timeout and --limit must be positive")
