"""Which languages the index understands, and their tree-sitter grammars.

Grammars come from `tree-sitter-language-pack==0.13.0`, which ships them compiled inside the wheel, so loading works
offline (1.x downloads grammars at run time). Languages are cached per process (a worker process loads each grammar
once) and parsers per thread. tree-sitter itself is imported on the first grammar asked for: knowing which files
the index covers (`language_for_path`) must not load it (a warm `lsp-hub repomap` parses nothing).
"""

from __future__ import annotations

import posixpath
import threading
from functools import cache
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import tree_sitter

# Language name (as the index and the language pack spell it) -> file extensions, without the dot, lower case.
LANGUAGE_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "python": ("py", "pyi"),
    "typescript": ("ts", "mts", "cts"),
    "tsx": ("tsx",),
    # JSX is valid input for the javascript grammar, so .jsx files use it too.
    "javascript": ("js", "mjs", "cjs", "jsx"),
    "go": ("go",),
    "rust": ("rs",),
    "java": ("java",),
    "c": ("c", "h"),
    "cpp": ("cc", "cpp", "cxx", "hpp", "hh", "hxx"),
    "csharp": ("cs",),
    "ruby": ("rb",),
}

SUPPORTED_LANGUAGES: frozenset[str] = frozenset(LANGUAGE_EXTENSIONS)

EXTENSION_LANGUAGES: dict[str, str] = {
    extension: language for language, extensions in LANGUAGE_EXTENSIONS.items() for extension in extensions
}


def language_for_path(path: str) -> str | None:
    """The language of a file judged by its extension (case-insensitive), or None when the index does not support it."""
    return language_for_name(posixpath.basename(path.replace("\\", "/")))


def language_for_name(name: str) -> str | None:
    """`language_for_path` of a bare file name (the walk has names from the directory listing)."""
    stem, dot, extension = name.rpartition(".")
    return EXTENSION_LANGUAGES.get(extension.lower()) if dot and stem else None


def _require_supported(language: str) -> None:
    if language not in SUPPORTED_LANGUAGES:
        raise ValueError(f"unsupported language: {language!r}")


@cache
def get_language(language: str) -> tree_sitter.Language:
    """The tree-sitter Language for a supported language name; raises ValueError for others."""
    _require_supported(language)
    import tree_sitter_language_pack  # here: only parsing needs it (and tree-sitter, which it imports)

    return tree_sitter_language_pack.get_language(cast(Any, language))


_thread_state = threading.local()


def get_parser(language: str) -> tree_sitter.Parser:
    """The calling thread's parser for the language, created once per thread (a tree-sitter Parser must not be
    used by two threads at once; the hub may parse on its event loop and in an executor at the same time)."""
    parsers: dict[str, tree_sitter.Parser] | None = getattr(_thread_state, "parsers", None)
    if parsers is None:
        parsers = _thread_state.parsers = {}
    parser = parsers.get(language)
    if parser is None:
        import tree_sitter

        parser = parsers[language] = tree_sitter.Parser(get_language(language))
    return parser
