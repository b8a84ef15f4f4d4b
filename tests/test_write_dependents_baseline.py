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


def imported(provided: bool, module: bool = False, dynamic: bool = False, via: str | None = None
             ) -> dict[str, Any]:
    entry = {"path": "user.py", "line": 1, "column": 1, "endLine": 1, "endColumn": 27, "name": "make_str",
             "from": "lib.py", "provided": provided, "module": module, "dynamic": dynamic}
    if module:
        entry["name"] = "lib"
    if via:
        entry.update(line=3, column=5, via=via)
    return entry


class IndexedWriter(StandInWriter):
    """The stand-in, with the index's imported names of lib.py before the write and after it."""

    def __init__(self, root: Path, reports: list[dict[str, Any]], after: list[dict[str, Any]],
                 importer_after: str = "v1", before: list[dict[str, Any]] | None = None, capped: bool = False) -> None:
        super().__init__(root, reports)
        self.capped = capped
        self.after_names = after
        self.importer_after = importer_after
        self.before_names = before or [imported(True)]

    def command(self, command: str, arguments: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> Any:
        if command == "lspHub.importedNames":
            assert arguments is not None
            assert {key: arguments[key] for key in ("files", "importers")} == {
                "files": [str(self.files.root / "lib.py")], "importers": ["user.py"]}
            self.asked_uses = arguments.get("uses")
            return {"importedNames": self.after_names, "importerVersions": {"user.py": self.importer_after}}
        return {**super().command(command, arguments, timeout=timeout), "importedNames": self.before_names,
                "importerVersions": {"user.py": "v1"}, **({"importedNamesCapped": True} if self.capped else {})}


def indexed_after(tmp_path: Path, before: dict[str, Any], after: dict[str, Any],
                  names_after: list[dict[str, Any]], importer_after: str = "v1") -> dict[str, Any]:
    (tmp_path / "lib.py").write_text("def make_string(value):\n    return str(value)\n")
    writer = IndexedWriter(tmp_path, [before, after], names_after, importer_after)
    dependents = Dependents(writer, [tmp_path / "lib.py"], deadline=1e12)
    dependents.before()
    result = dependents.after()
    assert result is not None
    return result


def test_an_import_the_write_broke_is_new_by_the_index_whatever_the_servers_said(tmp_path: Path) -> None:
    """On click, renaming make_str within the 8 s budget: basedpyright gave no verdict before the write, and the one
    real break (core.py's import) was not reported at all; the index knows it at once."""
    quiet = report([], [], pending=["basedpyright"])
    result = indexed_after(tmp_path, quiet, quiet, [imported(False)])
    assert result["new"] == [{"path": "user.py", "line": 1, "column": 1, "end_line": 1, "end_column": 27,
                              "severity": "error", "source": "lsp-hub", "code": "broken-import",
                              "message": "imports make_str from lib.py, which no longer provides it"}]
    assert result["complete"] is False  # the servers still said nothing
    text = dependents_text(result, lambda message: message)
    assert ("[dependents] 1 new issue(s) in 1 other file(s):\n  user.py:1:1 — imports make_str from lib.py, which no "
            "longer provides it [lsp-hub]") in text


def test_a_server_reporting_the_same_import_is_not_repeated(tmp_path: Path) -> None:
    unknown = report([], [], pending=["basedpyright"])
    result = indexed_after(tmp_path, unknown, report(["basedpyright"], [BROKEN, OLD]), [imported(False)])
    assert result["new"] == [BROKEN]  # the server's own words, known new by the index
    assert [entry["line"] for entry in result["unknownAge"]] == [9]
    checked = report(["basedpyright"], [])
    result = indexed_after(tmp_path, checked, report(["basedpyright"], [BROKEN]), [imported(False)])
    assert result["new"] == [BROKEN] and result["complete"] is True


def test_imports_still_provided_or_in_a_changed_importer_are_no_break(tmp_path: Path) -> None:
    checked = report(["basedpyright"], [])
    assert indexed_after(tmp_path, checked, checked, [imported(True)])["new"] == []
    # Not found after, in an importer that changed meanwhile (another client edited it): not judged.
    assert indexed_after(tmp_path, checked, checked, [], importer_after="v2")["new"] == []
    # Not found after in an unchanged importer: its import finds the file no more.
    [gone] = indexed_after(tmp_path, checked, checked, [])["new"]
    assert gone["message"] == "imports make_str from lib.py, which no longer provides it"
    (tmp_path / "lib.py").unlink()
    writer = IndexedWriter(tmp_path, [checked, checked], [])
    dependents = Dependents(writer, [tmp_path / "lib.py"], deadline=1e12)
    dependents.before()
    result = dependents.after()
    assert result is not None and result["new"][0]["message"] == "imports make_str from lib.py, which no longer exists"


def test_a_name_a_module_getattr_may_still_serve_is_a_warning(tmp_path: Path) -> None:
    checked = report(["basedpyright"], [])
    [issue] = indexed_after(tmp_path, checked, checked, [imported(False, dynamic=True)])["new"]
    assert issue["severity"] == "warning"
    assert issue["message"] == ("imports make_str from lib.py, which no longer defines it (only its module "
                                "__getattr__ could still provide it)")


def test_a_use_through_a_module_import_is_judged_and_a_removed_module_is_one_issue(tmp_path: Path) -> None:
    checked = report(["basedpyright"], [])
    writer = IndexedWriter(tmp_path, [checked, checked], [imported(False, via="lib")],
                           before=[imported(True, via="lib")])
    (tmp_path / "lib.py").write_text("")
    dependents = Dependents(writer, [tmp_path / "lib.py"], deadline=1e12)
    dependents.before()
    result = dependents.after()
    assert result is not None
    assert [(issue["line"], issue["message"]) for issue in result["new"]] == [
        (3, "uses lib.make_str from lib.py, which no longer provides it")]
    (tmp_path / "lib.py").unlink()  # removed: `import lib` broke, and its uses with it: one issue, not one per use
    writer = IndexedWriter(tmp_path, [checked, checked], [], before=[imported(True, module=True),
                                                                     imported(True, via="lib")])
    dependents = Dependents(writer, [tmp_path / "lib.py"], deadline=1e12)
    dependents.before()
    result = dependents.after()
    assert result is not None
    assert [issue["message"] for issue in result["new"]] == ["imports lib.py, which no longer exists"]


def test_issues_of_unknown_age_in_files_using_a_changed_name_come_first(tmp_path: Path) -> None:
    report_files = [{"path": "a.py", "reasons": []}, {"path": "z.py", "reasons": [], "changed": ["make_str"]}]
    unknown = [issue("a.py", 1, "basedpyright", "old"), issue("z.py", 9, "basedpyright", "likely new")]
    text = dependents_text({"checked": [], "new": [], "resolved": [], "unknownAge": unknown, "files": report_files,
                            "withoutVerdict": [{"path": "a.py", "servers": ["basedpyright"]}]}, lambda m: m)
    assert text.splitlines()[1:3] == ["  z.py:9:1 — likely new [basedpyright]", "  a.py:1:1 — old [basedpyright]"]


def test_a_use_in_c_or_go_that_no_file_defines_after_the_write_is_new(tmp_path: Path) -> None:
    used = {**imported(True), "use": True, "line": 4, "column": 9}
    checked = report(["gopls"], [])
    writer = IndexedWriter(tmp_path, [checked, checked], [{**used, "provided": False, "from": ""}], before=[used])
    (tmp_path / "lib.py").write_text("")
    dependents = Dependents(writer, [tmp_path / "lib.py"], deadline=1e12)
    dependents.before()
    result = dependents.after()
    assert result is not None and writer.asked_uses == {"user.py": ["make_str"]}
    [issue] = result["new"]
    assert (issue["line"], issue["code"], issue["message"]) == (
        4, "unresolved-use", "uses make_str, which no file defines any more (lib.py did)")


def test_a_capped_answer_judges_only_the_entries_given_both_times(tmp_path: Path) -> None:
    """Past 2,000 entries (a module imported everywhere) the answers leave entries out: one left out after the write
    is not one gone."""
    checked = report(["basedpyright"], [])
    writer = IndexedWriter(tmp_path, [checked, checked], [], capped=True)
    (tmp_path / "lib.py").write_text("")
    dependents = Dependents(writer, [tmp_path / "lib.py"], deadline=1e12)
    dependents.before()
    result = dependents.after()
    assert result is not None and result["new"] == []


def test_the_dependents_using_a_changed_name_are_checked_first_and_alone(tmp_path: Path) -> None:
    """A checker given twenty files at once may give its verdict on the one that matters after the budget: on click,
    basedpyright checked core.py alone in 2-3 s, and not among twenty within 4 s."""
    asked: list[list[str]] = []

    class TwoDependents(StandInWriter):
        def command(self, command: str, arguments: dict[str, Any] | None = None, *,
                    timeout: float | None = None) -> Any:
            return {"files": [{"path": "other.py", "reasons": []},
                              {"path": "user.py", "reasons": [], "changed": ["make_str"]}], "complete": True}

        def diagnostics_of(self, paths: list[str], deadline: float | None = None,
                           budget: float | None = None) -> dict[str, Any]:
            asked.append([Path(path).name for path in paths])
            reports = {path: report(["basedpyright"], [BROKEN] if len(asked) > 2 and "user" in path else [])
                       for path in paths}
            return {"complete": True, "pending": [], "files": reports}

    dependents = Dependents(TwoDependents(tmp_path, []), [tmp_path / "lib.py"], deadline=1e12)
    dependents.before()
    result = dependents.after()
    assert asked == [["user.py"], ["other.py"], ["user.py"], ["other.py"]]
    assert result is not None and result["new"] == [{**BROKEN, "path": "user.py"}] and result["complete"] is True


def test_a_server_with_no_verdict_after_the_write_is_named_even_when_nothing_changed(tmp_path: Path) -> None:
    """On click, renaming a parameter of make_str: basedpyright had not checked core.py again when the budget ran
    out, its issues there were those of before, and core.py was reported checked with no new issues."""
    before = report(["basedpyright", "ruff"], [OLD])
    after = report(["ruff"], [OLD], pending=["basedpyright"])
    result = dependents_after(tmp_path, before, after)
    assert result["new"] == [] and result["complete"] is False
    assert result["withoutVerdict"] == [{"path": "user.py", "servers": ["basedpyright"]}]
    text = dependents_text(result, lambda message: message)
    assert "no new issues" not in text
    assert ("[dependents] no verdict after the write in time from basedpyright on user.py: what it shows there is "
            "from before the write") in text
