"""Configuration schema: attrs models structured from TOML/JSON with cattrs.

The same schema serves every layer (built-in defaults, user file, project file, --config, and
`initializationOptions.lspHub` from the client). Keys are snake_case in TOML; the client may send
them in the same spelling.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

# What a server needs to serve any feature at all: its documents, its workspace, its lifecycle. Feature filters
# (only_features/except_features) never apply to these, or a server limited to formatting would never see a file.
NEVER_FILTERED: frozenset[str] = frozenset({
    "initialize", "initialized", "shutdown", "exit", "$/cancelRequest", "$/setTrace",
    "textDocument/didOpen", "textDocument/didChange", "textDocument/willSave", "textDocument/didSave",
    "textDocument/didClose",
    "notebookDocument/didOpen", "notebookDocument/didChange", "notebookDocument/didSave", "notebookDocument/didClose",
    "workspace/didChangeWorkspaceFolders", "workspace/didChangeConfiguration", "workspace/didChangeWatchedFiles",
    "window/workDoneProgress/cancel",
})

# "diagnostics" in a feature filter names pushed and pulled diagnostics alike: the hub's pulls are that feature.
DIAGNOSTICS_FEATURE = "diagnostics"
DIAGNOSTIC_METHODS: frozenset[str] = frozenset({"textDocument/diagnostic", "workspace/diagnostic"})


@attrs.define(frozen=True)
class ServerSpec:
    """One language server the hub can start."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    root_markers: tuple[str, ...] = (".git",)
    env: dict[str, str] = attrs.field(factory=dict)
    initialization_options: dict[str, Any] | None = None
    settings: dict[str, Any] = attrs.field(factory=dict)
    # LSP method names (e.g. "textDocument/formatting"); "diagnostics" names published and pulled diagnostics.
    only_features: tuple[str, ...] = ()
    except_features: tuple[str, ...] = ()
    disabled: bool = False
    # Optional per-server overrides of the hub-wide timings; None means "use the hub default".
    request_timeout_seconds: float | None = None
    # Its first answers may come from a partial view while it loads its project (typescript-language-server's
    # syntax-only server): project-wide requests answered during its first work-done progress are asked again once
    # that progress ends, bounded by the request timeout.
    wait_for_project_load: bool = False
    # Files whose presence at or above a file means the server reports loading that file's project (tsserver: a
    # tsconfig.json or jsconfig.json; a file with neither is an inferred project, whose load it never reports). For
    # such a file only the report (or the bound) ends the wait: diagnostics do not, since its syntax-only server
    # publishes them before the load begins.
    load_reported_with: tuple[str, ...] = ()
    # After a document closes, tell the server the file exists (a "created" watched-file event): basedpyright
    # drops a file it had open from its project on close, so references from another file miss it until told.
    reannounce_closed_files: bool = False
    # lspHub.diagnostics asks the server's tsserver for its verdict on the new content (`typescript.tsserverRequest`:
    # syntactic, semantic and suggestion diagnostics) instead of waiting for a push: typescript-language-server
    # publishes in parts (syntax first, the types later) and only what changed, so a change that leaves a clean
    # file clean is never reported and a first report may be the syntax alone.
    diagnostics_via_tsserver: bool = False
    # Its diagnostics of one file may change when another file changes (a type checker; not a linter like ruff):
    # after a change, lspHub.diagnostics of another file waits for a report of it made after that change. For
    # a server that pulls, its diagnosticProvider's `interFileDependencies` decides instead.
    cross_file_diagnostics: bool = False
    # How `lsp-hub doctor` asks for a version: `version_command` (default: `command`) run with `version_args`;
    # empty version_args means the server prints no version and is not asked.
    version_args: tuple[str, ...] = ("--version",)
    version_command: str | None = None
    # For a root that is not trusted: dotted keys under `initialization_options.` or `settings.` (e.g.
    # "initialization_options.tsserver.path") set to a file found upward from the real location of the server's
    # command (e.g. "node_modules/typescript/lib/tsserver.js": Node's own package lookup). So a server that would
    # prefer the workspace's copy of a tool runs the hub's own. No such file outside the workspace: not started.
    # An empty value turns a pin off.
    pin_untrusted: dict[str, str] = attrs.field(factory=dict)
    # For a root that is not trusted: dotted keys (as above) set to the first of these programs found where lsp-hub
    # looks for a server's command there (PATH's absolute entries outside the workspace, then its own tool
    # directories). basedpyright otherwise runs the workspace's `.venv/bin/python` to learn its search paths.
    pin_untrusted_programs: dict[str, tuple[str, ...]] = attrs.field(factory=dict)
    # For a root that is not trusted: dotted keys (as above) set to these values, whatever the configuration says.
    # The JSON server's `initialization_options.handledSchemaProtocols = ["file"]`: it then fetches no schema URL
    # that a repository's file names (`"$schema": "http://..."`), and asks the client instead, which declines.
    pin_untrusted_values: dict[str, Any] = attrs.field(factory=dict)
    # For a root that is not trusted: notifications (method -> params) sent right after `initialized`, for what a
    # server lets a client switch only so: yaml-language-server's "yaml/registerContentRequest" makes it ask the
    # client for a `$schema=` URL's content instead of fetching it.
    untrusted_notifications: dict[str, Any] = attrs.field(factory=dict)
    # For a root that is not trusted: a dotted key holding a list of paths (basedpyright's
    # "settings.python.analysis.extraPaths") to which the site-packages of the root's `.venv` are added, so the
    # server reads the installed packages as sources without running the venv's interpreter. Empty: none.
    untrusted_venv_packages: str = ""
    # Started only for a trusted root: loading a project runs the project's own code (rust-analyzer builds and runs
    # build scripts and procedural macros; cargo runs a `rustc-wrapper` that the repository's .cargo/config names).
    trusted_only: bool = False

    def allows(self, feature: str) -> bool:
        """Whether only_features/except_features let this server serve `feature`."""
        if feature in NEVER_FILTERED or not (self.only_features or self.except_features):
            return True
        names = {feature, DIAGNOSTICS_FEATURE} if feature in DIAGNOSTIC_METHODS else {feature}
        if self.only_features and names.isdisjoint(self.only_features):
            return False
        return names.isdisjoint(self.except_features)


@attrs.define(frozen=True)
class LanguageSpec:
    name: str
    extensions: tuple[str, ...] = ()
    language_ids: tuple[str, ...] = ()
    filenames: tuple[str, ...] = ()  # exact file names, e.g. "Makefile", "Dockerfile"
    servers: tuple[str, ...] = ()  # order = precedence for single-answer requests
    # Show a finding once when servers of this language both report it (same range, same meaning: ruff F401 and
    # basedpyright reportUnusedImport); the server of higher precedence keeps it.
    dedupe_diagnostics: bool = False
    # Verified writes (`lsp-hub mcp`): format the written file with this language's formatting server. None: as
    # [hub] format_on_write says.
    format_on_write: bool | None = None
    # Verified writes apply the servers' preferred fixes (see HubOptions.auto_code_actions). None: as [hub] says.
    auto_code_actions: bool | None = None

    @property
    def ids(self) -> tuple[str, ...]:
        """The LSP languageIds of the language (its name when none is configured), the first for documents the hub
        names itself."""
        return self.language_ids or (self.name,)


@attrs.define(frozen=True)
class HubOptions:
    request_timeout_seconds: float = 10.0
    initialize_timeout_seconds: float = 30.0
    idle_shutdown_seconds: float = 600.0
    diagnostics_debounce_seconds: float = 0.2
    max_restarts: int = 5
    restart_window_seconds: float = 180.0
    # Open documents larger than this get no syntax diagnostics and are not re-indexed from the editor's text
    # (the index's own file cap): one big file must not stall every keystroke.
    max_document_bytes: int = 1_048_576
    # `lsp-hub daemon` exits after this long without a client (0: never). Read once, when the daemon starts.
    daemon_idle_exit_seconds: float = 1800.0
    # Verified writes (`lsp-hub mcp` write_file/edit_file) format the file where a server of its language formats.
    format_on_write: bool = True
    # Verified writes also check the written files' dependents (files importing them or using their names): at
    # most this many, ranked, within this budget of milliseconds.
    dependents_limit: int = 20
    dependents_timeout_ms: int = 8000
    # How many verified writes of one agent session `undo` can take back, one by one.
    undo_depth: int = 20
    # After a verified write, apply the fixes the language's servers mark preferred or offer as source.fixAll /
    # source.organizeImports. Off: an agent's write changes only what it wrote unless the user asked for more.
    auto_code_actions: bool = False
    # Start the servers of the languages the index finds when a session opens a workspace, before anything is asked:
    # "agents" for `lsp-hub query` and `lsp-hub mcp` sessions (an editor opens files itself), "always", "never".
    prestart: Literal["agents", "always", "never"] = "agents"
    # Set only by a client that knows the user trusts this workspace (VS Code's workspace trust).
    trust_workspace: bool = False


@attrs.define(frozen=True)
class IndexOptions:
    # The per-user records of per-file results that every checkout shares (lsp_hub/index/shared_records.py) stay
    # within this many megabytes, the least recently used going first. Read when an index is made.
    cache_max_mb: int = 2048


@attrs.define(frozen=True)
class Config:
    servers: dict[str, ServerSpec] = attrs.field(factory=dict)
    languages: dict[str, LanguageSpec] = attrs.field(factory=dict)
    hub: HubOptions = attrs.field(factory=HubOptions)
    index: IndexOptions = attrs.field(factory=IndexOptions)

    def language_for(self, *, language_id: str | None, path: str) -> LanguageSpec | None:
        """A document's language: from its languageId if one matches, else from its file name or extension."""
        if language_id:
            for lang in self.languages.values():
                if language_id in lang.language_ids or language_id == lang.name:
                    return lang
        base = path.rsplit("/", 1)[-1]
        for lang in self.languages.values():
            if base in lang.filenames:
                return lang
        ext = base.rsplit(".", 1)[-1] if "." in base else ""
        if ext:
            for lang in self.languages.values():
                if ext in lang.extensions:
                    return lang
        return None
