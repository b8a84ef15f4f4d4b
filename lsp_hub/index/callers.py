"""Who calls a function: call sites across the workspace, found by name and narrowed by imports and scoping.

A call counts for a definition when the calling file may mean that definition (`graph.UseResolver`): `foo()` in a
file that imports `foo` from another module does not count; `module.foo()` counts when `module` is bound to the
definition's file. A method call on an unknown receiver (`x.foo()`) counts only when the name has a single
definition in the workspace, or the receiver names the class (`Cart.foo()`, `cart.foo()`); `self.foo()` counts
for the caller's own class; a plain `foo()` never reaches a method in Python or TS/JS; `pkg.mod.foo()` counts for
the module whose path ends in pkg/mod. `depth > 1` walks callers of callers breadth first, without cycles, within
bounds.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from lsp_hub.index.file_kinds import is_named_callback
from lsp_hub.index.graph import MODULE_SCOPED_LANGUAGES, SELF_RECEIVERS, chain_head, language_family, use_resolver
from lsp_hub.index.graph_inputs import COMMON_NAMES, alias_users, name_tables
from lsp_hub.index.model import Definition, FileIndex, Reference, Span
from lsp_hub.index.receiver_types import (
    OUTSIDE,
    TypeInference,
    WorkspaceClass,
    attribute_type,
    cloud_definer,
    declared_class,
)
from lsp_hub.index.records import FileRecord
from lsp_hub.index.symbols import (
    definition_targets,
    definitions_named,
    enclosing_definition,
    has_parameter,
    location,
    plain_name_can_mean,
    qualified_name,
)
from lsp_hub.index.type_clouds import TypeCloud
from lsp_hub.index.workspace import Snapshot, file_uri

MAX_DEPTH = 10
MAX_CALLERS = 500
MAX_LIMIT = 10_000  # what a query may ask for instead of MAX_CALLERS
_SEPARATORS = re.compile(r"[^0-9a-zA-Z]+")


@dataclass(frozen=True, slots=True)
class _Target:
    path: str
    definition: Definition

    @property
    def key(self) -> tuple[str, str, str | None, int]:
        return (self.path, self.definition.name, self.definition.container, self.definition.span.start_line)


def _squashed(text: str) -> str:
    return _SEPARATORS.sub("", text).lower()


def resolve_targets_at(snapshot: Snapshot, path: str, line: int, character: int) -> list[tuple[str, Definition]]:
    """The definitions meant at a position: the name under the cursor (a definition or a use), else the function
    or method the position is inside."""
    targets = definition_targets(snapshot, path, line, character)
    if targets:
        return targets
    record = snapshot.files.get(path)
    if record is None:
        return []
    enclosing = enclosing_definition(record.outline(), Span(line, character, line, character))
    return [(path, enclosing)] if enclosing is not None else []


def resolve_targets_by_name(snapshot: Snapshot, symbol: str) -> list[tuple[str, Definition]]:
    """`name`, `Container.name` (`Container::name`) or a named callback whole (`describe("a.b()")`, `app.get("/x")`).
    A class that does not define `name` answers with what it inherits (`Flask.route` is Scaffold's)."""
    symbol = symbol.strip()
    if is_named_callback(symbol):
        return definitions_named(snapshot, symbol)
    container: str | None = None
    name = symbol
    for separator in ("::", "."):
        if separator in symbol:
            container, _, name = symbol.rpartition(separator)
            container = container.rsplit(separator, 1)[-1]
            break
    found = definitions_named(snapshot, name)
    if container is not None:
        in_container = [entry for entry in found if entry[1].container == container]
        # `storage.save_user`: a module (file stem or directory) rather than a class.
        in_module = [entry for entry in found if container in entry[0].rsplit(".", 1)[0].split("/")]
        found = in_container or in_module or WorkspaceClass(snapshot, container).member(name)
    return found


# Where `TypeInference` types a receiver from its function's variables and parameters.
_INFERRED_LANGUAGES = frozenset(("python", "typescript", "tsx"))


class _CallJudge:
    """Whether a call site may call a target. What does not depend on the target is worked out once per query: a
    query for a common name (`get`: 64 definitions, 1,300 call sites in the standard library) asks the same
    questions of every site for every target."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.resolver = use_resolver(snapshot)
        self._targets: dict[tuple[str, str, str | None], tuple[str, ...]] = {}
        self._attribute_types: dict[tuple[str, str, str], str | None] = {}
        self._inherits: dict[tuple[str, str], bool] = {}
        self._reached: dict[tuple[str, str, str | None, bool], bool] = {}
        self._receiver_classes: dict[tuple[str, str], str | None] = {}
        # By the caller's identity: callers come from the files' cached indexes, held by `_CallSites` for the query.
        self._inferred: dict[tuple[str, str, int, int | None], WorkspaceClass | TypeCloud | str | None] = {}
        self._squashed: dict[str, str] = {}

    def counts(
        self,
        source: str,
        file_index: FileIndex,
        used_name: str,
        receiver: str | None,
        caller: Definition | None,
        target: _Target,
        definition_count: int,
        line: int | None = None,
    ) -> bool:
        """Whether a call of `used_name` in `source` (with `receiver`) may be a call of this target (`used_name` is
        the target's name, or a local alias of it)."""
        definition = target.definition
        key = (source, used_name, receiver)
        targets = self._targets.get(key)
        if targets is None:
            targets = self._targets[key] = self.resolver.targets(source, used_name, receiver)
        if target.path not in targets:
            bound = self.resolver.bindings.get(source, {}).get(receiver) if receiver is not None else None
            if receiver is not None and bound is not None:
                # `from app import app` inside one test binds `app` for the resolver in the whole file; another
                # test's own `app = Flask()` says what its `app` is
                in_scope = self._typed_in_scope(source, file_index, receiver, caller, definition)
                return (
                    in_scope if in_scope is not None else self._imported_instance_reaches(bound, receiver, definition)
                )
            # `this.send()` in a subclass whose file defines another `send`: the resolver keeps to the file, but the
            # class may inherit the target (or `super` reach it)
            return (
                receiver in SELF_RECEIVERS
                and caller is not None
                and caller.container is not None
                and definition.container not in (None, caller.container)
                and self._reaches(caller.container, definition, bases_only=receiver == "super")
            )
        is_member = definition.container is not None and definition.kind == "method"
        if receiver is None:
            # A plain `name()` reaches a class's member (a method, an attribute: `type(self)` is not `Option.type`)
            # only from inside its class, which these languages do not allow.
            return plain_name_can_mean(self.snapshot, file_index.language, target.path, definition)
        if receiver in SELF_RECEIVERS:
            if caller is None or caller.container is None or definition.container is None:
                return True
            if receiver == "super":  # `super().save()`: the nearest base that defines it
                return self._reaches(caller.container, definition, bases_only=True)
            # `self.save()`: the class's own, else the nearest base's (a subclass calling an inherited method)
            return caller.container == definition.container or self._reaches(caller.container, definition)
        if self.resolver.bindings.get(source, {}).get(receiver) is not None:
            return True  # `module.name` or `ImportedClass.name`: the resolver already checked where it leads
        head = chain_head(receiver)
        if head in SELF_RECEIVERS and caller is not None and caller.container is not None:
            known_type = self._attribute_type(source, file_index, caller.container, receiver[len(head) + 1 :])
            if known_type is not None:
                # `self.store.write()` with `self.store = IndexStore()` (or a subclass of the method's class)
                return definition.container is not None and self._reaches(known_type, definition)
        if not is_member and head is not None and head not in SELF_RECEIVERS:
            return True  # `package.module.name()`: the resolver matched the module path
        container = definition.container
        if definition.kind == "function" and container is None and file_index.language in MODULE_SCOPED_LANGUAGES:
            # `app.use()` is not the module function `use`: that is reached through its module (bound above)
            return False
        if container is not None and self._squash(receiver) == self._squash(container):
            return True  # `Cart.total()`, `cart.total()`
        known_class = self._receiver_class(source, file_index, receiver)
        if known_class is not None:  # `app = Flask(...)`; `app.route()` reaches Scaffold.route through the bases
            return known_class == container or self._reaches(known_class, definition)
        if container is not None and file_index.language == "go" and receiver.isidentifier():
            # Go: only a variable made by an outside package's call is judged (`t := template.New(...)`)
            if self._inferred_class(source, file_index, receiver, caller, line) == OUTSIDE:
                return False
        elif container is not None and file_index.language in _INFERRED_LANGUAGES:
            inferred = self._inferred_class(source, file_index, receiver, caller, line)
            if inferred == OUTSIDE:
                return False  # `task = asyncio.ensure_future(...)`, `future: asyncio.Future`: not a workspace object
            if isinstance(inferred, WorkspaceClass):
                # the nearest definition in its inheritance: `app.add_url_rule()` on a Flask is App's, not Scaffold's
                return self._reaches(inferred.name, definition)
            if isinstance(inferred, TypeCloud):
                reached = cloud_definer(self.snapshot, inferred, definition.name)
                if reached is not None:  # `res.json()` on the typed client's response: the one cloud class with json
                    return reached == container
        return definition_count == 1 and definition.name not in COMMON_NAMES

    def _squash(self, text: str) -> str:
        squashed = self._squashed.get(text)
        if squashed is None:
            squashed = self._squashed[text] = _squashed(text)
        return squashed

    def _attribute_type(self, source: str, file_index: FileIndex, owner: str, attribute: str) -> str | None:
        key = (source, owner, attribute)
        if key not in self._attribute_types:
            self._attribute_types[key] = attribute_type(file_index, owner, attribute)
        return self._attribute_types[key]

    def _class_inherits(self, class_name: str, container: str) -> bool:
        key = (class_name, container)
        known = self._inherits.get(key)
        if known is None:
            known = self._inherits[key] = WorkspaceClass(self.snapshot, class_name).inherits(container)
        return known

    def _typed_in_scope(
        self, source: str, file_index: FileIndex, receiver: str, caller: Definition | None, definition: Definition
    ) -> bool | None:
        """Whether the calling function (or one around it) types `receiver` as a class that reaches the method;
        None when the function has no variable or parameter of that name (the import stands)."""
        if caller is None or definition.container is None or file_index.language not in _INFERRED_LANGUAGES:
            return None if caller is None else False
        own_variable = any(owner == caller.name and name == receiver for owner, name, _typed in file_index.local_types)
        if not (own_variable or has_parameter(caller.signature, receiver)):
            return None  # only the function's own variable or parameter stands against an import of the file
        inferred = self._inferred_class(source, file_index, receiver, caller)
        return isinstance(inferred, WorkspaceClass) and self._reaches(inferred.name, definition)

    def _imported_instance_reaches(self, bound: tuple[str, ...], receiver: str, definition: Definition) -> bool:
        """Whether `receiver`, imported from a module that makes it (`app = Flask(__name__)` in the package,
        `from js_example import app` in its views), is of a class that reaches the method."""
        if definition.container is None or "." in receiver:
            return False
        for path in bound:
            record = self.snapshot.files.get(path)
            made = declared_class(record.outline(), receiver) if record is not None else None
            if made is not None and self._reaches(made, definition):
                return True
        return False

    def _reaches(self, class_name: str, definition: Definition, bases_only: bool = False) -> bool:
        """Whether a call of `definition`'s name on an instance of `class_name` (on its bases: `super()`) reaches
        `definition`: the nearest class in its inheritance that defines the name is the definition's."""
        key = (class_name, definition.name, definition.container, bases_only)
        known = self._reached.get(key)
        if known is None:
            members = WorkspaceClass(self.snapshot, class_name).member(definition.name, bases_only)
            known = self._reached[key] = any(member.container == definition.container for _path, member in members)
        return known

    def _receiver_class(self, source: str, file_index: FileIndex, receiver: str) -> str | None:
        key = (source, receiver)
        if key not in self._receiver_classes:
            self._receiver_classes[key] = declared_class(file_index, receiver)
        return self._receiver_classes[key]

    def _inferred_class(
        self, source: str, file_index: FileIndex, receiver: str, caller: Definition | None, line: int | None = None
    ) -> WorkspaceClass | TypeCloud | str | None:
        key = (source, receiver, id(caller), line)
        if key not in self._inferred:
            inference = TypeInference(self.snapshot, source, file_index)
            self._inferred[key] = inference.receiver_class(receiver, caller, line)
        return self._inferred[key]


class _CallSites:
    """The calls of a name in a file, each with its enclosing function, found once per query and name."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str], list[tuple[Reference, Definition | None]]] = {}

    def of(self, record: FileRecord, outline: FileIndex, name: str) -> list[tuple[Reference, Definition | None]]:
        found = self._found.get((record.path, name))
        if found is None:
            found = self._found[record.path, name] = [
                (reference, enclosing_definition(outline, reference.span)) for reference in record.calls_named(name)
            ]
        return found


class CallerLookups:
    """What finding callers reads, kept across the searches of one question (a trace asks for the callers of every
    function on its paths, mostly in the same files): outlines, each file's calls of a name, the judge's inferences."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.judge = _CallJudge(snapshot)
        self.calls = _CallSites()
        self.outlines: dict[str, FileIndex] = {}
        self.definition_counts: dict[tuple[str, str], int] = {}  # (name, language family) -> definitions


def find_callers(
    snapshot: Snapshot,
    targets: list[tuple[str, Definition]],
    depth: int = 1,
    max_callers: int = MAX_CALLERS,
    lookups: CallerLookups | None = None,
) -> dict[str, Any]:
    """`{symbol, definitions, callers: [{location, caller, depth}], complete}` for already resolved targets;
    `lookups` shared by the searches of one question."""
    depth = max(1, min(depth, MAX_DEPTH))
    if lookups is None or lookups.snapshot is not snapshot:
        lookups = CallerLookups(snapshot)
    tables = name_tables(snapshot)
    initial = [_Target(path, definition) for path, definition in targets]
    symbol = qualified_name(initial[0].definition) if initial else None
    result_callers: list[dict[str, Any]] = []
    truncated = False
    seen_targets = {target.key for target in initial}
    seen_sites: set[tuple[str, int, int]] = set()
    queue: deque[tuple[_Target, int]] = deque((target, 1) for target in initial)
    definition_counts = lookups.definition_counts
    judge = lookups.judge
    calls = lookups.calls
    outlines = lookups.outlines  # the sources' definitions and types (their calls come from `calls`)
    while queue:
        target, level = queue.popleft()
        name = target.definition.name
        family = language_family(snapshot.files[target.path].language)
        if (name, family) not in definition_counts:
            # Unique within the languages that can call it: a TypeScript `save` does not make a Python one ambiguous.
            definition_counts[name, family] = sum(
                1
                for path, _definition in definitions_named(snapshot, name)
                if language_family(snapshot.files[path].language) == family
            )
        # Files that use the name, and files that import it under another name (`from m import name as other`).
        uses = [(source, name) for source in tables.referencers.get(name, ())]
        uses.extend(alias_users(snapshot).get(name, ()))
        for source, used_name in uses:
            record = snapshot.files[source]
            file_index = outlines.get(source)
            if file_index is None:  # held for the query: each target reads the same files
                file_index = outlines[source] = record.outline()
            for reference, caller in calls.of(record, file_index, used_name):
                if used_name != name and reference.receiver is not None:
                    continue  # `x.other()` is not the alias
                count = definition_counts[name, family]
                line = reference.span.start_line
                if not judge.counts(source, file_index, used_name, reference.receiver, caller, target, count, line):
                    continue
                site = (source, reference.span.start_line, reference.span.start_col)
                if site in seen_sites:
                    continue
                if len(result_callers) >= max_callers:
                    truncated = True
                    queue.clear()
                    break
                seen_sites.add(site)
                result_callers.append(
                    {
                        "location": location(snapshot, source, reference.span),
                        "caller": qualified_name(caller) if caller is not None else None,
                        "depth": level,
                    }
                )
                if caller is not None and level < depth:
                    next_target = _Target(source, caller)
                    if next_target.key not in seen_targets:
                        seen_targets.add(next_target.key)
                        queue.append((next_target, level + 1))
            if truncated:
                break
    completeness = snapshot.completeness()
    if truncated:
        completeness["complete"] = False
        completeness["truncated"] = f"stopped after {max_callers} callers"
    return {
        "symbol": symbol,
        "definitions": [
            {**location(snapshot, target.path, target.definition.name_span), "name": qualified_name(target.definition)}
            for target in initial
        ],
        "callers": result_callers,
        **completeness,
    }


# --- merging a language server's call sites ------------------------------------------------------------------

ORIGIN_INDEX, ORIGIN_SERVER, ORIGIN_BOTH = "index", "server", "both"


def _range_key(location: dict[str, Any]) -> tuple[str, int, int, int, int]:
    start, end = location["range"]["start"], location["range"]["end"]
    return (location["uri"], start["line"], start["character"], end["line"], end["character"])


def _same_site(index_location: dict[str, Any], server_location: dict[str, Any]) -> bool:
    """Whether a server's call site is the index's: the same line of the same file, and the ranges overlap or
    start together (a server may give the callee's whole expression, `shop.pay`, where the index gives `pay`)."""
    uri, line, start, _end_line, end = _range_key(index_location)
    server_uri, server_line, server_start, server_end_line, server_end = _range_key(server_location)
    if uri != server_uri or line != server_line:
        return False
    if server_end_line != server_line:
        server_end = 1 << 30
    return start == server_start or (start < server_end and server_start < end)


def merge_callers(
    index_callers: list[dict[str, Any]], server_callers: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """The index's callers (`{location, caller, depth}`) and a server's direct call sites (`{location, caller}`) as
    one list, each with its `origin`: `both` (the server confirms the index's site), `server` (only the server
    knows it) or `index`. Without a server answer (`None`) every caller is the index's, in the index's order.

    Direct callers (depth 1) the server knows come first, by file and position; direct callers only the index
    knows follow (a server can be wrong about dynamic code, so they are kept, but they are less sure); deeper
    levels, which the server was not asked about, keep the index's order after them. A pure function: the
    inputs are not changed."""
    if server_callers is None:
        return [{**caller, "origin": ORIGIN_INDEX} for caller in index_callers]
    unmatched: list[dict[str, Any]] = []
    # A server may list one site twice (two prepared items of one symbol; its call hierarchy and its references).
    for site in server_callers:
        if not any(_same_site(site["location"], other["location"]) for other in unmatched):
            unmatched.append(site)
    confirmed: list[dict[str, Any]] = []
    index_only: list[dict[str, Any]] = []
    deeper: list[dict[str, Any]] = []
    for caller in index_callers:
        if caller.get("depth", 1) != 1:
            deeper.append({**caller, "origin": ORIGIN_INDEX})
            continue
        match = next((site for site in unmatched if _same_site(caller["location"], site["location"])), None)
        if match is None:
            index_only.append({**caller, "origin": ORIGIN_INDEX})
        else:
            unmatched.remove(match)
            confirmed.append({**caller, "origin": ORIGIN_BOTH})
    for site in unmatched:
        confirmed.append(
            {"location": site["location"], "caller": site.get("caller"), "depth": 1, "origin": ORIGIN_SERVER}
        )
    confirmed.sort(key=lambda caller: _range_key(caller["location"]))
    return confirmed + index_only + deeper


def name_server_callers(snapshot: Snapshot, sites: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A server's call sites (`{location, caller?}`) with the caller named as the index names it (the enclosing
    function or method, `Class.method`); a site in a file the index does not hold keeps the server's name."""
    named: list[dict[str, Any]] = []
    for site in sites:
        caller = site.get("caller")
        path = _snapshot_path(snapshot, site["location"]["uri"])
        record = snapshot.files.get(path) if path is not None else None
        if record is not None:
            start = site["location"]["range"]["start"]
            enclosing = enclosing_definition(
                record.outline(), Span(start["line"], start["character"], start["line"], start["character"])
            )
            caller = qualified_name(enclosing) if enclosing is not None else None
        named.append({"location": site["location"], "caller": caller})
    return named


def _snapshot_path(snapshot: Snapshot, uri: str) -> str | None:
    """The workspace-relative path of a `file://` URI inside the snapshot's root, else None."""
    root_uri = file_uri(snapshot.root, "").rstrip("/") + "/"
    return unquote(uri[len(root_uri) :]) if uri.startswith(root_uri) else None


def callers_beyond_server_sites(
    snapshot: Snapshot, merged: list[dict[str, Any]], depth: int, max_callers: int = MAX_CALLERS
) -> list[dict[str, Any]]:
    """For `depth` > 1: the index's walk continued from the callers only the server found (their callers at depth
    2 and beyond, origin `index`), appended after `merged`; sites already listed are not repeated."""
    if depth <= 1:
        return merged
    seen = {_range_key(caller["location"])[:3] for caller in merged}
    extra: list[dict[str, Any]] = []
    for caller in merged:
        if caller["origin"] != ORIGIN_SERVER:
            continue
        path = _snapshot_path(snapshot, caller["location"]["uri"])
        record = snapshot.files.get(path) if path is not None else None
        if record is None or path is None:
            continue
        start = caller["location"]["range"]["start"]
        enclosing = enclosing_definition(
            record.outline(), Span(start["line"], start["character"], start["line"], start["character"])
        )
        if enclosing is None:
            continue
        walked = find_callers(snapshot, [(path, enclosing)], depth - 1, max_callers)
        for found in walked["callers"]:
            key = _range_key(found["location"])[:3]
            if key in seen:
                continue
            seen.add(key)
            extra.append({**found, "depth": found["depth"] + 1, "origin": ORIGIN_INDEX})
    return merged + extra


def opens_a_call(line_text: str, end_character: int) -> bool:
    """Whether a name ending at `end_character` (a UTF-16 column) of `line_text` is called: the next character
    that is not a space is `(`, or type arguments on the line and then `(` (TypeScript's `useState<string>(`). How
    a reference from `textDocument/references` is told to be a call site."""
    if not line_text.isascii():
        end_character = len(line_text.encode("utf-16-le")[: 2 * end_character].decode("utf-16-le", "ignore"))
    rest = line_text[end_character:].lstrip()
    if rest.startswith("<"):
        depth = 0
        for position, character in enumerate(rest):
            depth += (character == "<") - (character == ">")
            if depth == 0:
                rest = rest[position + 1 :].lstrip()
                break
    return rest.startswith("(")
