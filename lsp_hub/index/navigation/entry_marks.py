"""Entry points that the code marks for a framework to call: a handler registered by a decorator (`@app.route`,
`@click.command`, `@pytest.fixture`, Java's `@GetMapping`) or by a call (`app.get("/x", handler)` in TS/JS,
`http.HandleFunc("/x", handler)` in Go), read from the decorators and registrations the index records per file;
and the `bin` files of the root's `package.json`. Names only, as written: `@app.get` counts as a route whatever
`app` is, which is what these decorators mean in practice."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from lsp_hub.index.file_kinds import is_event_handler_name, is_named_callback, is_test_call_name
from lsp_hub.index.graph import language_family
from lsp_hub.index.navigation.common import SymbolRef
from lsp_hub.index.records import D_CONTAINER, D_NAME, D_START_LINE
from lsp_hub.index.workspace import Snapshot

# The last part of a decorator or registering call that makes a handler a route: Flask, FastAPI, Starlette, Django
# Ninja, Express, Koa, Fastify.
ROUTE_VERBS = frozenset(
    ("route", "get", "post", "put", "delete", "patch", "head", "options", "websocket", "api_route", "all")
)
# Go's: net/http's HandleFunc and Handle; gin, echo and chi register with the verbs (`r.GET`, `e.POST`, `r.Get`).
GO_ROUTE_WORDS = frozenset(("handlefunc", "handle"))
_REGISTERING_FAMILIES = frozenset(("ecma", "go"))  # languages whose registrations the queries record
COMMAND_WORDS = frozenset(("command", "group"))  # click, typer
TASK_WORDS = frozenset(("task", "shared_task", "periodic_task", "Cron", "Interval"))  # celery; NestJS's schedule
# pytest; JUnit; xUnit, NUnit and MSTest.
TEST_DECORATORS = frozenset(
    (
        "pytest.fixture",
        "fixture",
        "Test",
        "ParameterizedTest",
        "RepeatedTest",
        "Fact",
        "Theory",
        "TestCase",
        "TestMethod",
        "DataTestMethod",
    )
)
# Spring's request mappings, ASP.NET's action attributes, NestJS's method decorators and microservice handlers,
# JAX-RS's verbs: a handler the framework calls for a path or a message.
ROUTE_ANNOTATIONS = frozenset(
    (
        "Get",
        "Post",
        "Put",
        "Delete",
        "Patch",
        "Head",
        "Options",
        "All",
        "MessagePattern",
        "EventPattern",
        "GET",
        "POST",
        "PUT",
        "DELETE",
        "PATCH",
        "HEAD",
        "OPTIONS",
        "RequestMapping",
        "GetMapping",
        "PostMapping",
        "PutMapping",
        "DeleteMapping",
        "PatchMapping",
        "HttpGet",
        "HttpPost",
        "HttpPut",
        "HttpDelete",
        "HttpPatch",
        "Route",
    )
)
_ECMA = "ecma"
MAX_PACKAGE_JSON_BYTES = 1 << 20


def decorator_kind(written: str) -> str | None:
    """The handler kind (route, command, task, test) of a decorator that registers its function, else None."""
    _receiver, dot, last = written.rpartition(".")
    if (dot and last in ROUTE_VERBS) or last in ROUTE_ANNOTATIONS:
        return "route"
    if last in COMMAND_WORDS:
        return "command"
    if last in TASK_WORDS:
        return "task"
    if written in TEST_DECORATORS:
        return "test"
    return None


class EntryMarks:
    """The handler kind of each definition that a decorator or a registering call marks, per snapshot."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._decorators: dict[str, dict[int, tuple[str, ...]]] = {}

    def handler_kind(self, ref: SymbolRef) -> str | None:
        definition = ref.definition
        if definition.kind not in ("function", "method"):
            return None
        for written in self._decorators_of(ref.path).get(definition.span.start_line, ()):
            kind = decorator_kind(written)
            if kind is not None:
                return kind
        record = self.snapshot.files.get(ref.path)
        family = language_family(record.language) if record is not None else None
        if family in _REGISTERING_FAMILIES and definition.container is None:
            if family == _ECMA and is_named_callback(definition.name) and not is_test_call_name(definition.name):
                # `app.get("/users")`, `process.on("exit")`: an anonymous handler, named by its registration
                # (queries/ecma.scm names no other callback than a test's, a route's and a top-level event's)
                return "event" if is_event_handler_name(definition.name) else "route"
            return "route" if (family, definition.name) in self._registered_routes() else None
        return None

    def is_public(self, ref: SymbolRef, line_text: Callable[[str, int], str]) -> bool:
        """Whether its language lets other code call it: Python without a leading underscore (dunders count),
        TS/JS exported where it is written (`export function`, a method of an `export class` that is not private),
        Go capitalized, Rust `pub`. `line_text(path, line)` gives a line of a file (0-based): the index keeps
        signatures without `export`. Functions and methods of other languages are not judged (False)."""
        definition = ref.definition
        record = self.snapshot.files.get(ref.path)
        if record is None or definition.kind not in ("function", "method"):
            return False
        language = language_family(record.language)
        container = definition.container
        if language == "python":
            return all(_python_public(name) for name in (definition.name, *((container,) if container else ())))
        if language == _ECMA:
            if container is None:
                return line_text(ref.path, definition.span.start_line).lstrip().startswith("export ")
            if definition.signature.startswith(("private ", "#")) or definition.name.startswith("#"):
                return False
            return any(
                other[D_NAME] == container
                and other[D_CONTAINER] is None
                and line_text(ref.path, other[D_START_LINE]).lstrip().startswith("export ")
                for other in record.definitions
            )
        if language == "go":
            return definition.name[:1].isupper()
        if language == "rust":
            return definition.signature.startswith("pub")
        # Not Java or C#: their callers go by name alone (no receiver types), so a public method with an override
        # somewhere has no callers the index can see, and would be taken for a way in (gson's JsonReader.beginArray).
        return False

    def _decorators_of(self, path: str) -> dict[int, tuple[str, ...]]:
        found = self._decorators.get(path)
        if found is None:
            by_line: dict[int, list[str]] = {}
            record = self.snapshot.files.get(path)
            for line, written, _first in record.decorators if record is not None else ():
                by_line.setdefault(line, []).append(written)
            found = self._decorators[path] = {line: tuple(names) for line, names in by_line.items()}
        return found

    def _registered_routes(self) -> frozenset[tuple[str, str]]:
        """(language family, name) of the TS/JS and Go functions registered as route handlers in the workspace."""

        def collect(snapshot: Snapshot) -> frozenset[tuple[str, str]]:
            return frozenset(
                (language_family(record.language), handler)
                for record in snapshot.files.values()
                if language_family(record.language) in _REGISTERING_FAMILIES
                for handler, registrar in record.registrations
                if _routing(registrar.rpartition(".")[2], language_family(record.language))
            )

        routes: frozenset[tuple[str, str]] = self.snapshot.derived("navigation_registered_routes", collect)
        return routes


def _routing(last: str, family: str) -> bool:
    """Whether a registering call's last part (`get` of `app.get`) registers a route handler."""
    if family == "go":
        return last.lower() in ROUTE_VERBS or last.lower() in GO_ROUTE_WORDS
    return last in ROUTE_VERBS


def _python_public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def bin_entries(root: Path) -> dict[str, str]:
    """Workspace path -> command name, from `bin` of the root's package.json (a string names the package's own
    command)."""
    try:
        with (root / "package.json").open("rb") as file:
            package = json.loads(file.read(MAX_PACKAGE_JSON_BYTES))
    except (OSError, ValueError):
        return {}
    if not isinstance(package, dict):
        return {}
    bins = package.get("bin")
    if isinstance(bins, str):
        bins = {str(package.get("name", "bin")).rpartition("/")[2]: bins}
    if not isinstance(bins, dict):
        return {}
    return {target.removeprefix("./"): name for name, target in bins.items() if isinstance(target, str)}
