"""File URIs and paths by Windows' rules (drive letters, UNC, percent-encoding, case), run on Linux; and the
places that route through `platform.paths`: documents, routing's folders and roots, workspace containment."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_hub.platform import paths
from lsp_hub.proxy.documents import path_to_uri, uri_to_path
from lsp_hub.proxy.routing import containing_folder, find_root


@pytest.mark.parametrize("uri, path", [
    ("file:///c%3A/Users/Ada/My%20Project/a.py", "C:\\Users\\Ada\\My Project\\a.py"),  # VS Code's spelling
    ("file:///C:/Users/Ada/a.py", "C:\\Users\\Ada\\a.py"),
    ("file://localhost/C:/x.py", "C:\\x.py"),
    ("file://server/share/dir/a.py", "\\\\server\\share\\dir\\a.py"),
    ("file:///d%3A/%E2%82%AC/b.ts", "D:\\€\\b.ts"),
])
def test_windows_uris_become_windows_paths(uri: str, path: str) -> None:
    assert paths.uri_to_path(uri, windows=True) == path


@pytest.mark.parametrize("path, uri", [
    ("C:\\Users\\Ada\\My Project\\a.py", "file:///C:/Users/Ada/My%20Project/a.py"),
    ("c:\\x.py", "file:///C:/x.py"),
    ("\\\\server\\share\\dir\\a.py", "file://server/share/dir/a.py"),
])
def test_windows_paths_become_uris_that_read_back(path: str, uri: str) -> None:
    assert paths.path_to_uri(path, windows=True) == uri
    assert paths.same_path(paths.uri_to_path(uri, windows=True) or "", path, windows=True)


def test_posix_uris_are_as_they_were() -> None:
    assert paths.uri_to_path("file:///home/ada/a%20b.py", windows=False) == "/home/ada/a b.py"
    assert paths.uri_to_path("file://server/share/a.py", windows=False) == "//server/share/a.py"
    assert paths.uri_to_path("untitled:Untitled-1", windows=False) is None
    assert uri_to_path(path_to_uri("/tmp/a b/€.py")) == "/tmp/a b/€.py"


def test_containment_on_windows_ignores_case_and_separator_style() -> None:
    folder = "C:\\Users\\Ada\\Project"
    assert paths.is_within("c:\\users\\ada\\project\\src\\a.py", folder, windows=True)
    assert paths.is_within("C:/Users/Ada/Project/src/a.py", folder, windows=True)
    assert paths.is_within("C:\\Users\\Ada\\Project", folder + "\\", windows=True)
    assert not paths.is_within("C:\\Users\\Ada\\Project2\\a.py", folder, windows=True)
    assert not paths.is_within("D:\\Users\\Ada\\Project\\a.py", folder, windows=True)
    assert paths.is_within("\\\\server\\share\\x\\a.py", "\\\\SERVER\\Share", windows=True)
    assert paths.is_within("C:\\a.py", "C:", windows=True)  # a drive names its root
    assert paths.parent("C:\\Users\\a.py", windows=True) == "C:\\Users"


def test_containment_on_posix_keeps_case_where_the_file_system_does(tmp_path: Path) -> None:
    folder = tmp_path / "Project"
    folder.mkdir()
    assert paths.is_within(str(folder / "a.py"), str(folder), windows=False)
    assert not paths.is_within(str(tmp_path / "Project2" / "a.py"), str(folder), windows=False)
    # This machine's file system tells names apart by case (Linux): so does containment.
    assert not paths.ignores_case(str(folder))
    assert not paths.is_within(str(tmp_path / "project" / "a.py"), str(folder), windows=False)
    # Told the file system ignores case (macOS's default), containment does too.
    assert paths.is_within(str(tmp_path / "project" / "a.py"), str(folder), windows=False, ignore_case=True)
    assert paths.is_within("/anything", "/", windows=False)


def test_routing_finds_the_folder_and_the_root_marker(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    (folder / "pkg" / "src").mkdir(parents=True)
    (folder / "pkg" / "pyproject.toml").write_text("")
    file = str(folder / "pkg" / "src" / "a.py")
    assert containing_folder(file, [str(tmp_path), str(folder)]) == str(folder)
    assert find_root(file, ["pyproject.toml"], [str(folder)]) == str(folder / "pkg")
    assert find_root(file, ["none.toml"], [str(folder)]) == str(folder)
    assert containing_folder(str(tmp_path / "wsx" / "a.py"), [str(folder)]) is None
