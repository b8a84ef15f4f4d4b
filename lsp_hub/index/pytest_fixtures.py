"""What a pytest fixture parameter holds: `def test_x(app): app.route(...)` gets `app` from the fixture named `app`
(in the test's module, else in a conftest.py of its directory or one above), and that fixture's type is its return
annotation, else the type of its own variable of its name (`def app(): app = Flask(...); ...; return app`). Syntax
only, from the per-file records (decorators, signatures, local types); a fixture named otherwise than its function
(`@pytest.fixture(name=...)`), one returning anything else, or a fixture a plugin provides is not seen."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping

from lsp_hub.index.model import Definition
from lsp_hub.index.snapshot import Snapshot
from lsp_hub.index.symbols import has_parameter

_RETURNED_CLASS = re.compile(r"->\s*['\"]?([A-Za-z_][\w.]*)\s*['\"]?\s*:\s*\Z")
CONFTEST = "conftest.py"


def _is_test_module(path: str) -> bool:
    name = posixpath.basename(path)
    return name == CONFTEST or name.startswith("test_") or name.endswith("_test.py")


def fixture_types(snapshot: Snapshot) -> Mapping[str, Mapping[str, str]]:
    """Test module path or conftest.py's directory ("" at the root) -> fixture name -> what the fixture holds: a
    class name, or `callee()` for a variable made by a call (resolved as any such variable is)."""

    def build(s: Snapshot) -> dict[str, dict[str, str]]:
        found: dict[str, dict[str, str]] = {}
        for path, record in s.files.items():
            if record.language != "python" or not _is_test_module(path):
                continue
            fixture_lines = {
                line for line, decorator, _first in record.decorators if decorator.rsplit(".", 1)[-1] == "fixture"
            }
            if not fixture_lines:
                continue
            outline = record.outline()
            typed: dict[str, str] = {}
            for definition in outline.definitions:
                if definition.kind not in ("function", "method") or definition.span.start_line not in fixture_lines:
                    continue
                held = _held(definition, outline.local_types)
                if held is not None:
                    typed.setdefault(definition.name, held)
            if typed:
                key = posixpath.dirname(path) if posixpath.basename(path) == CONFTEST else path
                found[key] = typed
        return found

    return snapshot.derived("pytest_fixture_types", build)


def _held(fixture: Definition, local_types: list[tuple[str, str, str]]) -> str | None:
    annotated = _RETURNED_CLASS.search(fixture.signature)
    if annotated is not None:
        return annotated.group(1).rsplit(".", 1)[-1]
    own = {typed for owner, name, typed in local_types if owner == fixture.name and name == fixture.name}
    return own.pop() if len(own) == 1 else None


def fixture_type(snapshot: Snapshot, path: str, function: Definition, parameter: str) -> str | None:
    """What `parameter` of a test function or fixture in `path` holds when a fixture of its name provides it (see
    `fixture_types`); None when the function is neither, or no fixture of the name is found or typed."""
    if not _is_test_module(path) or not has_parameter(function.signature, parameter):
        return None
    is_fixture_or_test = function.name.startswith("test") or any(
        line == function.span.start_line and decorator.rsplit(".", 1)[-1] == "fixture"
        for line, decorator, _first in snapshot.files[path].decorators
    )
    if not is_fixture_or_test:
        return None
    types = fixture_types(snapshot)
    # A fixture requesting its own name (`def app(self, app)`) gets the one it overrides: the conftest's.
    own_module = types.get(path, {}) if function.name != parameter else {}
    if parameter in own_module:
        return own_module[parameter]
    directory = posixpath.dirname(path)
    while True:
        held = types.get(directory, {}).get(parameter)
        if held is not None:
            return held
        if not directory:
            return None
        directory = posixpath.dirname(directory)
