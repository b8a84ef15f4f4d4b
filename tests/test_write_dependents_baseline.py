"""What a write reports as broken in other files when their state before it is not known: on a cold daemon the
servers had not checked the dependents within the budget before the write, and every old issue they reported after
it came out as "new" (on click, renaming `make_str` reported 122 new issues in 7 files, none of them the broken
imports). An issue counts as new only against a server's report from before the write; the others are said to be
of unknown age, and the answer is incomplete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsp_hub.agents.write_dependents import Dependents, changed_names, dependents_text
from lsp_hub.platform.confined_files import ConfinedRoot


def issue(path: str, line: int, source: str, message: str) -> dict[str, Any]:
    return {"path": path, "line": line, "column": 1, "severity": "error", "source": source, "code": None,
            "message": message}


class StandInWriter:
    """Answers `lspHub.dependents` with one file, and its diagnostics from `reports` in turn (before, after)."""

    def __init__(self, root: Path, reports: list[dict[str, Any]]) -> None:
        self.files = ConfinedRoot(root)
        self.reports = reports

    def command(self, command: str, arguments: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> Any:
        assert command == "lspHub.dependents"
        return {"files": [{"path": "user.py", "reasons": ["imports lib.py"]}], "complete": True}

    def write_options(self) -> dict[str, Any]:
        return {}

    def display(self, path: str | Path) -> str:
        return Path(path).name

    def diagnostics_of(self, paths: list[str], deadline: float | None = None,
                       budget: float | None = None) -> dict[str, Any]:
        [path] = paths
        return {"complete": True, "files": {path: self.reports.pop(0)}}


def report(checked_by: list[str], diagnostics: list[dict[str, Any]], pending: list[str] | None = None
           ) -> dict[str, Any]:
    return {"checkedBy": checked_by, "notChecked": [], "pending": pending or [], "complete": not pending,
            "diagnostics": diagnostics}


OLD = issue("user.py", 9, "basedpyright", 'Type "int" is not assignable to "str"')
BROKEN = issue("user.py", 1, "basedpyright", '"make_str" is unknown import symbol')
LINT = issue("user.py", 3, "Ruff", "`os` imported but unused")


def dependents_after(tmp_path: Path, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    dependents = Dependents(StandInWriter(tmp_path, [before, after]), [tmp_path / "lib.py"], deadline=1e12)
    dependents.before()
    result = dependents.after()
    assert result is not None
    return result


def test_issues_of_a_server_that_had_not_checked_the_file_before_are_not_called_new(tmp_path: Path) -> None:
    before = report(["ruff"], [], pending=["basedpyright"])  # basedpyright still starting: no verdict yet
    after = report(["basedpyright", "ruff"], [OLD, BROKEN, LINT])
    result = dependents_after(tmp_path, before, after)
    assert result["new"] == [LINT]  # ruff checked it before: its issue is the write's
    assert [entry["line"] for entry in result["unknownAge"]] == [9, 1]
    assert result["complete"] is False
    assert result["withoutVerdict"] == [{"path": "user.py", "servers": ["basedpyright"]}]
    text = dependents_text(result, lambda message: message)
    assert "[dependents] 1 new issue(s) in 1 other file(s):" in text
    assert ("[dependents] 2 issue(s) in 1 other file(s) from basedpyright, which did not check them both before "
            "and after the write in time (new or old):") in text
    assert "user.py:1:1 — \"make_str\" is unknown import symbol [basedpyright]" in text


def test_issues_of_a_server_that_gave_no_verdict_after_the_write_are_not_called_new(tmp_path: Path) -> None:
    """Seen on click: basedpyright answered a pull sent before the write only after it, and had not checked the
    file again in time: its issues, about the old text, were listed as the write's."""
    before = report(["ruff"], [], pending=["basedpyright"])
    after = report(["ruff"], [OLD, LINT], pending=["basedpyright"])
    result = dependents_after(tmp_path, before, after)
    assert result["new"] == [LINT] and [entry["line"] for entry in result["unknownAge"]] == [9]
    assert result["withoutVerdict"] == [{"path": "user.py", "servers": ["basedpyright"]}]


def test_the_hub_says_which_server_a_source_label_is(tmp_path: Path) -> None:
    broken = issue("user.ts", 1, "ts", "Module has no exported member 'price'")
    sources = {"sourcesOf": {"typescript-language-server": ["ts"]}}
    before = {**report(["typescript-language-server"], []), **sources}
    after = {**report(["typescript-language-server"], [broken]), **sources}
    result = dependents_after(tmp_path, before, after)
    assert result["new"] == [{**broken, "path": "user.py"}] and result["unknownAge"] == []


def test_with_every_server_checked_before_only_the_difference_is_new(tmp_path: Path) -> None:
    before = report(["basedpyright", "ruff"], [OLD])
    after = report(["basedpyright", "ruff"], [OLD, BROKEN])
    result = dependents_after(tmp_path, before, after)
    assert result["new"] == [BROKEN] and result["unknownAge"] == [] and result["complete"] is True
    assert "new or old" not in dependents_text(result, lambda message: message)


def test_the_names_on_the_changed_lines_rank_the_dependents(tmp_path: Path) -> None:
    old = "def make_str(value):\n    return str(value)\n\n\ndef other():\n    pass\n"
    new = old.replace("make_str", "make_string")
    assert set(changed_names([(old, new)])) == {"def", "make_str", "make_string", "value"}
    assert changed_names([(None, "x = 1\n")]) == ["x"]  # a new file: every line is changed
    asked: list[dict[str, Any]] = []

    class Recording(StandInWriter):
        def command(self, command: str, arguments: dict[str, Any] | None = None, *,
                    timeout: float | None = None) -> Any:
            asked.append(arguments or {})
            return super().command(command, arguments, timeout=timeout)

    writer = Recording(tmp_path, [report(["ruff"], []), report(["ruff"], [])])
    Dependents(writer, [tmp_path / "lib.py"], deadline=1e12, changed=["make_str"]).before()
    assert asked[0]["names"] == ["make_str"]
