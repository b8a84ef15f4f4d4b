"""What the index keeps per file in memory and in the cache: a compact tuple form of a FileIndex.

Building hundreds of thousands of frozen dataclass objects costs seconds (the standard library has ~430,000
definitions and references), while `marshal` loads the same data as plain tuples in a tenth of a second. So the
index keeps each file's results as "packed" tuples, which the graph and search code read directly, and builds the
`FileIndex` objects of a file only when a query needs positions from it (`FileRecord.file_index`).

Packed layout (PACKED_FORMAT; bump it when changing anything here, it is part of the cache schema version):
    (language, syntax_error_count, line_count, definitions, references, imports, field_types, local_types,
     decorators, registrations, generated mark)
    definition: (name, kind, start_line, start_col, end_line, end_col,
                 name_start_line, name_start_col, name_end_line, name_end_col, signature, container)
    reference:  (name, start_line, start_col, end_line, end_col, is_call, caller, receiver)
    import:     (module, names, level, span as a 4-tuple or None, aliases: ((local, imported name or "*"), ...))
    field type: (class, attribute, type name)
    local type: (function or "" at module level, variable, type name, or the callee as written + "()" when the variable
                 is made by a call: its class, or the called function's return annotation, decided at query time)
    decorator:  (0-based start line of the decorated definition, decorator as written without its arguments,
                 its own 0-based line: above the definition's first line in Python, within its range elsewhere)
    registration: (handler name, registering call as written: `app.get`)
    generated mark: the comment at the file's top that says it was generated (`generated_marks`), or ""
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from lsp_hub.index.definition_scopes import local_flags
from lsp_hub.index.model import Definition, FileIndex, Import, Reference, Span

log = logging.getLogger(__name__)

PACKED_FORMAT = 6
MARSHAL_VERSION = 4

Packed = tuple[Any, ...]

# Field positions in packed tuples, for readers that avoid building objects.
P_LANGUAGE, P_SYNTAX_ERRORS, P_LINES, P_DEFINITIONS, P_REFERENCES, P_IMPORTS = range(6)
P_FIELD_TYPES, P_LOCAL_TYPES, P_DECORATORS, P_REGISTRATIONS, P_GENERATED = range(6, 11)
PACKED_LENGTH = 11
# A definition as `FileRecord.definitions` gives it: what the graphs and maps read, without the spans (those come
# from `file_index()`), which are most of a packed definition's objects. D_LOCAL: inside a function's body.
D_NAME, D_KIND, D_START_LINE, D_SIGNATURE, D_CONTAINER, D_LOCAL = range(6)
# D_LOCAL's values besides False: in a function's body, or a struct's field (Go, Rust, C, C++), which outlines show
# under its struct and no name table holds: `x.Key` on any struct with a `Key` linked caddy's map to every one.
IN_BODY, OUTLINE_ONLY = 1, 2
R_NAME, R_LINE, R_COL, R_END_LINE, R_END_COL, R_IS_CALL, R_CALLER, R_RECEIVER = range(8)
I_MODULE, I_NAMES, I_LEVEL, I_ALIASES = 0, 1, 2, 4


def content_digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def unpack_reference(packed: tuple[Any, ...]) -> Reference:
    return Reference(packed[0], Span(packed[1], packed[2], packed[3], packed[4]), packed[5], packed[6], packed[7])


def unpack_file_index(path: str, packed: Packed, with_references: bool = True) -> FileIndex:
    language, syntax_errors, lines, definitions, references, imports, field_types, local_types = packed[:P_DECORATORS]
    return FileIndex(
        path=path,
        language=language,
        definitions=[
            Definition(d[0], d[1], Span(d[2], d[3], d[4], d[5]), Span(d[6], d[7], d[8], d[9]), d[10], d[11])
            for d in definitions
        ],
        references=[unpack_reference(reference) for reference in references] if with_references else [],
        imports=[
            Import(
                i[0],
                tuple(i[1]),
                i[2],
                None if i[3] is None else Span(*i[3]),
                tuple((local, imported) for local, imported in i[4]),
            )
            for i in imports
        ],
        syntax_error_count=syntax_errors,
        line_count=lines,
        field_types=[(entry[0], entry[1], entry[2]) for entry in field_types],
        local_types=[(entry[0], entry[1], entry[2]) for entry in local_types],
        decorators=[(entry[0], entry[1]) for entry in packed[P_DECORATORS]],
        registrations=[(entry[0], entry[1]) for entry in packed[P_REGISTRATIONS]],
    )


def encode_packed(packed: Packed) -> bytes:
    return marshal.dumps(packed, MARSHAL_VERSION)


def decode_packed(data: bytes) -> Packed:
    value = marshal.loads(data)
    if not isinstance(value, tuple) or len(value) != PACKED_LENGTH:
        raise ValueError("not a packed file index")
    return value


# How marshal starts a tuple (with and without its reference flag, small and large): checked when a row is loaded
# without decoding it, so that a row that is plainly not a packed index is caught as the cache is opened.
_TUPLE_CODES = frozenset(b"()\xa8\xa9")


def looks_packed(data: bytes) -> bool:
    return len(data) > 2 and data[0] in _TUPLE_CODES


ReferenceUses = dict[str, dict[str | None, int]]  # name -> receiver -> how often it is referenced
Head = tuple[Packed, ReferenceUses]


def head_of(packed: Packed) -> Head:
    """What a record keeps decoded (see `FileRecord`): the results without the references, definitions without
    their spans, and the references' counts per (name, receiver)."""
    uses: ReferenceUses = {}
    for reference in packed[P_REFERENCES]:
        by_receiver = uses.get(reference[R_NAME])
        if by_receiver is None:
            by_receiver = uses[reference[R_NAME]] = {}
        receiver = reference[R_RECEIVER]
        by_receiver[receiver] = by_receiver.get(receiver, 0) + 1
    summaries = tuple(
        (d[0], d[1], d[2], kept_signature(d[10], d[11]), d[11], local or (OUTLINE_ONLY if d[1] == "field" else 0))
        for d, local in zip(packed[P_DEFINITIONS], local_flags(packed[P_DEFINITIONS]), strict=True)
    )
    return (*packed[:P_DEFINITIONS], summaries, (), *packed[P_REFERENCES + 1 :]), uses


def kept_signature(signature: str, container: str | None) -> str:
    """The signature a head keeps: a module-level assignment's (`log = getLogger(...)`: the graphs read which
    variables a call made) and a Rust `macro_rules!` (a plain name any module of the crate may use), "" for the
    rest, which only a map's lines show (`FileRecord.signatures()`). Signatures were a third of what a cold build
    holds decoded (8 of 27 KB per file of the monorepo benchmark)."""
    if container is not None:
        return ""
    return signature if "=" in signature or signature.startswith("macro_rules!") else ""


def encode_head(head: Head) -> bytes:
    return marshal.dumps(head, MARSHAL_VERSION)


def decode_head(data: bytes) -> Head | None:
    """A head as `encode_head` wrote it; None when the bytes are not one (the record then decodes its results)."""
    try:
        value = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return None
    if not (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], tuple)
        and len(value[0]) == PACKED_LENGTH
        and isinstance(value[1], dict)
    ):
        return None
    return value[0], value[1]


EMPTY_PACKED: Packed = ("", 0, 0, (), (), (), (), (), (), (), "")
# Where a record whose bytes were let go (they are in the cache) gets them back; None when they are lost.
EncodedLoader = Callable[["FileRecord"], "bytes | None"]
FILE_INDEXES_KEPT = 2048  # about 30 MB of outlines; a callers query of a common name reads 700 files
# Records whose file_index() is built, oldest first, held weakly: the queue bounds how many decoded indexes live
# records keep, and must not keep a record alive itself (a file edited all day makes a new record per change; each
# old one held here kept its decoded index, up to FILE_INDEXES_KEPT versions of the same file).
_kept: deque[weakref.ref[FileRecord]] = deque()
_kept_lock = threading.Lock()
_kept_dead = 0  # entries of `_kept` whose record is gone (counted by the weak references' callback)


def _record_gone(_reference: weakref.ref[FileRecord]) -> None:
    global _kept_dead
    _kept_dead += 1  # an int increment under the GIL; read and reset under the lock


def _compact_kept() -> None:
    """Drop the dead entries (caller holds the lock) once they are half the queue, so that they neither hold the
    queue's slots against live records nor cost a pass on every append."""
    global _kept, _kept_dead
    if _kept_dead * 2 >= len(_kept):
        _kept = deque(reference for reference in _kept if reference() is not None)
        _kept_dead = 0


class FileRecord:
    """One indexed file: its identity on disk and its results. Immutable by convention (a new record replaces the
    old on change), except for the lazily built caches.

    The results are kept encoded (marshal bytes: the form workers send and the cache stores) and decoded once, on
    first use, into a "head": everything but the references, and definitions without their spans (and without
    most signatures: `kept_signature`). References are four fifths of the tuples (346,000 of 432,000 on the
    standard library) and about 80 MB decoded there, yet only per-file queries read them, as they read spans
    (callers, references in one file: `file_index()`); the graphs need the references' counts per (name, receiver),
    which the same decode derives. So a cold start never holds the whole corpus decoded, and a warm one that
    answers from stored rankings decodes only the files its map shows.

    Nor does it hold the corpus encoded: a record read from the cache, or written to it, holds no bytes but a
    `loader` that reads them back by path and digest when a query needs them (at 100,000 files the bytes alone
    are 500 MB)."""

    __slots__ = (
        "__weakref__",
        "_defined_names",
        "_definition_count",
        "_encoded",
        "_file_index",
        "_graph_names",
        "_head",
        "_language",
        "_loader",
        "_outline_only",
        "_reference_counts",
        "_reference_uses",
        "digest",
        "mtime_ns",
        "path",
        "size",
    )

    def __init__(
        self,
        path: str,
        size: int,
        mtime_ns: int,
        digest: bytes,
        encoded: bytes | None,
        language: str | None = None,
        definition_count: int | None = None,
        packed: Packed | None = None,
        loader: EncodedLoader | None = None,
        head: Head | None = None,
    ) -> None:
        """`encoded` with the `language` and `definition_count` stored beside it, or None with a `loader` that
        reads them from the cache; `packed`, the decoded results, when the caller has them at hand (a parse in
        this process), saves the first decode, as does `head` (`head_of` them, made by the worker that parsed
        the file)."""
        self.path = path
        self.size = size
        self.mtime_ns = mtime_ns
        self.digest = digest
        self._encoded = encoded
        self._loader = loader
        self._language = language
        self._definition_count = definition_count
        self._head: Packed | None = None
        self._file_index: FileIndex | None = None
        self._outline_only = False  # `_file_index` is an `outline()`
        self._defined_names: frozenset[str] | None = None
        self._reference_counts: dict[str, int] | None = None
        self._reference_uses: ReferenceUses | None = None
        self._graph_names: tuple[frozenset[str], frozenset[str]] | None = None
        if packed is not None:
            self._keep_head(packed)
        elif head is not None:
            self._head, self._reference_uses = head

    @classmethod
    def of_packed(cls, path: str, size: int, mtime_ns: int, digest: bytes, packed: Packed) -> FileRecord:
        return cls(
            path, size, mtime_ns, digest, encode_packed(packed), packed[P_LANGUAGE], len(packed[P_DEFINITIONS]), packed
        )

    def with_identity(self, size: int, mtime_ns: int, digest: bytes) -> FileRecord:
        """The same results for a file whose identity on disk changed but whose content did not."""
        record = FileRecord(
            self.path,
            size,
            mtime_ns,
            digest,
            self._encoded,
            self._language,
            self._definition_count,
            loader=self._loader,
        )
        record._head, record._reference_uses = self._head, self._reference_uses  # immutable once made
        return record

    def release_encoded(self, loader: EncodedLoader) -> None:
        """Let go of the bytes, which the cache now holds: `loader` reads them back when needed. The language and
        definition count stay (the graphs and statistics read them without decoding)."""
        if self._encoded is None:
            return
        if self._language is None or self._definition_count is None:
            head = self._loaded_head()
            self._language, self._definition_count = head[P_LANGUAGE], len(head[P_DEFINITIONS])
        self._loader = loader
        self._encoded = None

    def _decode(self) -> Packed:
        encoded = self.encoded
        try:
            return decode_packed(encoded)
        except (ValueError, EOFError, TypeError) as error:  # a damaged cache row: the file reads as empty
            log.warning("index cache entry for %s is unreadable (%s); treating it as empty", self.path, error)
            return EMPTY_PACKED

    def _keep_head(self, packed: Packed) -> Packed:
        head, self._reference_uses = head_of(packed)
        self._head = head
        return head

    def _loaded_head(self) -> Packed:
        head = self._head
        if head is None:
            head = self._keep_head(self._decode())
        return head

    @property
    def packed(self) -> Packed:
        """All the results, references included: decoded on each call and not kept (see the class)."""
        return self._decode()

    @property
    def holds_head(self) -> bool:
        """Whether what the graphs read is decoded already (names, imports, reference counts)."""
        return self._head is not None

    @property
    def holds_encoded(self) -> bool:
        """Whether the bytes are in memory (else the cache gives them back on use)."""
        return self._encoded is not None

    @property
    def encoded(self) -> bytes:
        """The results in marshal form: held, or read back from the cache (empty bytes when the cache lost them,
        which decode as a damaged entry: the file reads as empty and says so in the log)."""
        encoded = self._encoded
        if encoded is None:
            loaded = self._loader(self) if self._loader is not None else None
            return b"" if loaded is None else loaded
        return encoded

    @property
    def language(self) -> str:
        if self._language is not None:
            return self._language
        language: str = self._loaded_head()[P_LANGUAGE]
        return language

    @property
    def definition_count(self) -> int:
        if self._definition_count is not None:
            return self._definition_count
        return len(self.definitions)

    @property
    def definitions(self) -> tuple[tuple[Any, ...], ...]:
        """(name, kind, start line, signature, container, local) per definition, in the file's order (see D_NAME...);
        the signature only of module-level assignments (`kept_signature`), "" otherwise: see `signatures()`."""
        definitions: tuple[tuple[Any, ...], ...] = self._loaded_head()[P_DEFINITIONS]
        return definitions

    def signatures(self) -> tuple[str, ...]:
        """Every definition's signature, in the order of `definitions`: decoded on each call (a map shows a few
        files' lines). A damaged cache entry gives the signatures the head kept."""
        signatures = tuple(definition[10] for definition in self._decode()[P_DEFINITIONS])
        if len(signatures) != len(self.definitions):
            return tuple(definition[D_SIGNATURE] for definition in self.definitions)
        return signatures

    @property
    def references(self) -> tuple[tuple[Any, ...], ...]:
        """Decoded on each call: readers want one file's, once."""
        references: tuple[tuple[Any, ...], ...] = self._decode()[P_REFERENCES]
        return references

    @property
    def imports(self) -> tuple[tuple[Any, ...], ...]:
        imports: tuple[tuple[Any, ...], ...] = self._loaded_head()[P_IMPORTS]
        return imports

    @property
    def field_types(self) -> tuple[tuple[str, str, str], ...]:
        field_types: tuple[tuple[str, str, str], ...] = self._loaded_head()[P_FIELD_TYPES]
        return field_types

    @property
    def local_types(self) -> tuple[tuple[str, str, str], ...]:
        local_types: tuple[tuple[str, str, str], ...] = self._loaded_head()[P_LOCAL_TYPES]
        return local_types

    @property
    def line_count(self) -> int:
        lines: int = self._loaded_head()[P_LINES]
        return lines

    @property
    def decorators(self) -> tuple[tuple[int, str, int], ...]:
        decorators: tuple[tuple[int, str, int], ...] = self._loaded_head()[P_DECORATORS]
        return decorators

    @property
    def registrations(self) -> tuple[tuple[str, str], ...]:
        registrations: tuple[tuple[str, str], ...] = self._loaded_head()[P_REGISTRATIONS]
        return registrations

    @property
    def generated_by(self) -> str:
        """The comment at the file's top that says it was generated, or "" when it says nothing of the kind."""
        mark: str = self._loaded_head()[P_GENERATED]
        return mark

    @property
    def syntax_error_count(self) -> int:
        count: int = self._loaded_head()[P_SYNTAX_ERRORS]
        return count

    def file_index(self) -> FileIndex:
        """The file's results as model objects, built on first use and kept while among the last FILE_INDEXES_KEPT
        built (a long-lived hub asked for callers of many names would otherwise end up holding the whole
        workspace as objects, five times its packed size)."""
        found = self._file_index
        if found is None or self._outline_only:
            found = self._keep_file_index(unpack_file_index(self.path, self.packed), outline_only=False)
        return found

    def outline(self) -> FileIndex:
        """`file_index()` without the references (empty): definitions, imports and types, for readers that need no
        references or take them from `calls_named`; built at a fraction of the cost, and kept the same way."""
        found = self._file_index
        if found is None:
            found = self._keep_file_index(
                unpack_file_index(self.path, self.packed, with_references=False), outline_only=True
            )
        return found

    def _keep_file_index(self, built: FileIndex, outline_only: bool) -> FileIndex:
        with _kept_lock:
            if self._file_index is None:  # else it is in the queue already (an outline, now completed)
                _kept.append(weakref.ref(self, _record_gone))
            self._file_index, self._outline_only = built, outline_only
            if len(_kept) > FILE_INDEXES_KEPT:
                _compact_kept()
            while len(_kept) > FILE_INDEXES_KEPT:
                oldest = _kept.popleft()()
                if oldest is not None:
                    oldest._file_index = None
        return built

    def calls_named(self, name: str) -> list[Reference]:
        """The file's calls of `name`, in document order (only these become objects)."""
        return [
            unpack_reference(reference)
            for reference in self.references
            if reference[R_NAME] == name and reference[R_IS_CALL]
        ]

    def defined_names(self) -> frozenset[str]:
        if self._defined_names is None:
            self._defined_names = frozenset(definition_names(self))
        return self._defined_names

    def graph_names(self) -> tuple[frozenset[str], frozenset[str]]:
        """(`member_names`, `dependency_names`), kept once asked. An update of the graphs asks for them of a
        changed file's old record and its new one; the watcher asks first, off the query's path. A build computes
        them once per file and keeps none (100,000 files' sets would stay in memory)."""
        if self._graph_names is None:
            self._graph_names = (member_names(self), dependency_names(self))
        return self._graph_names

    def reference_uses(self) -> dict[str, dict[str | None, int]]:
        """name -> receiver -> how often it is referenced (receivers as in `Reference.receiver`)."""
        uses = self._reference_uses
        if uses is None:
            self._loaded_head()  # derives the uses in the same decode
            uses = self._reference_uses
            assert uses is not None
        return uses

    def reference_counts(self) -> dict[str, int]:
        """How often each name is referenced in the file (names the file defines itself included)."""
        if self._reference_counts is None:
            self._reference_counts = {
                name: sum(by_receiver.values()) for name, by_receiver in self.reference_uses().items()
            }
        return self._reference_counts


def definition_names(record: FileRecord) -> set[str]:
    """Names the file defines, made afresh: the name tables and the links ask for every file's once, and kept on
    every record of a cold build (`defined_names`) they were 1.6 KB a file."""
    return {definition[D_NAME] for definition in record.definitions if definition[D_LOCAL] != OUTLINE_ONLY}


def linkable_names(record: FileRecord) -> set[str]:
    """Names another file can name: not a function's locals (the name tables' definers: 12-14% of the links went
    to a file defining the name only in a function's body, fastapi's `app.get` to tests' local `get` routes)."""
    return {definition[D_NAME] for definition in record.definitions if not definition[D_LOCAL]}


def local_names(record: FileRecord) -> frozenset[str]:
    """Names the file defines only in a function's body (most files have none: one pass)."""
    local = {definition[D_NAME] for definition in record.definitions if definition[D_LOCAL] == IN_BODY}
    return frozenset(local - linkable_names(record)) if local else frozenset()


def member_names(record: FileRecord) -> frozenset[str]:
    """Names the file defines inside a class or namespace (not in a function's body)."""
    return frozenset(
        definition[D_NAME]
        for definition in record.definitions
        if definition[D_CONTAINER] is not None and not definition[D_LOCAL]
    )


def dependency_names(record: FileRecord) -> frozenset[str]:
    """Names whose definers decide where this file's uses point, besides the names it references: names it imports
    under another spelling, and the classes its fields are typed with."""
    names = {imported for raw in record.imports for _local, imported in raw[I_ALIASES] if imported != "*"}
    names.update(type_name for _owner, _attribute, type_name in record.field_types)
    return frozenset(names)
