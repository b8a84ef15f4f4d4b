"""ARCHITECTURE.md stays a map: under 15,000 bytes, and every `lsp_hub/...` path it names exists (a module moved or
removed fails here until the map follows), as does every test file it names as the check of an invariant."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT

DOC = REPO_ROOT / "ARCHITECTURE.md"
LIMIT = 15_000
# A path as the document writes it: `lsp_hub/` then names, slashes and dots (a trailing dot ends a sentence).
PATH = re.compile(r"\b((?:lsp_hub|tests|bench)/[\w./*-]*[\w/*])")


def named_paths(text: str) -> list[str]:
    return sorted(set(PATH.findall(text)))


def missing(paths: list[str]) -> list[str]:
    return [path for path in paths if not (any(REPO_ROOT.glob(path)) if "*" in path else (REPO_ROOT / path).exists())]


def test_the_architecture_document_is_under_15000_bytes() -> None:
    size = len(DOC.read_bytes())
    assert size <= LIMIT, f"ARCHITECTURE.md is {size} bytes; keep it a map under {LIMIT} (details go to docstrings)"


def test_every_path_the_architecture_document_names_exists() -> None:
    paths = named_paths(DOC.read_text(encoding="utf-8"))
    assert any(path.startswith("lsp_hub/") for path in paths)
    assert missing(paths) == [], "ARCHITECTURE.md names paths that do not exist"


def test_the_path_check_catches_a_moved_module() -> None:
    text = "`lsp_hub/proxy/session.py` and `lsp_hub/moved_away.py`, in `lsp_hub/proxy/`. See tests/test_nothing.py."
    assert named_paths(text) == [
        "lsp_hub/moved_away.py",
        "lsp_hub/proxy/",
        "lsp_hub/proxy/session.py",
        "tests/test_nothing.py",
    ]
    assert missing(named_paths(text)) == ["lsp_hub/moved_away.py", "tests/test_nothing.py"]


MAX_MODULE_LINES = 520
# The extractor is one table of per-language queries and walks, long by nature.
LONG_MODULES_ALLOWED = {"lsp_hub/index/extract.py"}


def long_modules(limit: int = MAX_MODULE_LINES) -> dict[str, int]:
    lengths = {
        path.relative_to(REPO_ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in (REPO_ROOT / "lsp_hub").rglob("*.py")
    }
    return {path: lines for path, lines in sorted(lengths.items()) if lines > limit}


def test_no_module_outgrows_one_concern() -> None:
    """Rooms of one concern: a module past MAX_MODULE_LINES is split by what it holds (issue #23)."""
    too_long = {path: lines for path, lines in long_modules().items() if path not in LONG_MODULES_ALLOWED}
    assert too_long == {}, f"split these by concern (at most {MAX_MODULE_LINES} lines each): {too_long}"


def test_the_length_check_finds_a_long_module() -> None:
    assert "lsp_hub/index/extract.py" in long_modules()
    assert set(long_modules(limit=0)) >= {"lsp_hub/proxy/session.py", "lsp_hub/pid_liveness.py"}
