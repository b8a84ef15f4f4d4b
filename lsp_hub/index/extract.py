"""Extract definitions, references, calls and imports from one file with the language's tags query.

Each supported language has `queries/<language>.scm`, a tags-style tree-sitter query written for this project.
One query run per file yields everything; the Python work per file is one pass over the matches, a sort, and a sweep
that assigns containers and callers. No other walk of the tree happens unless the tree has syntax errors.

Capture conventions of the `.scm` files (one match = one symbol):

- `@definition.<kind>` the whole definition node, with `@name` its identifier. `<kind>` is a model `SymbolKind`:
  function, method, class, interface, type, constant, variable, module. Post-processing: a `function` whose
  innermost enclosing definition/scope is class-like (class, interface, type, impl scope) becomes a `method`
  whose `container` is that name; a `variable` named in UPPER_CASE becomes a `constant`. An optional `@container`
  capture names the container explicitly (Go method receivers, C++ `Foo::bar` definitions); it wins over nesting
  and makes a function a method.
- `@scope.<kind>` a region that contains definitions without being one itself (a Rust `impl Foo` block), with
  `@name` the container name. `<kind>` is `class` (functions inside become methods) or `module`.
- `@reference.<what>` a use of a name, with `@name` the identifier. `<what>` is `call` for calls (is_call=True,
  caller = innermost enclosing function/method) or any other word (`class`, `type`, `decorator`, ...) for non-call
  uses. The reference's span is the `@name` node's. `@receiver` is what the name is taken from (`x` in `x.foo()`,
  `models` in `models.Base`); it becomes `Reference.receiver`: the text when it is a name or a chain of names
  (`a.b`, `a::b`, whitespace dropped), COMPLEX_RECEIVER ("?") for any other expression, None when the pattern has
  no receiver (a plain name). Every pattern whose name is a member of something must capture it.
- `@import` the import statement (its span), `@import.module` the node whose text is the module as written (string
  quotes are stripped), `@import.name` zero or more imported names, `@import.relative` a marker that the module is
  relative to the importing file (Ruby `require_relative`), `@import.alias` the local name an import binds under
  another name (`b` of `from m import a as b` or `import { a as b }`, paired with the match's `@import.name`; `z` of
  `import m as z` or `import * as z`, paired with "*"). Matches of the same statement and module are merged.
- `@field` a statement that gives an attribute a type, with `@name` the attribute and `@type` the type's name
  (`self.store = IndexStore()`, `self.store: IndexStore = ...`, `this.cart = new Cart()`, a TS field `cart: Cart`);
  the class is the innermost class around it. Calls through the attribute (`self.store.write()`) use it. With
  `@parameter` the type is a parameter of the method (`self.host = host`), stored as `method(parameter)`.
- `@local` a statement that gives a variable a type, with `@name` the variable and `@type` the type's name, or the
  callee as written when the statement also captures `@made_by_call` (`s: Shop = ...`, `s = make()`, `s = Shop()`,
  `s = shop.make()`), or the literal when it captures `@literal` (`s = "a"`: the literal's built-in type); the
  function is the innermost function around it ("" at module level; class bodies are left to their definitions).
  Calls through the variable (`s.pay()`) use it, with the callee's class or return annotation (`callers.py`).
- `@decorator` a decorator as written, without its arguments (`app.route` of `@app.route("/")`), with `@decorated` the
  definition it decorates: one match per decorator. Kept per definition start line; `trace` reads route, command
  and test handlers from them.
- `@registration` a call registering a named handler for a path (`app.get("/x", handler)`), with `@registrar` the called
  function as written (`app.get`) and `@handler` the handler's name.
- `@test` a test's call (`it("adds", () => ...)`), with `@test.title` its title string and `@test.body` its callback:
  a function named `it("adds")` (the callee as written, the title unquoted), spanning the call, whose callback is
  the caller of the calls in it. `@test.callee`, when given, is the callee to name it by (`it.each` of
  `it.each(table)("adds %i", fn)`).
- Captures whose name starts with `_` only feed predicates and are ignored.

Import statements become `Import`s as each language writes them: `import_forms.py`.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from sys import intern
from typing import Any

import tree_sitter

from lsp_hub.index.c_library import C_LIBRARY_FUNCTIONS
from lsp_hub.index.file_kinds import is_test_call_name
from lsp_hub.index.generated_marks import generated_mark
from lsp_hub.index.import_forms import interpret_import, squeeze
from lsp_hub.index.languages import SUPPORTED_LANGUAGES, get_language
from lsp_hub.index.model import COMPLEX_RECEIVER, FileIndex
from lsp_hub.index.records import R_RECEIVER, Packed, unpack_file_index
from lsp_hub.index.struct_fields import STRUCT_LANGUAGES, struct_fields
from lsp_hub.index.syntax import parse_best
from lsp_hub.index.text import PositionConverter, count_lines, decode, utf16_length

QUERIES_DIR = Path(__file__).resolve().parent / "queries"

SIGNATURE_MAX_CHARS = 200
_HEADER_MAX_BYTES = 1000
# A header (up to the body) longer than _HEADER_MAX_BYTES but within this is read whole, its docstrings shortened.
_LONG_HEADER_MAX_BYTES = 64 * 1024
_DOC_ARGUMENT = re.compile(rb""",\s*Doc\(\s*(?:\"\"\"\.\.\.\"\"\"|"[^"\n]*"|'[^'\n]*')\s*,?\s*\)(?:\s*,(?=\s*\]))?""")
# Definitions that are a signature and nothing else (TypeScript's interface members and overloads, Go's interface
# methods, Rust's trait methods without a default): their first line alone was `register<R extends Registry>(`.
_BODILESS_SIGNATURES = frozenset(
    ("function_signature", "method_signature", "abstract_method_signature", "method_elem", "function_signature_item")
)
_SPACES = re.compile(rb"  +")
_OPENING_BRACKETS_ORD = frozenset(b"([{")
_CLOSING_BRACKETS_ORD = frozenset(b")]}")
_TRIPLE_QUOTED = re.compile(rb"(?s)\"\"\".*?\"\"\"|'''.*?'''")

DEFINITION_KINDS: frozenset[str] = frozenset(
    ("function", "method", "class", "interface", "type", "constant", "variable", "module", "field")
)
# Containers whose functions are methods.
_CLASS_LIKE = frozenset(("class", "interface", "type"))
_TAGGED_TYPES = frozenset(("struct_specifier", "union_specifier", "enum_specifier"))
_FUNCTION_LIKE = frozenset(("function", "method"))
_CONTAINER_KINDS = frozenset(("class", "interface", "type", "module"))

# Go specs sit inside a declaration that carries the keyword; the keyword makes the repo-map line readable.
_SIGNATURE_PREFIXES = {"type_spec": "type ", "type_alias": "type ", "const_spec": "const ", "var_spec": "var "}
_KIND_SPECIFICITY = {"variable": 0, "function": 1}
_SIMPLE_RECEIVER = re.compile(r"[A-Za-z_$@][\w$]*\Z")
# `a.b` and `a::b`: a chain of names, kept as written (modules, namespaces, `self.field`).
_RECEIVER_CHAIN = re.compile(r"[A-Za-z_$@][\w$]*(?:(?:\.|::)[A-Za-z_$@][\w$]*)+\Z")
_CONSTANT_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_HAS_SPACE = re.compile(r"\s").search


def query_source(language: str) -> str:
    """The text of the language's tags query, with the files it inherits prepended.

    A query file may start with `; inherits: a, b` (as nvim-treesitter's do) to include `a.scm` and `b.scm` first;
    JavaScript, TypeScript and TSX share most of their patterns this way."""
    parts: list[str] = []
    seen: set[str] = set()

    def add(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        text = (QUERIES_DIR / f"{name}.scm").read_text(encoding="utf-8")
        first_line = text.split("\n", 1)[0]
        if first_line.startswith("; inherits:"):
            for parent in first_line.removeprefix("; inherits:").split(","):
                add(parent.strip())
        parts.append(text)

    add(language)
    return "\n".join(parts)


_compiled: set[str] = set()  # the languages get_query has compiled in this process


@cache
def get_query(language: str) -> tree_sitter.Query:
    """The compiled tags query of a supported language, once per process."""
    query = tree_sitter.Query(get_language(language), query_source(language))
    _compiled.add(language)
    return query


def query_compiled(language: str) -> bool:
    """Whether this process has compiled the language's query (50 ms for Python, 300 ms for C++ to compile)."""
    return language in _compiled


# What the query found, before the sweep: (definition node, name node, kind, explicit container node),
# (scope node, name node, kind) and (name node, is_call, receiver node).
_FoundDefinition = tuple[tree_sitter.Node, tree_sitter.Node, str, "tree_sitter.Node | None"]
_FoundScope = tuple[tree_sitter.Node, tree_sitter.Node, str]
_FoundReference = tuple[tree_sitter.Node, bool, "tree_sitter.Node | None"]
_FoundTest = tuple[str, int, int, int]  # a test's name, its callback's start and end byte and first line
# (statement node, imported names, relative marker, (local alias, imported name or "*") pairs)
_FoundImport = tuple[tree_sitter.Node, list[str], bool, list[tuple[str, str]]]
_EVENT_SCOPE, _EVENT_DEFINITION = range(2)

# Roles of a query pattern, worked out from the capture names of its first match and cached per pattern.
_DEFINITION, _SCOPE, _REFERENCE, _IMPORT, _FIELD, _LOCAL, _DECORATOR, _REGISTRATION, _TEST, _IGNORED = range(10)
_RECEIVER_MAX_BYTES = 80
TEST_TITLE_MAX_CHARS = 80  # of a test's title in its name (`it("...")`)


def _pattern_role(capture_names: Iterable[str]) -> tuple[int, str, str]:
    """(role, role capture name, kind) for a match with these capture names."""
    for capture in capture_names:
        head, _, tail = capture.partition(".")
        if head == "definition" and tail in DEFINITION_KINDS:
            return _DEFINITION, capture, tail
        if head == "scope":
            return _SCOPE, capture, tail
        if head == "reference":
            return _REFERENCE, capture, tail
        if capture == "import":
            return _IMPORT, capture, ""
        if capture == "field":
            return _FIELD, capture, ""
        if capture == "local":
            return _LOCAL, capture, ""
        if capture == "decorated":
            return _DECORATOR, capture, ""
        if capture == "registration":
            return _REGISTRATION, capture, ""
        if head == "test":
            return _TEST, "test", ""
    return _IGNORED, "", ""


# Braces keep their spaces: an object type written on one line is `{ a: string }`.
_OPENING_BRACKETS = (b"(", b"[", b"<")
_CLOSING_BRACKETS = (b")", b"]", b">")


def _keep_routes_outside_tests(definitions: dict[int, _FoundDefinition], tests: dict[int, _FoundTest]) -> None:
    """A route registered inside a test's callback (express's tests make an app in each test) stays part of the
    test: its calls are the test's, so trace starts at the test, not at a route of the test file."""
    bodies = [(start, end) for name, start, end, _line in tests.values() if is_test_call_name(name)]
    if not bodies:
        return
    for key, (name, start, end, _line) in list(tests.items()):
        if not is_test_call_name(name) and any(outer <= start and end <= last for outer, last in bodies):
            del tests[key]
            del definitions[key]


def _header_comments(node: tree_sitter.Node, limit: int) -> list[tree_sitter.Node]:
    """The comments inside a definition that start before `limit` (its body's start, or its first line's end), at
    any depth (hono's `get var(): Readonly<// eslint-...` has one inside its return type), in document order."""
    found: list[tree_sitter.Node] = []
    stack = list(reversed(node.children))
    while stack:
        child = stack.pop()
        if child.start_byte >= limit:
            continue
        if "comment" in child.type:
            found.append(child)
        else:
            stack.extend(reversed(child.children))
    return found


_CLOSERS = {ord("("): b")", ord("["): b"]", ord("{"): b"}", ord("<"): b">"}
_QUOTES = frozenset(b"'\"`")
_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


def _closed(header: bytes) -> bytes:
    """A first line that ends opening a bracket, with what it leaves open closed: `Types = Union[` reads
    `Types = Union[...]`, `describe("math", () => {` reads `describe("math", () => {...})`, TypeScript's
    `type InternalOptions = Required<` reads `Required<...>`."""
    last = len(header) - 1
    if last < 0 or header[last] not in _CLOSERS or (header[last] == ord("<") and not _generic_at(header, last)):
        return header
    open_brackets: list[int] = []
    quote = 0
    for at, byte in enumerate(header):
        if quote:
            if byte == quote:
                quote = 0
        elif byte in _QUOTES:
            quote = byte
        elif byte in _CLOSERS and (byte != ord("<") or _generic_at(header, at)):
            open_brackets.append(byte)
        elif open_brackets and byte == _CLOSERS[open_brackets[-1]][0]:
            open_brackets.pop()
    if quote or not open_brackets:
        return header  # a string left open, or closers that do not match: not for us to mend
    return header + b"..." + b"".join(_CLOSERS[byte] for byte in reversed(open_brackets))


def _generic_at(header: bytes, at: int) -> bool:
    """Whether the `<` at `at` opens type arguments (`Required<`), not a comparison (`a < b`)."""
    return at > 0 and header[at - 1] in _NAME_BYTES


def _without_comments(header: bytes, start: int, comments: list[tree_sitter.Node]) -> bytes:
    """`header` (the source from byte `start`) without `comments`, which lie in it in document order."""
    for comment in reversed(comments):
        header = header[: comment.start_byte - start] + header[comment.end_byte - start :]
    return header


def _without_doc_annotations(header: bytes) -> bytes:
    """`name: Annotated[T, Doc("...")]` as `name: T` (PEP 727's documentation in the annotation: FastAPI and Typer
    write a parameter's prose there, which would fill the signature a map shows)."""
    header = _DOC_ARGUMENT.sub(b"", header)
    pieces: list[bytes] = []
    position = 0
    while (found := header.find(b"Annotated[", position)) >= 0:
        inner_start = found + len(b"Annotated[")
        depth, end, other_metadata = 1, inner_start, False
        while end < len(header) and depth:
            byte = header[end]
            if byte in _OPENING_BRACKETS_ORD:
                depth += 1
            elif byte in _CLOSING_BRACKETS_ORD:
                depth -= 1
            elif byte == 44 and depth == 1:  # a comma: metadata other than Doc stays, and Annotated with it
                other_metadata = True
            end += 1
        if depth or other_metadata:
            pieces.append(header[position:inner_start])
            position = inner_start
            continue
        pieces.append(header[position:found] + header[inner_start : end - 1].strip())
        position = end
    pieces.append(header[position:])
    return b"".join(pieces)


def _joined_lines(lines: list[bytes]) -> bytes:
    """A wrapped header's lines on one: a space between them, none inside brackets (`f(\n a\n) -> T` is `f(a) ->
    T`, black's wrapping without a trailing comma), and a trailing comma before a closing bracket dropped."""
    joined = lines[0]
    for line in lines[1:]:
        closing = line[:1] in _CLOSING_BRACKETS
        if closing and joined.endswith(b","):
            joined = joined[:-1] + line
        elif closing or joined[-1:] in _OPENING_BRACKETS:
            joined += line
        else:
            joined += b" " + line
    return joined


class _Scope:
    """A definition or scope region during the container sweep."""

    __slots__ = ("end_byte", "is_class_like", "is_container", "is_function", "name", "start_byte")

    def __init__(self, end_byte: int, kind: str, name: str, start_byte: int = -1) -> None:
        self.end_byte = end_byte
        self.start_byte = start_byte  # a definition's (a scope's: -1)
        self.name = name
        self.is_function = kind in _FUNCTION_LIKE
        self.is_class_like = kind in _CLASS_LIKE
        self.is_container = kind in _CONTAINER_KINDS


_DECLARATIONS = frozenset(("lexical_declaration", "variable_declaration"))


def _holds_object_literal(node: tree_sitter.Node) -> bool:
    """Whether a JS/TS variable's declaration (`const api = {...}`, exported or not) gives it an object literal."""
    if node.type == "export_statement":
        declaration = node.child_by_field_name("declaration")
        if declaration is None:
            return False
        node = declaration
    if node.type not in _DECLARATIONS:
        return False
    declarators = [child for child in node.named_children if child.type == "variable_declarator"]
    value = declarators[0].child_by_field_name("value") if len(declarators) == 1 else None
    return value is not None and value.type == "object"


def extract_file(path: str, source: bytes, language: str) -> FileIndex:
    """Everything the index keeps about one file, as model objects. Never raises on any content; raises ValueError
    only for a language outside SUPPORTED_LANGUAGES. `path` is stored as given (workspace-relative POSIX path)."""
    return unpack_file_index(path, extract_packed(source, language))


def extract_packed(source: bytes, language: str) -> Packed:
    """`extract_file` in the packed tuple form of `records.py`, which is what the index keeps and the workers send:
    building the model objects of hundreds of thousands of references only to pack them again would cost more than
    the parse."""
    if language not in SUPPORTED_LANGUAGES:
        raise ValueError(f"unsupported language: {language!r}")
    line_count = count_lines(source)
    if not source:
        return (language, 0, line_count, (), (), (), (), (), (), (), "")
    # A C file may be C++ (any, not only a `.h`: reading it well matters more here than judging it): read as C,
    # fmt's base.h made its functions' locals top-level definitions. The record stays the walk's language.
    tree, grammar, syntax_errors = parse_best(source, language, may_be_cpp=True)
    return (
        language,
        syntax_errors,
        line_count,
        *_Extractor(source, grammar).run(tree.root_node),
        generated_mark(source),
    )


class _Extractor:
    """One file's query matches turned into packed definitions, references and imports.

    The per-reference work is the hot path (the standard library has ~360,000 references against ~86,000
    definitions), so references never enter the container sweep: a reference's caller is found by bisecting the
    start offsets of the function definitions, and its text and position come from one decoded copy of an ASCII
    source by slicing (byte offsets are character offsets there).

    Names, containers and receivers are interned: marshal then writes a name once per file and a reference to it
    after, and loads it as one shared object, so records are smaller on the wire, in the cache and in memory."""

    def __init__(self, source: bytes, language: str) -> None:
        self.source = source
        self.language = language
        self.positions = PositionConverter(source)
        # ASCII sources (nearly all): one decode, then names are str slices at byte offsets.
        self.ascii_text: str | None = source.decode("ascii") if self.positions.ascii else None

    def _add_bare_calls(self, root: tree_sitter.Node, references: dict[int, _FoundReference]) -> None:
        """Ruby's calls without parentheses or receiver, told from local variables (`ruby_bare_calls`)."""
        from lsp_hub.index.ruby_bare_calls import bare_identifiers

        calls, local_uses = bare_identifiers(root, self.source)
        for node in calls:
            if node.start_byte not in references:
                references[node.start_byte] = (node, True, None)
        for start_byte in local_uses:
            found = references.get(start_byte)
            if found is not None and found[1] and found[2] is None:
                del references[start_byte]  # a local variable's use, not a call (a statement of its own, say)

    def run(self, root: tree_sitter.Node) -> tuple[tuple[Any, ...], ...]:
        """(definitions, references, imports, field types, local types, decorators, registrations), packed."""
        query = get_query(self.language)
        roles: dict[int, tuple[int, str, str]] = {}
        # Keyed by the name node's start byte: several patterns may match the same name.
        definitions: dict[int, _FoundDefinition] = {}
        scopes: list[_FoundScope] = []
        references: dict[int, _FoundReference] = {}
        imports: dict[tuple[int, str], _FoundImport] = {}
        # (start byte, attribute, type, typed by a parameter of the method)
        fields: list[tuple[int, tree_sitter.Node, tree_sitter.Node, bool]] = []
        # (start byte, variable, type, callee or literal, how it is made: _MADE_BY_CALL, _LITERAL or "")
        locals_found: list[tuple[int, tree_sitter.Node, tree_sitter.Node, str]] = []
        # (decorated definition's line, decorator, the decorator's own line: above the definition in Python)
        decorators: dict[tuple[int, str, int], None] = {}
        registrations: dict[tuple[str, str], None] = {}  # (handler, registrar)
        # By name node start byte: a test's name (`it("adds")`) and its callback's byte range, its caller region.
        tests: dict[int, _FoundTest] = {}

        for pattern_index, captures in tree_sitter.QueryCursor(query).matches(root):
            role_info = roles.get(pattern_index)
            if role_info is None:
                role_info = roles[pattern_index] = _pattern_role(captures)
            role, role_capture, kind = role_info
            if role == _REFERENCE:
                names = captures.get("name")
                if not names:
                    continue
                name_node = names[0]
                is_call = kind == "call"
                start_byte = name_node.start_byte
                previous = references.get(start_byte)
                if previous is None:
                    receivers = captures.get("receiver")
                    references[start_byte] = (name_node, is_call, receivers[0] if receivers else None)
                elif (is_call and not previous[1]) or (is_call == previous[1] and previous[2] is None):
                    # Several patterns matched one name: a call wins over another use, a receiver over none.
                    receivers = captures.get("receiver")
                    if receivers or is_call != previous[1]:
                        references[start_byte] = (name_node, is_call, receivers[0] if receivers else None)
            elif role == _IMPORT:
                self._collect_import(captures, imports)
            elif role == _FIELD:
                names = captures.get("name")
                types = captures.get("type")
                if names and types:
                    fields.append((captures["field"][0].start_byte, names[0], types[0], "parameter" in captures))
            elif role == _LOCAL:
                names = captures.get("name")
                types = captures.get("type")
                if names and types:
                    made = _MADE_BY_CALL if "made_by_call" in captures else _LITERAL if "literal" in captures else ""
                    locals_found.append((captures["local"][0].start_byte, names[0], types[0], made))
            elif role == _DECORATOR:
                written = captures.get("decorator")
                if written:
                    line, own_line = captures["decorated"][0].start_point[0], written[0].start_point[0]
                    decorators[line, squeeze(self._text(written[0])), own_line] = None
            elif role == _REGISTRATION:
                registrars, handlers = captures.get("registrar"), captures.get("handler")
                if registrars and handlers:
                    registrations[self._text(handlers[0]), squeeze(self._text(registrars[0]))] = None
            elif role == _TEST:
                self._collect_test(captures, definitions, tests)
            elif role == _IGNORED:
                continue
            else:
                names = captures.get("name")
                role_nodes = captures.get(role_capture)
                if not names or not role_nodes:
                    continue
                name_node = names[0]
                if role == _DEFINITION:
                    previous_definition = definitions.get(name_node.start_byte)
                    # Two patterns may define the same name; the more specific kind wins.
                    if previous_definition is None or _KIND_SPECIFICITY.get(kind, 2) > _KIND_SPECIFICITY.get(
                        previous_definition[2], 2
                    ):
                        containers = captures.get("container")
                        definitions[name_node.start_byte] = (
                            role_nodes[0],
                            name_node,
                            kind,
                            containers[0] if containers else None,
                        )
                else:
                    scopes.append((role_nodes[0], name_node, kind))

        if self.language in STRUCT_LANGUAGES:
            for declaration, name_node in struct_fields([found[0] for found in definitions.values()]):
                definitions.setdefault(name_node.start_byte, (declaration, name_node, "field", None))
        if self.language == "ruby":
            self._add_bare_calls(root, references)
        if len(tests) > 1:
            _keep_routes_outside_tests(definitions, tests)
        packed_definitions, functions, classes = self._build_definitions(definitions, scopes, tests)
        packed_references = self._build_references(references, definitions, functions)
        return (
            packed_definitions,
            packed_references,
            self._build_imports(imports),
            self._field_types(fields, classes, functions),
            self._local_types(locals_found, functions, classes, packed_references),
            tuple(decorators),
            tuple(registrations),
        )

    def _local_types(
        self,
        found: list[tuple[int, tree_sitter.Node, tree_sitter.Node, str]],
        functions: _FunctionRegions,
        classes: _FunctionRegions,
        references: Sequence[Sequence[Any]],
    ) -> tuple[tuple[str, str, str], ...]:
        """(function or "", variable, type or "callee()") per typed variable, in document order; class-body
        attributes are left to their definitions (`attribute_type`). A variable given a literal (`text = "a,b"`,
        `parts = []`) has the literal's built-in type, kept only where a call's receiver is that name: what it
        decides is that `text.split()` is no call of a workspace `Text.split` (most literals never receive one)."""
        innermost = functions.innermost_index if functions.starts else None
        innermost_class = classes.innermost if classes.starts else None
        text = self._text
        receivers: set[str] | None = None
        # Java, C#, Go and C++ declare nearly every local with its type: those no call uses as a receiver (or a chain's
        # head) would only be carried.
        receivers_only = self.language in _DECLARED_LOCALS
        receiver_heads: set[str] | None = None
        # Tests of one title in two `describe`s (hono's types.test.ts has four of several): each one's variables
        # carry its first line (`test("x")@2590`), else one test's `app` made every other's ambiguous.
        repeated = {name for name, count in Counter(functions.names).items() if count > 1}
        out = []
        for start_byte, name_node, type_node, made in sorted(found, key=lambda entry: entry[0]):
            if self.language == "cpp":
                declared = _declared_identifier(name_node)  # `*b = new Writer()`, `&c`: the name inside
                if declared is None:
                    continue
                name_node = declared
            if made == _LITERAL:
                if receivers is None:
                    receivers = {reference[R_RECEIVER] for reference in references}
                if text(name_node) not in receivers:
                    continue
            elif receivers_only:
                if receiver_heads is None:
                    receiver_heads = {
                        reference[R_RECEIVER].partition(".")[0] for reference in references if reference[R_RECEIVER]
                    }
                if text(name_node) not in receiver_heads:
                    continue
            index = innermost(start_byte) if innermost is not None else -1
            owner = functions.names[index] if index >= 0 else ""
            if owner in repeated:
                owner = f"{owner}@{functions.lines[index]}"
            if not owner and innermost_class is not None and innermost_class(start_byte) is not None:
                continue
            if not owner and self.language in _ANONYMOUS_SCOPED:
                owner = _anonymous_owner(name_node)
            if made == _LITERAL:
                builtin = _LITERAL_TYPES["python" if self.language == "python" else "ecma"].get(type_node.type)
                out.append((owner, text(name_node), builtin or type_node.type))
            elif made == _MADE_BY_CALL:  # the callee as written (`make`, `asyncio.ensure_future`): where it comes from
                callee = text(type_node)
                out.append((owner, text(name_node), (squeeze(callee) if _HAS_SPACE(callee) else callee) + "()"))
            else:
                out.append((owner, text(name_node), _last_name_segment(text(type_node))))
        return tuple(out)

    def _field_types(
        self,
        fields: list[tuple[int, tree_sitter.Node, tree_sitter.Node, bool]],
        classes: _FunctionRegions,
        functions: _FunctionRegions,
    ) -> tuple[tuple[str, str, str], ...]:
        """(class, attribute, type) for each attribute typed inside a class; the first typing of an attribute wins
        (an annotation comes before an assignment in the queries). An attribute set from a parameter of its method
        (`self.host = host`) gets `method(parameter)` as its type: the parameter's annotation, read at query time."""
        found: dict[tuple[str, str], str] = {}
        for start_byte, name_node, type_node, from_parameter in sorted(fields, key=lambda entry: entry[0]):
            owner = classes.innermost(start_byte) if classes.starts else None
            if owner is None:
                continue
            if from_parameter:
                method = functions.innermost(start_byte) if functions.starts else None
                if method is None:
                    continue
                type_name = f"{method}({self._text(type_node)})"
            else:
                type_name = _last_name_segment(self._text(type_node))
            found.setdefault((owner, self._text(name_node)), type_name)
        return tuple((owner, attribute, type_name) for (owner, attribute), type_name in found.items())

    # --- definitions, references, callers ---------------------------------------------------------------------

    def _collect_test(
        self,
        captures: dict[str, list[tree_sitter.Node]],
        definitions: dict[int, _FoundDefinition],
        tests: dict[int, _FoundTest],
    ) -> None:
        """A test's call (`it("adds", () => ...)`, `test.serial(...)`, `Deno.test(...)`) as a function named as
        written with its title, so that the calls in its callback have it as their caller (not the module) and the
        file's outline lists its tests. The name cannot be an identifier: no use of a name ever links to it."""
        calls, titles, bodies = captures.get("test"), captures.get("test.title"), captures.get("test.body")
        callees = captures.get("test.callee")  # `it.each` of `it.each(table)(...)`: without the table
        if not calls or not bodies or not (titles or callees):
            return
        call, body = calls[0], bodies[0]
        function = callees[0] if callees else call.child_by_field_name("function")
        if function is None:
            return
        title = titles[0] if titles else function  # a hook's (`beforeEach(() => ...)`) has none: named by its callee
        if title.start_byte in definitions:
            return
        if titles:
            written = " ".join(self._text(title)[1:-1].split())  # without its quotes or backticks, on one line
            if len(written) > TEST_TITLE_MAX_CHARS:
                written = written[: TEST_TITLE_MAX_CHARS - 3].rstrip() + "..."
            name = intern(f'{squeeze(self._text(function))}("{written}")')
        else:
            name = intern(f"{squeeze(self._text(function))}()")
        definitions[title.start_byte] = (call, title, "function", None)
        tests[title.start_byte] = (name, body.start_byte, body.end_byte, body.start_point[0])

    def _build_definitions(
        self,
        definitions: dict[int, _FoundDefinition],
        scopes: list[_FoundScope],
        tests: dict[int, _FoundTest],
    ) -> tuple[tuple[Any, ...], _FunctionRegions, _FunctionRegions]:
        """One sweep in document order with a stack of open definitions gives containers and methods; it also
        collects the function regions that callers are looked up in, and the class regions fields belong to."""
        definition_list = list(definitions.values())
        # (start byte, -end byte, event type, index): at the same byte, outer regions open first.
        events: list[tuple[int, int, int, int]] = [
            (entry[0].start_byte, -entry[0].end_byte, _EVENT_DEFINITION, index)
            for index, entry in enumerate(definition_list)
        ]
        events.extend(
            (entry[0].start_byte, -entry[0].end_byte, _EVENT_SCOPE, index) for index, entry in enumerate(scopes)
        )
        events.sort()

        text = self._text
        span = self._span
        ascii_text = self.ascii_text
        stack: list[_Scope] = []
        functions = _FunctionRegions()
        classes = _FunctionRegions()
        out: list[tuple[Any, ...]] = []
        typedefs: dict[int, int] = {}  # a typedef's open scope (by identity) -> its entry in `out`
        for start_byte, negative_end, event_type, index in events:
            while stack and stack[-1].end_byte <= start_byte:
                stack.pop()
            if event_type == _EVENT_SCOPE:
                node, name_node, kind = scopes[index]
                stack.append(_Scope(-negative_end, kind, intern(text(name_node))))
                continue
            node, name_node, kind, container_node = definition_list[index]
            if stack and stack[-1].start_byte == start_byte and stack[-1].end_byte == -negative_end:
                stack.pop()  # a second name of one declaration (`int a, b;`, Go's `X, Y int`): beside the first
            parent = stack[-1] if stack else None
            if parent is not None and parent.is_function and node.type == "declaration":
                continue  # a C prototype inside a function body declares a local name, defines nothing
            test = tests.get(name_node.start_byte) if tests else None
            name = test[0] if test is not None else intern(text(name_node))
            if not name:
                continue  # a name the parser had to assume (MISSING): fmt's C++ `enum : unsigned {` read as C
            symbol = name[0] == ":" and len(name) > 1  # Ruby's `attr_reader :size` defines `size`
            if symbol:
                name = intern(name[1:])
            if node.type == "declaration" and name in C_LIBRARY_FUNCTIONS:
                continue  # `void free (void *);` in Bison's parser.c: the library's function, not the workspace's
            container: str | None = None
            if container_node is not None:
                container = intern(_last_name_segment(text(container_node)))
                if kind == "function":
                    kind = "method"
            elif parent is not None and parent.is_container:
                container = parent.name
                if kind == "function" and parent.is_class_like:
                    kind = "method"
            elif parent is not None and kind == "field" and id(parent) in typedefs:
                container = parent.name  # `typedef struct { int port; } options;`: a field of `options`
            if kind == "variable" and len(name) > 1 and _CONSTANT_NAME.match(name):
                kind = "constant"
            if ascii_text is not None and "\n" not in name and test is None and not symbol:
                name_row, name_column = name_node.start_point
                name_span: tuple[int, int, int, int] = (name_row, name_column, name_row, name_column + len(name))
            else:
                name_span = span(name_node)
            if symbol:
                name_span = (name_span[0], name_span[1] + 1, name_span[2], name_span[3])
            node_type = node.type
            typedef_index = typedefs.get(id(parent)) if parent is not None else None
            if typedef_index is not None and out[typedef_index][0] == name and node_type in _TAGGED_TYPES:
                # C's `typedef struct reply {...} reply;`: one definition, the struct's, with the typedef's header
                # and whole span (the map and the outline drew `typedef struct reply {` and `struct reply` both).
                typedef = out[typedef_index]
                out[typedef_index] = (name, kind, *typedef[2:6], *name_span, typedef[10], container)
            else:
                signature = self._signature(node, node_type)
                if symbol and node.parent is not None and node.parent.parent is not None:
                    signature = self._signature(node.parent.parent, "call")  # `attr_reader :apps`, not `:apps`
                if node_type == "type_definition" and signature.endswith("{...}") and name not in signature:
                    signature += f" {name};"  # `typedef struct {`: the name it gives is at the end
                out.append((name, kind, *span(node), *name_span, signature, container))
            new_scope = _Scope(-negative_end, kind, name, start_byte)
            if node_type == "type_definition":  # C `typedef struct {...} name;` does not contain the struct
                new_scope.is_container = new_scope.is_class_like = False
                typedefs[id(new_scope)] = len(out) - 1
            elif kind in ("variable", "constant") and _holds_object_literal(node):
                new_scope.is_container = True  # `const api = { get() {...} }`: api's methods, `api.get()` calls
            if test is not None:  # its callback holds its calls, not the call `it(...)` itself
                functions.add(test[1], test[2], name, test[3])
            elif new_scope.is_function:
                functions.add(start_byte, -negative_end, name, node.start_point[0])
            elif new_scope.is_class_like:
                classes.add(start_byte, -negative_end, name, node.start_point[0])
            stack.append(new_scope)
        return tuple(out), functions, classes

    def _build_references(
        self,
        references: dict[int, _FoundReference],
        definitions: dict[int, _FoundDefinition],
        functions: _FunctionRegions,
    ) -> tuple[tuple[Any, ...], ...]:
        """Packed references in document order, each with its caller (innermost enclosing function) and simple
        receiver; a name that is also a definition's name is not a reference."""
        ascii_text = self.ascii_text
        source = self.source
        simple_receiver = _SIMPLE_RECEIVER.match
        receiver_chain = _RECEIVER_CHAIN.match
        # The caller of each reference, by a sweep: references come in document order, so the functions around
        # the current one form a chain of open regions (`open_ends`/`open_names`, innermost last) that only
        # needs the regions starting before it pushed and the ones ending before it popped.
        starts, ends, names = functions.starts, functions.ends, functions.names
        region_count = len(starts)
        next_region = 0
        open_ends: list[int] = []
        open_names: list[str] = []
        caller: str | None = None
        out: list[tuple[Any, ...]] = []
        append = out.append
        for start_byte in sorted(references):
            if start_byte in definitions:
                continue
            if (open_ends and open_ends[-1] <= start_byte) or (
                next_region < region_count and starts[next_region] <= start_byte
            ):
                while next_region < region_count and starts[next_region] <= start_byte:
                    while open_ends and open_ends[-1] <= starts[next_region]:
                        open_ends.pop()
                        open_names.pop()
                    open_ends.append(ends[next_region])
                    open_names.append(names[next_region])
                    next_region += 1
                while open_ends and open_ends[-1] <= start_byte:
                    open_ends.pop()
                    open_names.pop()
                caller = open_names[-1] if open_names else None
            name_node, is_call, receiver_node = references[start_byte]
            end_byte = name_node.end_byte
            receiver = None
            if receiver_node is not None:
                receiver_start, receiver_end = receiver_node.byte_range
                receiver = COMPLEX_RECEIVER
                if receiver_end - receiver_start < _RECEIVER_MAX_BYTES:
                    if ascii_text is not None:
                        text = ascii_text[receiver_start:receiver_end]
                    else:
                        text = decode(source[receiver_start:receiver_end])
                    if simple_receiver(text) is not None:
                        receiver = intern(text)
                    elif text == "super()":  # Python's `super().name()`: a method of a base, like `super.name()`
                        receiver = "super"
                    else:
                        chain = squeeze(text) if _HAS_SPACE(text) else text
                        if receiver_chain(chain) is not None:
                            receiver = intern(chain)
            if ascii_text is not None:
                name = intern(ascii_text[start_byte:end_byte])
                start_row, start_column = name_node.start_point
                if "\n" in name:
                    end_row, end_column = name_node.end_point
                else:
                    end_row, end_column = start_row, start_column + end_byte - start_byte
                append((name, start_row, start_column, end_row, end_column, is_call, caller, receiver))
            else:
                raw = source[start_byte:end_byte]
                if raw.isascii() and b"\n" not in raw:
                    # A name in a file with some non-ASCII text: only its line's prefix may need converting.
                    start_row, start_column = name_node.start_point
                    if start_column:
                        prefix = source[start_byte - start_column : start_byte]
                        if not prefix.isascii():
                            start_column = utf16_length(decode(prefix))
                    append(
                        (
                            intern(raw.decode("ascii")),
                            start_row,
                            start_column,
                            start_row,
                            start_column + len(raw),
                            is_call,
                            caller,
                            receiver,
                        )
                    )
                else:
                    append((intern(decode(raw)), *self._span(name_node), is_call, caller, receiver))
        return tuple(out)

    def _span(self, node: tree_sitter.Node) -> tuple[int, int, int, int]:
        """The node's range as (start line, start UTF-16 column, end line, end UTF-16 column)."""
        start_row, start_column = node.start_point
        end_row, end_column = node.end_point
        if self.ascii_text is not None:
            return (start_row, start_column, end_row, end_column)
        column = self.positions.column
        return (start_row, column(node.start_byte, start_column), end_row, column(node.end_byte, end_column))

    def _text(self, node: tree_sitter.Node) -> str:
        if self.ascii_text is not None:
            return self.ascii_text[node.start_byte : node.end_byte]
        return decode(self.source[node.start_byte : node.end_byte])

    def _signature(self, node: tree_sitter.Node, node_type: str) -> str:
        """The definition's header: up to its body when it has one (collapsed to one line), else its first line."""
        source = self.source
        start = node.start_byte
        limit = min(node.end_byte, start + _HEADER_MAX_BYTES)
        body = node.child_by_field_name("body")
        cut = False
        if body is not None and start < body.start_byte <= start + _LONG_HEADER_MAX_BYTES:
            header = source[start : body.start_byte]
            if b"#" in header or b"/" in header:
                # A comment before the body is no part of the signature: a child of the definition, or of its
                # modifiers (Java's `@SuppressWarnings("serial") // why` above the class).
                header = _without_comments(header, start, _header_comments(node, body.start_byte))
            if b'"""' in header or b"'''" in header:
                # Parameters documented in place (FastAPI's `Annotated[str, Doc("""...""")]`, hundreds of lines):
                # their names and types, not the first line alone (`def get(`) nor the first parameter's prose.
                header = _TRIPLE_QUOTED.sub(b'"""..."""', header)
            if b"Doc(" in header:
                header = _without_doc_annotations(header)
            if len(header) > _HEADER_MAX_BYTES:
                cut = True
                header = header[:_HEADER_MAX_BYTES]
        elif node_type == "declaration":  # a C prototype or variable: the whole statement, however wrapped
            statement_end = source.find(b";", start, limit)
            header = source[start : statement_end + 1 if statement_end >= 0 else limit]
        elif node_type in _BODILESS_SIGNATURES:  # an interface's or trait's method: all of it, however wrapped
            header = source[start:limit]
            cut = limit < node.end_byte
        else:
            line_end = source.find(b"\n", start, limit)
            end = line_end if line_end >= 0 else limit
            header = source[start:end]
            if b"#" in header or b"/*" in header:
                # A comment on the first line (Ruby's `class Error < StandardError # :nodoc:`) is no part of it,
                # nor one that starts there and goes on (C's `#define FLAG 0x04  /* Don't free the async`).
                comments = _header_comments(node, end)
                if comments and comments[-1].end_byte > end:  # the one that goes on is the last to start
                    header = header[: comments.pop().start_byte - start]
                if comments:  # `x = /*@__PURE__*/ make()`: one space where the comment was
                    header = _SPACES.sub(b" ", _without_comments(header, start, comments))
            if header.endswith(b"\\"):  # a macro's first line goes on: `#define SET(o) do { \`
                header = header[:-1]
            header = _closed(header.rstrip())
        if b"\n" in header:
            stripped = header.strip()
            if b"\n" in stripped:
                header = _joined_lines([line.strip() for line in stripped.split(b"\n") if line.strip()])
            else:  # one line and the indentation of the body (most definitions): the same as joining the lines
                header = stripped
            signature = decode(header)
            if "(" in signature or "," in signature:
                signature = signature.replace("( ", "(").replace(", )", ")").replace(",)", ")")
        else:
            signature = decode(header).strip()
        prefix = _SIGNATURE_PREFIXES.get(node_type)
        if prefix is not None and not signature.startswith(prefix):
            signature = prefix + signature
        if len(signature) > SIGNATURE_MAX_CHARS:
            signature = signature[: SIGNATURE_MAX_CHARS - 3].rstrip() + "..."
        elif cut:
            signature = signature.rstrip() + "..."
        return signature

    # --- imports -----------------------------------------------------------------------------------------------

    def _collect_import(
        self, captures: dict[str, list[tree_sitter.Node]], imports: dict[tuple[int, str], _FoundImport]
    ) -> None:
        statements = captures.get("import")
        modules = captures.get("import.module")
        if not statements or not modules:
            return
        statement = statements[0]
        module_text = self._text(modules[0])
        key = (statement.start_byte, module_text)
        entry = imports.get(key)
        if entry is None:
            entry = imports[key] = (statement, [], "import.relative" in captures, [])
        names = entry[1]
        match_names = [self._text(name_node) for name_node in captures.get("import.name", ())]
        for name in match_names:
            if name not in names:
                names.append(name)
        alias_nodes = captures.get("import.alias")
        if not alias_nodes and match_names:
            entry[3].append(("", match_names[0]))  # imported as itself: dropped again unless it is renamed too
        if alias_nodes:
            # `from m import a as b`, `import { a as b }`: b means m's a; `import m as z`, `import * as z`: the module.
            imported = match_names[0] if match_names else "*"
            imported = "*" if imported.startswith("*") else squeeze(imported)
            alias = (self._text(alias_nodes[0]), imported)
            if alias[0] != imported and alias not in entry[3]:  # `var a = require("m").a` binds a as itself
                entry[3].append(alias)

    def _build_imports(self, imports: dict[tuple[int, str], _FoundImport]) -> tuple[tuple[Any, ...], ...]:
        out: list[tuple[Any, ...]] = []
        for key, (statement, names, relative, found_aliases) in imports.items():
            span = self._span(statement)
            # `{ a, a as b }` binds both names: a name imported as itself and renamed too keeps an alias to itself.
            renamed = {imported for local, imported in found_aliases if local}
            aliases = [
                (local or imported, imported) for local, imported in found_aliases if local or imported in renamed
            ]
            for module, imported_names, level, bound_aliases in interpret_import(
                self.language, statement.type, key[1], names, relative, tuple(aliases)
            ):
                out.append((module, imported_names, level, span, bound_aliases))
        return tuple(out)


_ANONYMOUS_SCOPED = frozenset(("typescript", "tsx", "javascript"))
# Typed locals kept only for names a call's receiver starts with.
_DECLARED_LOCALS = frozenset(("java", "csharp", "go", "cpp"))
_MADE_BY_CALL, _LITERAL = "call", "literal"  # how a typed local variable is made (`@made_by_call`, `@literal`)
# A literal's node type -> its built-in type, which no workspace class is: Python's, then JavaScript's.
_LITERAL_TYPES = {
    "python": {"string": "str", "list": "list", "dictionary": "dict"},
    "ecma": {"string": "String", "template_string": "String", "array": "Array"},
}
_ANONYMOUS_FUNCTIONS = frozenset(("arrow_function", "function_expression", "function", "generator_function"))


def _anonymous_owner(node: tree_sitter.Node) -> str:
    """`@first-last` (0-based lines) of the anonymous function around a variable outside every named function (a
    test's callback: `it('x', async () => { const res = ... })`), "" when none: each callback's variables apart."""
    current = node.parent
    while current is not None:
        if current.type in _ANONYMOUS_FUNCTIONS:
            return f"@{current.start_point[0]}-{current.end_point[0]}"
        current = current.parent
    return ""


class _FunctionRegions:
    """The byte ranges of a file's function (or class) definitions in document order (outer before inner at the
    same start), with each one's enclosing one, for finding the innermost function (or class) around an offset."""

    __slots__ = ("ends", "lines", "names", "parents", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.names: list[str] = []
        self.parents: list[int] = []
        self.lines: list[int] = []  # each region's first line (0-based): tells functions of one name apart

    def add(self, start_byte: int, end_byte: int, name: str, line: int) -> None:
        """Regions must come in document order; tree nodes nest, so the enclosing one is on the open chain."""
        parent = len(self.starts) - 1
        while parent >= 0 and self.ends[parent] <= start_byte:
            parent = self.parents[parent]
        self.starts.append(start_byte)
        self.ends.append(end_byte)
        self.names.append(name)
        self.parents.append(parent)
        self.lines.append(line)

    def innermost(self, offset: int) -> str | None:
        index = self.innermost_index(offset)
        return self.names[index] if index >= 0 else None

    def innermost_index(self, offset: int) -> int:
        index = bisect_right(self.starts, offset) - 1
        ends = self.ends
        while index >= 0 and ends[index] <= offset:
            index = self.parents[index]
        return index


def _declared_identifier(declarator: tree_sitter.Node) -> tree_sitter.Node | None:
    """The name a C++ declarator declares (`b` of `*b = new Writer()`, `c` of `&c`); None for a function's
    declarator or an array's."""
    node: tree_sitter.Node | None = declarator
    while node is not None and node.type != "identifier":
        if node.type == "init_declarator" or node.type == "pointer_declarator":
            node = node.child_by_field_name("declarator")
        elif node.type == "reference_declarator":
            node = node.named_children[0] if node.named_children else None
        else:
            return None
    return node


def _last_name_segment(text: str) -> str:
    """`pkg::Outer<T>` -> `Outer`; `*Server` -> `Server`: the bare name of a container written as a type."""
    text = text.split("<", 1)[0]
    for separator in ("::", "."):
        text = text.rsplit(separator, 1)[-1]
    return text.strip().lstrip("*&").strip()
