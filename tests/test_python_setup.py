"""Which missing imports are a Python project's uninstalled dependencies, and what the note says to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsp_hub.agents.query.python_setup import python_setup_notes


def missing(path: Path, module: str, code: str = "reportMissingImports") -> dict[str, Any]:
    return {"path": str(path), "source": "basedpyright", "code": code,
            "message": f'Import "{module}" could not be resolved'}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_only_declared_packages_count_once_per_project(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[project]\nname = "p"\ndependencies = ["charset-normalizer>=2", "idna"]\n'
                                       '[project.optional-dependencies]\nsocks = ["PySocks>=1.5"]\n')
    source = write(tmp_path / "src" / "p" / "a.py", "")
    notes = python_setup_notes(tmp_path, [
        missing(source, "charset_normalizer"), missing(source, "idna.core"), missing(source, "idna"),
        missing(source, "socks"),  # the import name differs from PySocks: not matched, so not claimed
        missing(source, "typo_module"),  # not declared: a real error, left to stand
        missing(source, ".sibling"),  # the project's own file
        {**missing(source, "idna"), "code": "reportAttributeAccessIssue"},
    ])
    assert len(notes) == 1
    assert notes[0].startswith("basedpyright cannot import charset_normalizer, idna, which pyproject.toml declares: "
                               "no environment it uses has them")
    assert python_setup_notes(tmp_path, [missing(source, "typo_module")]) == []


def test_requirements_setup_cfg_setup_py_and_poetry_declare_too(tmp_path: Path) -> None:
    cases = {
        "req": ("requirements-dev.txt", "# tools\n-r base.txt\nPyYAML==6.0 ; python_version >= '3.8'\n"),
        "cfg": ("setup.cfg", "[options]\ninstall_requires =\n    PyYAML>=5\n"),
        "py": ("setup.py", "from setuptools import setup\nsetup(name='p', install_requires=[\n  'PyYAML>=5',\n])\n"),
        "poetry": ("pyproject.toml", '[tool.poetry.dependencies]\npython = "^3.11"\nPyYAML = "^6"\n'),
        "split": ("requirements/dev.txt", "PyYAML\n"),  # named as read, not as a requirements.txt that is not there
    }
    for name, (file_name, text) in cases.items():
        write(tmp_path / name / file_name, text)
        source = write(tmp_path / name / "pkg" / "m.py", "")
        notes = python_setup_notes(tmp_path, [missing(source, "yaml", "reportMissingModuleSource")])
        assert len(notes) == 1 and f"cannot import yaml, which {name}/{file_name} declares" in notes[0], name


def test_the_remedy_names_the_venv(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root / "pyproject.toml", '[project]\nname = "p"\ndependencies = ["urllib3"]\n')
    diagnostics = [missing(write(root / "app.py", ""), "urllib3")]
    [without] = python_setup_notes(root, diagnostics)
    assert "no environment it uses has them; install the project's dependencies into .venv, where it looks" in without
    write(root / ".venv" / "pyvenv.cfg", "home = /usr/bin\n")
    [with_venv] = python_setup_notes(root, diagnostics)
    assert ".venv lacks them; install the project's dependencies there" in with_venv


def test_unreadable_declarations_and_paths_outside_give_no_note(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root / "pyproject.toml", "[project\nbroken")
    source = write(root / "a.py", "")
    assert python_setup_notes(root, [missing(source, "urllib3")]) == []
    assert python_setup_notes(root, [missing(tmp_path / "elsewhere" / "b.py", "urllib3")]) == []
