"""The MCP tools of `lsp-hub mcp`: `lsp` (one tool for code intelligence, with an `action`), `repo_map`,
`relevant_files`, `callers`, the index's navigation commands, `check_syntax`, and the verified writes `write_file`,
`edit_file`, `apply_edits` and `undo`: their names, descriptions and JSON schemas (from the signatures,
compacted), each a thin call into `agent_tools.AgentTools`, whose answers become `CallToolResult`s (compact text
plus `structuredContent`; `isError` with one sentence when a tool cannot do its job). `Tools` picks the workspace
(`--root`, else the client's first root, else the current directory) and connects to the hub on first use.
The command that serves them is `mcp_server.py`; how the SDK presents them, `mcp_sdk.py`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import warnings
from collections.abc import Callable, Collection
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import unquote, urlparse

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from lsp_hub import __version__
from lsp_hub.agents import query
from lsp_hub.agents.agent_tools import LSP_ACTIONS, AgentTools, ToolAnswer, ToolFailure
from lsp_hub.agents.mcp_sdk import HubMCPServer, add_tool

logger = logging.getLogger("lsp_hub.mcp")
ROOTS_TIMEOUT_SECONDS = 5.0
INSTRUCTIONS = (
    "Code intelligence for this repository from its real language servers (basedpyright, ruff, "
    "typescript-language-server, clangd, ...) and lsp-hub's own index. Lines and columns are 1-based. Write files "
    "with write_file/edit_file (several files at once: apply_edits): each write is syntax-checked before it lands "
    "and answered with every server's diagnostics on the new content and on the files that depend on it; undo "
    "takes your last write back."
)

LspAction = Literal[
    "definition",
    "declaration",
    "type_definition",
    "implementation",
    "references",
    "hover",
    "symbols",
    "rename",
    "code_actions",
    "format",
    "incoming_calls",
    "outgoing_calls",
    "diagnostics",
    "languages",
    "status",
]
assert set(LspAction.__args__) == set(LSP_ACTIONS)  # type: ignore[attr-defined]

File = Annotated[str | None, Field(description="path, relative to the root or absolute")]
Line = Annotated[int | None, Field(ge=1, description="1-based line")]
Column = Annotated[int | None, Field(ge=1, description="1-based column (characters)")]
Symbol = Annotated[str | None, Field(description="a name instead of a position: f, Class.method, module.f")]
Limit = Annotated[int, Field(ge=1, description="most items to answer")]
Target = Annotated[str, Field(description="a name (f, Class.method, module.f) or FILE:LINE:COL")]
Force = Annotated[bool, Field(description="also replace a read-only file, or one with unsaved edits in an editor")]


class EditItem(BaseModel):
    """One edit of apply_edits."""

    path: str = Field(description="the file")
    old_text: str | None = Field(default=None, description="exact text, found once")
    new_text: str | None = Field(default=None, description="its replacement")
    content: str | None = Field(default=None, description="or: the whole new content")


class Tools:
    """The `AgentTools` of this server, made on the first call, when the workspace root is known."""

    def __init__(
        self, root: Path | None, connect: Callable[[Path], query.HubConnection], *, timeout: float, fenced: bool
    ) -> None:
        self.root = root
        self.connect = connect
        self.timeout = timeout
        self.fenced = fenced
        self._tools: AgentTools | None = None
        self._lock = asyncio.Lock()

    async def get(self, context: Context | None) -> AgentTools:
        async with self._lock:
            if self._tools is None:
                root = self.root or await _client_root(context) or Path.cwd()
                root = root.resolve()
                os.chdir(root)  # paths in answers are shown relative to it
                logger.info("workspace root: %s", root)
                self._tools = AgentTools(root, self.connect, timeout=self.timeout, fenced=self.fenced)
            return self._tools

    def close(self) -> None:
        if self._tools is not None:
            self._tools.close()


async def _client_root(context: Context | None) -> Path | None:
    """The client's first file:// root (MCP roots/list), when it declares roots."""
    if context is None or context.client_capabilities is None or context.client_capabilities.roots is None:
        return None
    try:
        with anyio.fail_after(ROOTS_TIMEOUT_SECONDS), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated in the newest protocol; clients still send them
            result = await context.session.list_roots()
    except Exception as error:  # a client that declares roots but cannot answer: the current directory
        logger.warning("could not ask the client for its roots: %s", error)
        return None
    for root in result.roots:
        parsed = urlparse(str(root.uri))
        if parsed.scheme == "file" and Path(unquote(parsed.path)).is_dir():
            return Path(unquote(parsed.path))
    return None


def _result(answer: ToolAnswer) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=answer.text)], structured_content=answer.data)


def _error(failure: ToolFailure) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=str(failure))], is_error=True, structured_content=failure.data
    )


async def run_tool(
    tools: Tools, context: Context | None, method: Callable[..., ToolAnswer], *args: Any, **kwargs: Any
) -> CallToolResult:
    """An `AgentTools` method run for a tool call: its answer, or one sentence when it cannot do its job."""
    try:
        agent = await tools.get(context)
        # The hub is spoken to synchronously: in a worker thread, so this loop (and an in-process hub on it) keeps
        # serving.
        return _result(await anyio.to_thread.run_sync(partial(getattr(agent, method.__name__), *args, **kwargs)))
    except ToolFailure as failure:
        return _error(failure)
    except Exception as error:  # a fault of ours: one line for the agent, the traceback only in a -v log
        logger.info("%s failed", method.__name__, exc_info=True)
        logger.error("%s failed: %s: %s", method.__name__, type(error).__name__, error)
        return _error(
            ToolFailure(
                f"{method.__name__} failed inside lsp-hub ({type(error).__name__}: {error}); "
                "read the file before trying again"
            )
        )


CommandArguments = Callable[..., dict[str, Any]]


def command_tool(
    app: MCPServer,
    tools: Tools,
    command: str,
    *,
    paths: Collection[str] = (),
    uris: Collection[str] = (),
    render: Callable[[dict[str, Any]], str] | None = None,
    empty: str = "nothing found",
) -> Callable[[CommandArguments], CommandArguments]:
    """Register a tool that is one `lspHub.*` workspace command run through the hub. The decorated function
    declares the tool (its typed parameters are the input schema, its docstring the description) and turns the
    tool's arguments into the command's; the answer is the command's text and, as structuredContent, the rest of
    its result (`AgentTools.workspace_command`: `paths`/`uris` name the arguments that are files in the root).

        @command_tool(app, tools, "lspHub.outline", uris=("uri",))
        def outline(file: File, limit: Limit = 50) -> dict[str, Any]:
            \"\"\"A file's definitions as a tree.\"\"\"
            return {"uri": file, "limit": limit}
    """

    def register(declaration: CommandArguments) -> CommandArguments:
        signature = inspect.signature(declaration, eval_str=True)

        async def run(ctx: Context | None = None, **arguments: Any) -> CallToolResult:
            try:
                sent = declaration(**arguments)
            except ToolFailure as failure:
                return _error(failure)
            return await run_tool(
                tools,
                ctx,
                AgentTools.workspace_command,
                command,
                sent,
                paths=paths,
                uris=uris,
                render=render,
                empty=empty,
            )

        # The SDK reads the schema from the signature and finds the context by its annotation.
        context = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Context | None)
        run.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[*signature.parameters.values(), context], return_annotation=CallToolResult
        )
        run.__annotations__ = {
            **{name: parameter.annotation for name, parameter in signature.parameters.items()},
            "ctx": Context | None,
            "return": CallToolResult,
        }
        run.__name__ = run.__qualname__ = declaration.__name__
        run.__doc__ = declaration.__doc__
        add_tool(app, run)
        return declaration

    return register


def build_server(tools: Tools) -> MCPServer:
    app = HubMCPServer("lsp-hub", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    def tool(function: Callable[..., Any]) -> Callable[..., Any]:
        return add_tool(app, function)

    async def call(
        context: Context | None, method: Callable[..., ToolAnswer], *args: Any, **kwargs: Any
    ) -> CallToolResult:
        return await run_tool(tools, context, method, *args, **kwargs)

    @tool
    async def lsp(
        action: Annotated[LspAction, Field(description="what to ask")],
        file: File = None,
        line: Line = None,
        column: Column = None,
        symbol: Symbol = None,
        query: Annotated[str | None, Field(description="symbols: workspace search")] = None,
        new_name: Annotated[str | None, Field(description="rename: the new name")] = None,
        apply: Annotated[
            bool | int | str | None,
            Field(description="rename/format: true writes; code_actions: number or title to apply"),
        ] = None,
        limit: Limit = 50,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Ask the language servers: definition, references, hover, symbols, rename, code actions, format, calls,
        diagnostics. Give file+line+column (1-based) or symbol."""
        return await call(
            ctx,
            AgentTools.lsp,
            action,
            file=file,
            line=line,
            column=column,
            symbol=symbol,
            query_text=query,
            new_name=new_name,
            apply=apply,
            limit=limit,
        )

    @command_tool(
        app, tools, "lspHub.repoMap", paths=("focusFiles",), empty="the repo map is empty (no indexed source files)"
    )
    def repo_map(
        focus_files: Annotated[
            list[str] | None, Field(description="files the task is about; the map favours what they use")
        ] = None,
        mentioned: Annotated[list[str] | None, Field(description="identifiers the task mentions")] = None,
        token_budget: Annotated[int, Field(ge=1, description="the map's size in tokens")] = 1024,
    ) -> dict[str, Any]:
        """A ranked map of the repository: files and their key definitions, within a token budget."""
        return {
            "focusFiles": list(focus_files or []),
            "mentionedIdents": list(mentioned or []),
            "tokenBudget": token_budget,
        }

    # Navigation from the index alone (issue #24): no language server needed, answers in milliseconds.

    @command_tool(app, tools, "lspHub.outline", paths=("path",), empty="no definitions")
    def outline(
        path: Annotated[str, Field(description="a file, or a directory (its files' top level)")], limit: Limit = 300
    ) -> dict[str, Any]:
        """A file's definitions as a tree (name, kind, lines, signature), without reading the file."""
        return {"path": path, "limit": limit}

    @command_tool(app, tools, "lspHub.zoom")
    def zoom(symbol: Target, limit: Limit = 30) -> dict[str, Any]:
        """One symbol's source with line numbers (a member menu for a long class), what it calls and who calls it."""
        return {"symbol": symbol, "limit": limit}

    @command_tool(app, tools, "lspHub.imports", paths=("path",), empty="no imports either way")
    def imports(
        path: Annotated[str, Field(description="a file")],
        direction: Annotated[
            Literal["up", "down", "both"], Field(description="up: who imports it; down: what it imports")
        ] = "both",
        depth: Annotated[int, Field(ge=0, description="levels; 0: all")] = 1,
        limit: Limit = 100,
    ) -> dict[str, Any]:
        """A file's import graph both ways, with imports outside the workspace."""
        return {"path": path, "direction": direction, "depth": depth, "limit": limit}

    @command_tool(app, tools, "lspHub.impact", empty="nothing depends on it in the index")
    def impact(
        target: Annotated[str, Field(description="a name, FILE:LINE:COL, or a file")],
        depth: Annotated[int, Field(ge=1, le=10, description="caller levels")] = 2,
        limit: Limit = 30,
    ) -> dict[str, Any]:
        """What may break if a symbol or file changes: files with reasons, ranked, and the tests to run."""
        return {"target": target, "depth": depth, "limit": limit}

    @command_tool(app, tools, "lspHub.search", empty="no match")
    def search(
        pattern: Annotated[str | None, Field(description="text (literal unless regex)")] = None,
        regex: bool = False,
        ignore_case: bool = False,
        globs: Annotated[list[str] | None, Field(description="only files matching these")] = None,
        structural: Annotated[
            str | None, Field(description="instead of pattern: an ast-grep pattern, e.g. $A.get($B)")
        ] = None,
        language: Annotated[str | None, Field(description="structural: the language")] = None,
        limit: Limit = 100,
    ) -> dict[str, Any]:
        """Search the workspace (ripgrep, or ast-grep with structural); each hit with its enclosing definition."""
        sent: dict[str, Any] = {"limit": limit}
        if structural is not None:
            sent.update(structural=structural, language=language)
        else:
            sent.update(pattern=pattern, regex=regex, ignoreCase=ignore_case, globs=list(globs or []))
        return sent

    @command_tool(app, tools, "lspHub.symbols", empty="no symbol matches")
    def find_symbol(
        query: Annotated[str, Field(description="a name or part of one (fuzzy)")], limit: Limit = 30
    ) -> dict[str, Any]:
        """Find definitions by a fuzzy name: exact, prefix, camelCase/snake_case pieces, substring."""
        return {"query": query, "limit": limit}

    @command_tool(app, tools, "lspHub.context", paths=("targets",))
    def context(
        description: Annotated[str, Field(description="the task, in words")] = "",
        targets: Annotated[list[str] | None, Field(description="files the task is about")] = None,
        budget: Annotated[int, Field(ge=200, description="bytes")] = 8000,
    ) -> dict[str, Any]:
        """A ready context block for a task: relevant files with reasons, targets' imports, named definitions."""
        return {"description": description, "targets": list(targets or []), "budget": budget}

    @command_tool(app, tools, "lspHub.callTree", empty="it calls nothing the index sees")
    def call_tree(
        symbol: Target,
        depth: Annotated[int, Field(ge=1, le=20)] = 3,
        include_unresolved: bool = False,
        limit: Limit = 100,
    ) -> dict[str, Any]:
        """A symbol's outgoing calls as a tree."""
        return {"symbol": symbol, "depth": depth, "includeUnresolved": include_unresolved, "limit": limit}

    @command_tool(app, tools, "lspHub.trace", empty="no entry point reaches it")
    def trace(symbol: Target, limit: Limit = 10) -> dict[str, Any]:
        """Call paths from entry points (main, scripts, routes, commands, public API, tests) to a symbol, shortest
        first."""
        return {"symbol": symbol, "limit": limit}

    @tool
    async def relevant_files(
        description: Annotated[str, Field(description="the task, in words")],
        targets: Annotated[list[str] | None, Field(description="files already known to matter")] = None,
        top_n: Annotated[int, Field(ge=1, description="how many files")] = 10,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """The files most relevant to a task, each with the reasons it was chosen."""
        return await call(ctx, AgentTools.relevant_files, description, targets, top_n)

    @tool
    async def callers(
        file: File = None,
        line: Line = None,
        column: Column = None,
        symbol: Symbol = None,
        depth: Annotated[int, Field(ge=1, le=5, description="callers of callers, up to this")] = 1,
        limit: Limit = 50,
        index_only: Annotated[bool, Field(description="the index alone: no server started or asked")] = False,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Where a function is called, across files: the index's callers confirmed by the language server (one
        only one found is marked [server] or [index]). Give file+line+column or symbol."""
        return await call(ctx, AgentTools.callers, file, line, column, symbol, depth, limit, index_only)

    @tool
    async def check_syntax(
        file: Annotated[str, Field(description="the file (its name gives the language)")],
        content: Annotated[str | None, Field(description="check this text instead of the file")] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Check a file's syntax (or a text's, as that file) with its language's parser; writes nothing."""
        return await call(ctx, AgentTools.check_syntax, file, content)

    @tool
    async def write_file(
        path: Annotated[str, Field(description="the file to create or replace")],
        content: Annotated[str, Field(description="the whole new content")],
        force: Force = False,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Create or replace a file. Refused, nothing written, on a syntax error; else written, formatted, and
        answered with every language server's diagnostics on it and its dependents."""
        return await call(ctx, AgentTools.write_file, path, content, force)

    @tool
    async def edit_file(
        path: Annotated[str, Field(description="the file to edit")],
        old_text: Annotated[str, Field(description="exact text, found once")],
        new_text: Annotated[str, Field(description="its replacement")],
        force: Force = False,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Replace old_text (found exactly once) with new_text; checked and answered like write_file."""
        return await call(ctx, AgentTools.edit_file, path, old_text, new_text, force)

    @tool
    async def apply_edits(
        edits: Annotated[list[EditItem], Field(description="applied in order")],
        force: Force = False,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Edit several files as one write, all or none, each checked and answered like write_file."""
        items = [{key: value for key, value in item.model_dump().items() if value is not None} for item in edits]
        return await call(ctx, AgentTools.apply_edits, items, force)

    @tool
    async def undo(ctx: Context | None = None) -> CallToolResult:
        """Take back your last write (or applied rename, format, code action) unless its files changed since;
        repeat to go further back."""
        return await call(ctx, AgentTools.undo)

    return app
