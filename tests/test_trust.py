"""The trust store and `lsp-hub trust PATH | --list | --remove PATH`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from lsp_hub.config.trust import TrustStore, trust_main


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "projects" / "one"
    (path / "sub" / "deeper").mkdir(parents=True)
    return path.resolve()  # the store keeps resolved paths; tmp_path may sit below a symlink


def test_default_location_follows_xdg(xdg_config: Path) -> None:
    assert TrustStore().path == xdg_config / "lsp-hub" / "trusted.json"


def test_default_location_without_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert TrustStore().path == tmp_path / "home" / ".config" / "lsp-hub" / "trusted.json"


def test_add_list_remove(project: Path, tmp_path: Path) -> None:
    store = TrustStore()
    assert store.list() == []
    assert not store.is_trusted(project)
    assert store.add(project) is True
    assert store.add(project) is False  # no duplicates
    other = tmp_path / "other"
    other.mkdir()
    store.add(other)
    assert store.list() == [project, other]
    assert TrustStore().list() == [project, other]  # persisted, re-read by a fresh store
    assert store.is_trusted(project)
    assert store.remove(project) is True
    assert store.remove(project) is False
    assert not store.is_trusted(project)
    assert store.list() == [other]


def test_trusting_a_directory_trusts_what_is_below_it_not_above(project: Path) -> None:
    store = TrustStore()
    store.add(project / "sub")
    assert store.is_trusted(project / "sub" / "deeper")
    assert store.is_trusted(project / "sub")
    assert not store.is_trusted(project)
    assert not store.is_trusted(project.parent / "one-sibling")  # a prefix of the name is not a parent


def test_symlinks_are_resolved(project: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(project)
    store = TrustStore()
    store.add(link)
    assert store.list() == [project]  # stored where it points
    assert store.is_trusted(project / "sub")
    assert store.is_trusted(link / "sub")
    # A link from elsewhere into an untrusted tree stays untrusted.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    sneaky = project / "escape"
    sneaky.symlink_to(elsewhere)
    assert not store.is_trusted(sneaky)


def test_relative_paths_are_made_absolute(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project.parent)
    store = TrustStore()
    store.add(Path("one"))
    assert store.list() == [project]


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"trusted": "nope"}', '{"trusted": [1]}'])
def test_corrupt_file_is_reported_and_treated_as_empty(project: Path, content: str) -> None:
    store = TrustStore()
    store.path.parent.mkdir(parents=True)
    store.path.write_text(content)
    assert store.list() == []
    assert not store.is_trusted(project)
    assert store.problem is not None and str(store.path) in store.problem
    # Adding starts afresh and keeps the broken file for the user to look at.
    assert store.add(project)
    assert store.list() == [project]
    assert store.problem is None
    assert store.path.with_name("trusted.json.corrupt").read_text() == content


def test_file_format(project: Path) -> None:
    store = TrustStore()
    store.add(project)
    assert json.loads(store.path.read_text()) == {"version": 1, "trusted": [str(project)]}


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = trust_main(argv, out)
    return code, out.getvalue()


def test_cli_trust_list_remove(project: Path) -> None:
    assert run(["--list"]) == (0, "no trusted directories\n")
    assert run([str(project)]) == (0, f"trusted: {project}\n")
    assert run([str(project)]) == (0, f"already trusted: {project}\n")
    assert run(["--list"]) == (0, f"{project}\n")
    assert TrustStore().is_trusted(project / "sub")
    assert run(["--remove", str(project)]) == (0, f"no longer trusted: {project}\n")
    code, text = run(["--remove", str(project)])
    assert code == 1 and "was not trusted" in text
    assert TrustStore().list() == []


def test_cli_remove_of_a_child_explains_the_trusted_parent(project: Path) -> None:
    run([str(project)])
    code, text = run(["--remove", str(project / "sub")])
    assert code == 1
    assert f"trusted through {project}" in text


def test_cli_rejects_missing_directories_and_bad_usage(tmp_path: Path) -> None:
    code, text = run([str(tmp_path / "missing")])
    assert code == 1 and "not a directory" in text
    assert TrustStore().list() == []
    for argv in ([], ["--remove"], ["--bogus"], ["a", "b"]):
        code, text = run(argv)
        assert code == 2 and text.startswith("usage: lsp-hub trust"), argv


def test_cli_list_warns_about_a_corrupt_file() -> None:
    store = TrustStore()
    store.path.parent.mkdir(parents=True)
    store.path.write_text("garbage")
    code, text = run(["--list"])
    assert code == 0
    assert "warning:" in text and "no trusted directories" in text
