"""bench/fixture_types.py: pytest fixture parameters annotated with their fixtures' types (the callers bench's
honest truth), nearest fixture first, without moving a line."""

from __future__ import annotations

from pathlib import Path

from bench.fixture_types import annotate_fixtures
from tests.index.index_helpers import write

CONFTEST = """import pytest
from flask import Flask
from click.testing import CliRunner


@pytest.fixture
def app():
    app = Flask("x")
    return app


@pytest.fixture(name="runner")
def _runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def client(app):
    return app.test_client()
"""

TESTS = """import pytest


class Local:
    pass


@pytest.fixture
def local():
    return Local()


def test_route(app, client, runner, local):
    app.route("/")


class TestOverride:
    @pytest.fixture
    def app(self, app):
        app.debug = True
        return app

    def test_inner(self, app, tmp_path):
        app.route("/")
"""


def test_fixture_parameters_get_their_fixtures_types_and_no_line_moves(tmp_path: Path) -> None:
    write(tmp_path, "tests/conftest.py", CONFTEST)
    write(tmp_path, "tests/test_app.py", TESTS)
    write(tmp_path, "src/app.py", "def route(app):\n    return app\n")
    files, parameters = annotate_fixtures(tmp_path)
    annotated = (tmp_path / "tests/test_app.py").read_text().splitlines()
    original = TESTS.splitlines()
    # Every original line keeps its number; the imports go on one added last line.
    assert len(annotated) == len(original) + 1
    assert annotated[12] == 'def test_route(app: "_fixture_0", client, runner: "_fixture_1", local: "Local"):'
    # The class's `app` overrides conftest's and returns the one it requests: Flask still.
    assert annotated[18] == '    def app(self, app: "_fixture_0"):'
    assert annotated[22] == '    def test_inner(self, app: "_fixture_0", tmp_path):'
    assert annotated[-1].startswith(
        "from flask import Flask as _fixture_0; from click.testing import CliRunner as _fixture_1"
    )
    # conftest's `client(app)` is a fixture requesting a fixture; a non-test module is left alone.
    assert 'def client(app: "_fixture_0"):' in (tmp_path / "tests/conftest.py").read_text()
    assert (tmp_path / "src/app.py").read_text() == "def route(app):\n    return app\n"
    assert (files, parameters) == (2, 6)
