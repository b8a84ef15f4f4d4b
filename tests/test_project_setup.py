"""What a checked file's project lacks, so that its diagnostics mislead (`project_setup`): on ky, a fresh clone,
a tsconfig.json extending an uninstalled package made TypeScript report 441 errors about ES5 that were not the
code's."""

from __future__ import annotations

import json
from pathlib import Path

from lsp_hub.agents.query.project_setup import setup_notes

TSCONFIG = """{
  // comments and trailing commas, as tsconfig.json allows
  "extends": "@sindresorhus/tsconfig", /* a package */
  "compilerOptions": {"strict": true,},
}
"""


def project(root: Path, tsconfig: str | None = TSCONFIG, dependencies: bool = True) -> Path:
    (root / "source").mkdir(parents=True)
    source = root / "source" / "index.ts"
    source.write_text("export const one = 1;\n")
    if tsconfig is not None:
        (root / "tsconfig.json").write_text(tsconfig)
    manifest = {"name": "x", **({"devDependencies": {"@sindresorhus/tsconfig": "^7"}} if dependencies else {})}
    (root / "package.json").write_text(json.dumps(manifest))
    return source


def test_an_uninstalled_project_is_said_once_for_all_its_files(tmp_path: Path) -> None:
    source = project(tmp_path)
    other = tmp_path / "source" / "other.ts"
    other.write_text("export {};\n")
    assert setup_notes(tmp_path, [source, other]) == [
        'tsconfig.json extends "@sindresorhus/tsconfig", which is not installed: TypeScript checks with its default '
        "options, so expect errors a set-up project would not have; install the project's dependencies",
        "package.json declares dependencies, but there is no node_modules: imports of packages cannot be resolved; "
        "install the project's dependencies"]


def test_an_installed_project_has_no_note(tmp_path: Path) -> None:
    source = project(tmp_path)
    (tmp_path / "node_modules" / "@sindresorhus" / "tsconfig").mkdir(parents=True)
    assert setup_notes(tmp_path, [source]) == []


def test_a_package_installed_above_the_project_counts(tmp_path: Path) -> None:
    """Node looks in every ancestor's node_modules: a workspace package of a monorepo."""
    source = project(tmp_path / "packages" / "web")
    (tmp_path / "node_modules" / "@sindresorhus" / "tsconfig").mkdir(parents=True)
    assert setup_notes(tmp_path, [source]) == []


def test_relative_and_listed_extends(tmp_path: Path) -> None:
    source = project(tmp_path, '{"extends": ["./base", "./missing.json"]}', dependencies=False)
    (tmp_path / "base.json").write_text("{}")
    [note] = setup_notes(tmp_path, [source])
    assert note == ('tsconfig.json extends "./missing.json", which does not exist: TypeScript checks with its default '
                    "options, so expect errors a set-up project would not have")


def test_other_languages_and_plain_projects_have_none(tmp_path: Path) -> None:
    source = project(tmp_path, tsconfig='{"compilerOptions": {}}', dependencies=False)
    (tmp_path / "tool.py").write_text("x = 1\n")
    assert setup_notes(tmp_path, [source, tmp_path / "tool.py"]) == []
    (tmp_path / "tsconfig.json").write_text("{ not json")  # unreadable: no guess
    assert setup_notes(tmp_path, [source]) == []
