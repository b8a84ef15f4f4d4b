"""What the index keeps per file in memory and in the cache: a compact tuple form of a FileIndex.

Building hundreds of thousands of frozen dataclass objects costs seconds (the standard library has ~430,000
definitions and references), while `marshal` loads the same data as plain tuples in a tenth of a second. So the
index keeps each file's results as "packed" tuples, which the graph and search code read directly, and builds the
`FileIndex` objects of a file only when a query needs positions from it (`FileRecord.file_index`).

Packed layout (PACKED_FORMAT; bump it when changing anything here, it is part of the cache schema version):
    (language, syntax_error_count, line_count, definitions, references, imports, field_types, local_types)
    definition: (name, kind, start_line, start_col, end_line, end_col,
                 name_start_line, name_start_col, name_end_line, name_end_col, signature, container)
    reference:  (name, start_line, start_col, end_line, end_col, is_call, caller, receiver)
    import:     (module, names, level, span as a 4-tuple or None, aliases: ((local, imported name or "*"), ...))
    field type: (class, attribute, type name)
    local type: (function or "" at module level, variable, type name, or the callee as written + "()" when the variable
                 is made by a call: its class, or the called function's return annotation, decided at query time)
"""

from __future__ import annotations

import hashlib
import logging
import marshal
from typing import Any

from lsp_hub.index.model import Definition, FileIndex, Import, Reference, Span

log = logging.getLogger(__name__)

PACKED_FORMAT = 4
MARSHAL_VERSION = 4

Packed = tuple[Any, ...]

# Field positions in packed tuples, for readers that avoid building objects.
P_LANGUAGE, P_SYNTAX_ERRORS, P_LINES, P_DEFINITIONS, P_REFERENCES, P_IMPORTS, P_FIELD_TYPES, P_LOCAL_TYPES = range(8)
D_NAME, D_KIND, D_START_LINE, D_SIGNATURE, D_CONTAINER = 0, 1, 2, 10, 11
R_NAME, R_LINE, R_COL, R_IS_CALL, R_CALLER, R_RECEIVER = 0, 1, 2, 5, 6, 7
I_MODULE, I_NAMES, I_LEVEL, I_ALIASES = 0, 1, 2, 4


def content_digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def unpack_file_index(path: str, packed: Packed) -> FileIndex:
    language, syntax_errors, lines, definitions, references, imports, field_types, local_types = packed
    return FileIndex(
        path=path,
        language=language,
        definitions=[
            Definition(d[0], d[1], Span(d[2], d[3], d[4], d[5]), Span(d[6], d[7], d[8], d[9]), d[10], d[11])
            for d in definitions
        ],
        references=[Reference(r[0], Span(r[1], r[2], r[3], r[4]), r[5], r[6], r[7]) for r in references],
        imports=[Import(i[0], tuple(i[1]), i[2], None if i[3] is None else Span(*i[3]),
                        tuple((local, imported) for local, imported in i[4])) for i in imports],
        syntax_error_count=syntax_errors,
        line_count=lines,
        field_types=[(entry[0], entry[1], entry[2]) for entry in field_types],
        local_types=[(entry[0], entry[1], entry[2]) for entry in local_types],
    )


def encode_packed(packed: Packed) -> bytes:
    return marshal.dumps(packed, MARSHAL_VERSION)


def decode_packed(data: bytes) -> Packed:
    value = marshal.loads(data)
    if not isinstance(value, tuple) or len(value) != 8:
        raise ValueError("not a packed file index")
    return value


# How marshal starts a tuple (with and without its reference flag, small and large): checked when a row is loaded
# without decoding it, so that a row that is plainly not a packed index is caught as the cache is opened.
_TUPLE_CODES = frozenset(b"()\xa8\xa9")


def looks_packed(data: bytes) -> bool:
    return len(data) > 2 and data[0] in _TUPLE_CODES


class FileRecord:
    """One indexed file: its identity on disk and its packed results. Immutable by convention (a new record
    replaces the old on change), except for the lazily built caches. A record loaded from the cache keeps its
    stored bytes and decodes them on first use: a warm start that answers from stored rankings reads a few files'
    results, not all of them."""

    __slots__ = ("_defined_names", "_definition_count", "_encoded", "_file_index", "_language", "_packed",
                 "_reference_counts", "_reference_uses", "digest", "mtime_ns", "path", "size")

    def __init__(self, path: str, size: int, mtime_ns: int, digest: bytes, packed: Packed | None,
                 encoded: bytes | None = None, language: str | None = None,
                 definition_count: int | None = None) -> None:
        """Either `packed`, or `encoded` with the `language` and `definition_count` stored beside it."""
        self.path = path
        self.size = size
        self.mtime_ns = mtime_ns
        self.digest = digest
        self._packed = packed
        self._encoded = encoded if packed is None else None
        self._language = language
        self._definition_count = definition_count
        self._file_index: FileIndex | None = None
        self._defined_names: frozenset[str] | None = None
        self._reference_counts: dict[str, int] | None = None
        self._reference_uses: dict[str, dict[str | None, int]] | None = None

    @property
    def packed(self) -> Packed:
        packed = self._packed
        if packed is None:
            try:
                packed = decode_packed(self._encoded or b"")
            except (ValueError, EOFError, TypeError) as error:  # a damaged cache row: the file reads as empty
                log.warning("index cache entry for %s is unreadable (%s); treating it as empty", self.path, error)
                packed = ("", 0, 0, (), (), (), (), ())
            self._packed = packed
            self._encoded = None
        return packed

    @property
    def encoded(self) -> bytes | None:
        """The stored bytes when the record came from the cache and has not been decoded yet."""
        return self._encoded

    @property
    def language(self) -> str:
        if self._packed is None and self._language is not None:
            return self._language
        language: str = self.packed[P_LANGUAGE]
        return language

    @property
    def definition_count(self) -> int:
        if self._packed is None and self._definition_count is not None:
            return self._definition_count
        return len(self.definitions)

    @property
    def definitions(self) -> tuple[tuple[Any, ...], ...]:
        definitions: tuple[tuple[Any, ...], ...] = self.packed[P_DEFINITIONS]
        return definitions

    @property
    def references(self) -> tuple[tuple[Any, ...], ...]:
        references: tuple[tuple[Any, ...], ...] = self.packed[P_REFERENCES]
        return references

    @property
    def imports(self) -> tuple[tuple[Any, ...], ...]:
        imports: tuple[tuple[Any, ...], ...] = self.packed[P_IMPORTS]
        return imports

    @property
    def field_types(self) -> tuple[tuple[str, str, str], ...]:
        field_types: tuple[tuple[str, str, str], ...] = self.packed[P_FIELD_TYPES]
        return field_types

    @property
    def local_types(self) -> tuple[tuple[str, str, str], ...]:
        local_types: tuple[tuple[str, str, str], ...] = self.packed[P_LOCAL_TYPES]
        return local_types

    @property
    def syntax_error_count(self) -> int:
        count: int = self.packed[P_SYNTAX_ERRORS]
        return count

    def file_index(self) -> FileIndex:
        """The file's results as model objects, built on first use."""
        if self._file_index is None:
            self._file_index = unpack_file_index(self.path, self.packed)
        return self._file_index

    def defined_names(self) -> frozenset[str]:
        if self._defined_names is None:
            self._defined_names = frozenset(d[D_NAME] for d in self.definitions)
        return self._defined_names

    def reference_uses(self) -> dict[str, dict[str | None, int]]:
        """name -> receiver -> how often it is referenced (receivers as in `Reference.receiver`)."""
        if self._reference_uses is None:
            uses: dict[str, dict[str | None, int]] = {}
            for reference in self.references:
                by_receiver = uses.get(reference[R_NAME])
                if by_receiver is None:
                    by_receiver = uses[reference[R_NAME]] = {}
                receiver = reference[R_RECEIVER]
                by_receiver[receiver] = by_receiver.get(receiver, 0) + 1
            self._reference_uses = uses
        return self._reference_uses

    def reference_counts(self) -> dict[str, int]:
        """How often each name is referenced in the file (names the file defines itself included)."""
        if self._reference_counts is None:
            self._reference_counts = {name: sum(by_receiver.values())
                                      for name, by_receiver in self.reference_uses().items()}
        return self._reference_counts
