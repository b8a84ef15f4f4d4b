"""What a Python project's environment lacks, said once beside its diagnostics (`setupNotes`).

In a fresh clone nobody installed, basedpyright checks with a Python that has none of the project's dependencies:
on requests, `adapters.py` alone got 82 issues, 11 of them "Import "urllib3.exceptions" could not be resolved" and
most of the rest the unknown types that follow from them, none of them the code's. When a checker reports a missing
import of a package the project declares (pyproject.toml, setup.cfg, setup.py, requirements*.txt), the note names
the packages and says where the checker would find them: the project's `.venv` (in an untrusted workspace the hub
has basedpyright read the packages there without running its interpreter: `untrusted_venv_packages`). Standard
library only, like `query`.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lsp_hub.agents.query.project_files import read_small_text, shown

# The checkers' codes for an import they cannot resolve (pyright and basedpyright: no module, or stubs only).
MISSING_IMPORT_CODES = frozenset(("reportMissingImports", "reportMissingModuleSource"))
_IMPORTED = re.compile(r'Import "([^"]+)"')
_REQUIREMENT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_SETUP_PY_REQUIRES = re.compile(r"install_requires\s*=\s*\[(.*?)\]", re.DOTALL)
_QUOTED = re.compile(r"""["']([^"']+)["']""")
_DECLARING_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
MAX_NAMED = 4  # packages named in one note; the rest counted
# Distributions whose import name differs from their name (the common ones; any other is matched by its name).
_IMPORT_NAMES = {
    "pyyaml": "yaml",
    "beautifulsoup4": "bs4",
    "pillow": "pil",
    "scikit_learn": "sklearn",
    "python_dateutil": "dateutil",
    "opencv_python": "cv2",
    "opencv_python_headless": "cv2",
    "pyjwt": "jwt",
    "python_dotenv": "dotenv",
    "protobuf": "google",
    "psycopg2_binary": "psycopg2",
    "msgpack_python": "msgpack",
    "python_multipart": "multipart",
    "attrs": "attr",
    "setuptools": "pkg_resources",
    "pyzmq": "zmq",
}


_Declared = tuple[Path, Path, frozenset[str]]  # a project directory, its first declaring file, the import names


def python_setup_notes(root: Path, diagnostics: Iterable[Mapping[str, Any]]) -> list[str]:
    """One note per project whose declared dependencies a checker could not import, with what to do."""
    missing: dict[tuple[Path, Path], dict[str, set[str]]] = {}  # (project directory, file) -> checker -> modules
    declarations: dict[Path, _Declared | None] = {}  # per directory walked, what it found
    for diagnostic in diagnostics:
        if diagnostic.get("code") not in MISSING_IMPORT_CODES:
            continue
        imported = _IMPORTED.search(str(diagnostic.get("message", "")))
        if imported is None or imported.group(1).startswith("."):
            continue  # a relative import is the project's own file: a real error
        top = imported.group(1).split(".", 1)[0]
        found = _declarations(root, Path(str(diagnostic.get("path", ""))).parent, declarations)
        if found is not None and top.lower() in found[2]:
            missing.setdefault(found[:2], {}).setdefault(str(diagnostic.get("source") or "the checker"), set()).add(top)
    notes = []
    for (directory, declaring), by_checker in missing.items():
        declaration = shown(root, declaring)
        for checker, modules in sorted(by_checker.items()):
            names = sorted(modules)
            named = ", ".join(names[:MAX_NAMED]) + (
                f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
            )
            notes.append(
                f"{checker} cannot import {named}, which {declaration} declares: {_remedy(root, directory)}; "
                "expect errors that follow from these imports (unknown types), not from the code"
            )
    return notes


def _remedy(root: Path, directory: Path) -> str:
    """Where the checker would find the packages: the project's `.venv` (basedpyright's default; in an untrusted
    workspace the hub has it read the packages there without running its interpreter)."""
    venvs = [directory / ".venv", root / ".venv"]
    venv = next((candidate for candidate in venvs if (candidate / "pyvenv.cfg").is_file()), None)
    if venv is None:
        where = shown(root, directory / ".venv")
        return f"no environment it uses has them; install the project's dependencies into {where}, where it looks"
    return f"{shown(root, venv)} lacks them; install the project's dependencies there"


def _declarations(root: Path, directory: Path, cache: dict[Path, _Declared | None]) -> _Declared | None:
    """The nearest directory at or above `directory` (up to `root`) that declares dependencies, the first file read
    there, and the dependencies' import names."""
    walked: list[Path] = []
    current = directory
    found: _Declared | None = None
    while True:
        if current in cache:
            found = cache[current]
            break
        walked.append(current)
        declared = _declared_names(current)
        if declared is not None:
            found = (current, *declared)
            break
        if current == root or current.parent == current or root not in current.parents:
            break
        current = current.parent
    for path in walked:
        cache[path] = found
    return found


def _declared_names(directory: Path) -> tuple[Path, frozenset[str]] | None:
    """The first declaring file of `directory` and the import names of the dependencies declared there, or None
    when it declares none."""
    requirements: list[str] = []
    read: list[Path] = []
    for name in _DECLARING_FILES:
        text = read_small_text(directory / name)
        if text is None:
            continue
        read.append(directory / name)
        if name == "pyproject.toml":
            requirements += _pyproject_requirements(text)
        elif name == "setup.cfg":
            requirements += _setup_cfg_requirements(text)
        else:
            for listed in _SETUP_PY_REQUIRES.findall(text):
                requirements += _QUOTED.findall(listed)
    for path in sorted(directory.glob("requirements*.txt")) + sorted(directory.glob("requirements/*.txt")):
        text = read_small_text(path)
        if text is not None:
            read.append(path)
            requirements += [line for line in text.splitlines() if not line.lstrip().startswith(("#", "-"))]
    if not read:
        return None
    names = set()
    for requirement in requirements:
        match = _REQUIREMENT_NAME.match(requirement)
        if match:
            distribution = re.sub(r"[-.]", "_", match.group(1).lower())
            names.add(_IMPORT_NAMES.get(distribution, distribution))
    return read[0], frozenset(names)


def _pyproject_requirements(text: str) -> list[str]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    found: list[str] = []
    project = _table(data.get("project"))
    found += _strings(project.get("dependencies"))
    for extra in _table(project.get("optional-dependencies")).values():
        found += _strings(extra)
    for group in _table(data.get("dependency-groups")).values():
        found += _strings(group)
    poetry = _table(_table(data.get("tool")).get("poetry"))
    found += list(_table(poetry.get("dependencies"))) + list(_table(poetry.get("dev-dependencies")))
    for group in _table(poetry.get("group")).values():
        found += list(_table(_table(group).get("dependencies")))
    return [name for name in found if name != "python"]


def _setup_cfg_requirements(text: str) -> list[str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    found = parser.get("options", "install_requires", fallback="").splitlines()
    if parser.has_section("options.extras_require"):
        for _extra, listed in parser.items("options.extras_require"):
            found += listed.splitlines()
    return found


def _table(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
