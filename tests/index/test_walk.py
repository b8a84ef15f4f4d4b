"""Which files the index walks, and every reason it skips one."""

from __future__ import annotations

import os
from pathlib import Path

from lsp_hub.index.walk import MAX_DIRECTORY_DEPTH, exclusion_reason, walk_workspace
from tests.index.index_helpers import write


def walked_paths(root: Path, max_file_size: int = 1024 * 1024) -> list[str]:
    return [walked.path for walked in walk_workspace(root, max_file_size).files]


def test_gitignore_at_every_level_with_negation_and_info_exclude(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "generated/\n*.gen.py\n/rootonly.py\n")
    write(tmp_path, ".git/info/exclude", "private.py\n")
    write(tmp_path, "app/.gitignore", "local_*.py\n!local_keep.py\n")
    for path in (
        "main.py", "rootonly.py", "app/rootonly.py", "generated/x.py", "app/generated/y.py", "app/a.gen.py",
        "private.py", "app/local_tmp.py", "app/local_keep.py", "other/local_tmp.py",
    ):
        write(tmp_path, path, "x = 1\n")
    assert walked_paths(tmp_path) == ["app/local_keep.py", "app/rootonly.py", "main.py", "other/local_tmp.py"]
    result = walk_workspace(tmp_path)
    assert result.skip_counts["gitignored"] == 6  # generated/ and app/generated/ count as one each
    assert exclusion_reason(tmp_path, "app/local_tmp.py") == "gitignored"
    assert exclusion_reason(tmp_path, "app/generated/y.py") == "gitignored"
    assert exclusion_reason(tmp_path, "private.py") == "gitignored"
    assert exclusion_reason(tmp_path, "app/local_keep.py") is None
    assert exclusion_reason(tmp_path, "other/local_tmp.py") is None


def test_hidden_and_conventional_directories_are_not_entered(tmp_path: Path) -> None:
    for path in ("src/a.ts", "node_modules/lib/index.js", ".venv/lib/x.py", "build/out.js", "dist/b.js",
                 "target/debug/c.rs", "vendor/d.go", "__pycache__/e.py", ".next/f.js", "coverage/g.js",
                 ".hidden/h.py", "src/node_modules/i.js", "src/.cache/j.py"):
        write(tmp_path, path, "let x = 1;\n")
    write(tmp_path, "README.md", "# not source\n")
    write(tmp_path, ".eslintrc.js", "module.exports = {};\n")  # a hidden *file* is still source
    assert walked_paths(tmp_path) == [".eslintrc.js", "src/a.ts"]
    counts = walk_workspace(tmp_path).skip_counts
    assert counts["ignored_directory"] == 8
    assert counts["hidden_directory"] == 4  # .venv and .next are hidden before they are conventional
    assert counts["unsupported_language"] == 1
    assert exclusion_reason(tmp_path, "src/node_modules/i.js") == "ignored_directory"
    assert exclusion_reason(tmp_path, ".hidden/h.py") == "hidden_directory"
    assert exclusion_reason(tmp_path, "README.md") == "unsupported_language"


def test_size_cap_is_reported_per_file(tmp_path: Path) -> None:
    write(tmp_path, "small.py", "x = 1\n")
    write(tmp_path, "big.py", "x = 1\n" * 100)
    result = walk_workspace(tmp_path, max_file_size=100)
    assert [walked.path for walked in result.files] == ["small.py"]
    assert result.skipped == [("big.py", "too_large")]


def test_symlinks_never_lead_out_of_the_root_into_a_loop_or_to_duplicates(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    write(outside, "secret.py", "password = 1\n")
    write(root, "pkg/mod.py", "def f(): pass\n")
    os.symlink(root / "pkg", root / "pkg" / "loop")  # a directory containing a link to itself
    os.symlink(root, root / "pkg" / "up")  # a link to an ancestor
    os.symlink(outside, root / "escape")
    os.symlink(outside / "secret.py", root / "secret_link.py")
    os.symlink(root / "pkg", root / "alias")  # a second way to the same directory
    os.symlink(root / "missing", root / "dangling.py")
    result = walk_workspace(root)
    assert [walked.path for walked in result.files] == ["pkg/mod.py"]
    assert result.skip_counts["symlink_loop"] == 2
    assert result.skip_counts["symlink_outside_root"] == 2
    assert result.skip_counts["symlink_duplicate"] == 1
    assert result.skip_counts["broken_symlink"] == 1
    # Links out of the root leave code out, so they are reported by path; loops and duplicates do not.
    assert sorted(result.skipped) == [("escape", "symlink_outside_root"), ("secret_link.py", "symlink_outside_root")]
    assert exclusion_reason(root, "escape/secret.py") == "symlink_outside_root"
    assert exclusion_reason(root, "alias/mod.py") == "symlink_duplicate"


def test_marker_files_are_found_for_the_resolver(tmp_path: Path) -> None:
    write(tmp_path, "go.mod", "module example.com/x\n")
    write(tmp_path, "tools/go.mod", "module example.com/tools\n")
    write(tmp_path, "crate/Cargo.toml", "[package]\nname = 'c'\n")
    write(tmp_path, "node_modules/go.mod", "module ignored\n")
    assert walk_workspace(tmp_path).marker_files == ["crate/Cargo.toml", "go.mod", "tools/go.mod"]


def test_a_very_deep_directory_chain_is_walked_without_recursion_and_cut_at_the_depth_cap(tmp_path: Path) -> None:
    # 1,100 levels: deeper than Python's recursion limit, which a recursive walk hit (the index never got built).
    write(tmp_path, "top.py", "x = 1\n")
    deep = tmp_path
    for _ in range(1100):  # one level at a time: Path.mkdir(parents=True) recurses itself
        deep = deep / "d"
        deep.mkdir()
    within = tmp_path.joinpath(*["d"] * MAX_DIRECTORY_DEPTH)
    walked_path = "/".join(["d"] * MAX_DIRECTORY_DEPTH) + "/deepest_walked.py"
    try:
        (deep / "bottom.py").write_text("y = 2\n")
        (within / "deepest_walked.py").write_text("z = 3\n")
        result = walk_workspace(tmp_path)
        cut = "/".join(["d"] * (MAX_DIRECTORY_DEPTH + 1))
        assert [walked.path for walked in result.files] == [walked_path, "top.py"]
        assert result.skipped == [(cut, "too_deep")] and result.skip_counts["too_deep"] == 1
        assert exclusion_reason(tmp_path, "/".join(["d"] * 1100) + "/bottom.py") == "too_deep"
        assert exclusion_reason(tmp_path, walked_path) is None
    finally:  # removed bottom-up here: shutil.rmtree (pytest's clean-up) recurses and would fail on it
        (deep / "bottom.py").unlink(missing_ok=True)
        (within / "deepest_walked.py").unlink(missing_ok=True)
        while deep != tmp_path:
            deep.rmdir()
            deep = deep.parent
