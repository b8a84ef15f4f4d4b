"""What kind of file a workspace path is, by the conventions of its ecosystem: a test (and the module it tests),
or generated code (bundles, minified files, source maps, vendored copies, lock files, protobuf and other generator
output) that a ranking must not put first on a word match alone."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

TEST_DIRECTORIES = frozenset(("test", "tests", "testing", "__tests__", "spec", "specs"))
GENERATED_DIRECTORIES = frozenset(("dist", "vendor", "vendored", "third_party", "node_modules",
                                   "bower_components", "generated", "__generated__"))
_GENERATED_NAME = re.compile(
    r"(\.min\.[a-z]+|[.-]bundle\.[a-z]+|\.map|\.lock|-lock\.json|\.lock\.json|_pb2(_grpc)?\.pyi?|\.pb\.go|"
    r"\.pb\.(cc|h)|_pb\.(js|ts|d\.ts)|\.g\.dart|\.generated\.[a-z]+|\.gen\.[a-z]+|_generated\.[a-z]+|"
    r"\.designer\.cs|_string\.go|zz_generated[^/]*)$")
# A file this many bytes per line on average is minified (people write lines of 30-60 characters).
MINIFIED_BYTES_PER_LINE = 300
MINIFIED_MIN_BYTES = 4096


# The callees whose call with a title and a callback is a test, named `it("adds")` by the extractor (queries/ecma.scm
# matches the same list): ava, jest, vitest, mocha, node:test, Deno.
TEST_CALLEES = ("test", "it", "describe", "suite", "context", "bench", "Deno")  # queries/ecma.scm's
RUBY_TEST_CALLEES = ("describe", "context", "it", "specify", "scenario", "feature", "test")  # queries/ruby.scm's
# A test's set-up and tear-down (`beforeEach()`, mocha's `before("db")`, RSpec's `before()`): part of the tests.
TEST_HOOKS = ("before", "after", "beforeEach", "afterEach", "beforeAll", "afterAll")  # queries/ecma.scm's
RUBY_TEST_HOOKS = ("before", "after", "around")
_TEST_CALL_NAME = re.compile(
    rf'(?:{"|".join({*TEST_CALLEES, *RUBY_TEST_CALLEES, *TEST_HOOKS, *RUBY_TEST_HOOKS})})(?:\.\w+)*\((?:".*")?\)\Z',
    re.DOTALL,
)
EVENT_VERBS = ("on", "once", "addEventListener", "addListener", "prependListener")
_EVENT_HANDLER_NAME = re.compile(rf'[\w$]+(?:\.[\w$]+)*\.(?:{"|".join(EVENT_VERBS)})\(".*"\)\Z', re.DOTALL)


# A callback the extractor names by the call that registers it: a test (`it("adds")`, a hook: `beforeEach()`), an
# anonymous route handler (`app.get("/users")`) or event handler (`process.on("exit")`). No identifier looks like
# this, so such a name is always one whole symbol.
_CALLBACK_NAME = re.compile(r'[\w$]+(?:\.[\w$]+)*\((?:".*")?\)\Z', re.DOTALL)


def is_named_callback(name: str) -> bool:
    """Whether a definition's name is a callback named by its registering call (a test's or a route's)."""
    return _CALLBACK_NAME.match(name) is not None


def is_event_handler_name(name: str) -> bool:
    """Whether a definition's name is an anonymous event handler's (`process.on("exit")`)."""
    return _EVENT_HANDLER_NAME.match(name) is not None


def is_test_call_name(name: str) -> bool:
    """Whether a definition's name is a test's call (`it("adds")`, `test.serial("x")`, `Deno.test("y")`)."""
    return _TEST_CALL_NAME.match(name) is not None


def is_test_file(path: str) -> bool:
    """Whether a path looks like a test by the conventions of its ecosystem."""
    directory, _, name = path.rpartition("/")
    stem = name.split(".", 1)[0]
    if stem.startswith(("test_", "tests_")) or stem.endswith(("_test", "_tests", "_spec", "Test", "Tests", "Spec")):
        return True
    parts = name.split(".")
    if len(parts) >= 3 and parts[-2] in ("test", "spec"):
        return True
    return stem == "conftest" or any(part in TEST_DIRECTORIES for part in directory.split("/"))


def test_subject(path: str) -> str | None:
    """The bare name a test file tests (`test_cart.py`, `cart_test.go`, `cart.test.ts` -> `cart`), else None."""
    name = posixpath.basename(path)
    stem, _, _extension = name.partition(".")
    for prefix in ("test_", "tests_"):
        if stem.startswith(prefix) and len(stem) > len(prefix):
            return stem[len(prefix):]
    for suffix in ("_test", "_tests", "_spec", "Test", "Tests", "Spec"):
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    parts = name.split(".")
    if len(parts) >= 3 and parts[-2] in ("test", "spec"):
        return ".".join(parts[:-2])
    return None


_EXAMPLE_DIRECTORY = re.compile(r"^_?(examples?|docs?|docs_src|samples?|demos?)$")


def is_example_path(path: str) -> bool:
    """Whether a path lies under an examples', docs' or samples' directory (fastapi's docs_src, express's
    examples): code that shows the project's use, rarely what a task changes first."""
    return any(_EXAMPLE_DIRECTORY.match(part) for part in path.split("/")[:-1])


def bare_name(path: str) -> str:
    """`pkg/cart.test.ts` -> `cart`."""
    return posixpath.basename(path).split(".", 1)[0]


def is_generated_path(path: str) -> bool:
    """Whether the path names generated or vendored code (by directory or by file name)."""
    directory, _, name = path.rpartition("/")
    if _GENERATED_NAME.search(name):
        return True
    return any(part in GENERATED_DIRECTORIES for part in directory.split("/"))


def is_generated(path: str, generated_by: str) -> bool:
    """Whether a file is generated or vendored code: by its path, or by the mark at its top (`generated_by`, the
    record's: `generated_marks`), which names like Bison's `parser.c` do not show."""
    return bool(generated_by) or is_generated_path(path)


def looks_minified(size: int, line_count: int) -> bool:
    """A file of long lines: a bundle or a minified copy."""
    return size >= MINIFIED_MIN_BYTES and size / max(1, line_count) >= MINIFIED_BYTES_PER_LINE


_C_FAMILY = re.compile(r"\.(?:c|h|cc|cpp|cxx|hh|hpp|hxx)$")


def definition_places(paths: Iterable[str]) -> int:
    """How many places the files defining a name are: a C or C++ header's prototype and its source file's body are
    one (jq's `jv_string` in jv.h and jv.c shared its relevance out as if two modules defined it)."""
    return len({_C_FAMILY.sub("", path) for path in paths})
