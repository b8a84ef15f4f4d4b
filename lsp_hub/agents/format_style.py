"""A project's formatting style: what a verified write asks the formatter for.

`project_style` finds the LSP `FormattingOptions` of one file: `.editorconfig` (up from the file to the workspace
root, stopping at `root = true`), else the prettier configuration for the files prettier formats, else the
indentation the file (or, for a new file, a sibling of its kind) already has, else 4 spaces; each choice says
where it came from. Which lines the formatter may change is `changed_lines.py`. Standard library only; no LSP
client code, no processes."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_TAB_SIZE = 4
PRETTIER_TAB_SIZE = 2  # prettier's own default, what a project with a prettier configuration is formatted with
CONFIG_MAX_BYTES = 256 * 1024
SIBLINGS_TRIED = 5  # files of the same kind read to infer a new file's indentation
PRETTIER_FILES = (".prettierrc", ".prettierrc.json", ".prettierrc.yaml", ".prettierrc.yml")
PRETTIER_EXTENSIONS = frozenset(
    {
        "js",
        "jsx",
        "mjs",
        "cjs",
        "ts",
        "tsx",
        "mts",
        "cts",
        "json",
        "jsonc",
        "json5",
        "css",
        "scss",
        "less",
        "html",
        "vue",
        "md",
        "markdown",
        "mdx",
        "yaml",
        "yml",
        "graphql",
        "gql",
        "hbs",
        "handlebars",
    }
)
_LINE_END = re.compile(r"\r\n|\r|\n")


# ==================================================================================================== the style
@dataclass(frozen=True)
class FormatStyle:
    """FormattingOptions for one file, and where the indentation came from: `source` is "editorconfig",
    "prettier", "inferred" or "default" (two joined by "+" when tabs-or-spaces and the width came from different
    places); `config_files` are the files read that decided anything."""

    tab_size: int
    insert_spaces: bool
    source: str
    config_files: tuple[str, ...] = ()
    trim_trailing_whitespace: bool | None = None
    insert_final_newline: bool | None = None
    trim_final_newlines: bool | None = None

    def lsp_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"tabSize": self.tab_size, "insertSpaces": self.insert_spaces}
        for key, value in (
            ("trimTrailingWhitespace", self.trim_trailing_whitespace),
            ("insertFinalNewline", self.insert_final_newline),
            ("trimFinalNewlines", self.trim_final_newlines),
        ):
            if value is not None:
                options[key] = value
        return options


@dataclass
class _Choice:
    """What one layer (editorconfig, prettier, inference) says; None: it does not say."""

    insert_spaces: bool | None = None
    tab_size: int | None = None
    config_file: str | None = None
    extras: dict[str, bool] = field(default_factory=dict)


def project_style(path: Path, root: Path, existing_text: str | None) -> FormatStyle:
    """The style `path` (inside `root`) is formatted with. `existing_text` is the file's text before the write
    (None for a new file: its siblings of the same kind are read instead)."""
    layers: list[tuple[str, _Choice]] = [("editorconfig", _editorconfig_choice(path, root))]
    if path.suffix[1:].lower() in PRETTIER_EXTENSIONS:
        layers.append(("prettier", _prettier_choice(path, root)))
    layers.append(("inferred", _inferred_choice(path, existing_text)))
    insert_spaces, spaces_source = next(
        ((choice.insert_spaces, name) for name, choice in layers if choice.insert_spaces is not None), (True, "default")
    )
    tab_size, size_source = next(
        ((choice.tab_size, name) for name, choice in layers if choice.tab_size is not None),
        (DEFAULT_TAB_SIZE, "default"),
    )
    if not insert_spaces and size_source not in ("editorconfig", "prettier"):
        # A tab's width was never in the file: nobody said it, so the width is the default's.
        tab_size, size_source = DEFAULT_TAB_SIZE, spaces_source
    used = (spaces_source,) if spaces_source == size_source else (spaces_source, size_source)
    extras = layers[0][1].extras
    config_files = tuple(
        dict.fromkeys(
            choice.config_file
            for name, choice in layers
            if choice.config_file is not None and (name in used or (name == "editorconfig" and extras))
        )
    )
    return FormatStyle(
        tab_size,
        insert_spaces,
        "+".join(used),
        config_files,
        extras.get("trim_trailing_whitespace"),
        extras.get("insert_final_newline"),
        extras.get("trim_final_newlines"),
    )


# ==================================================================================================== .editorconfig
def editorconfig_properties(path: Path, root: Path) -> tuple[dict[str, str], list[Path]]:
    """The editorconfig properties of `path` (lowercase names, the values we read lowercased, "unset" ones removed)
    and the `.editorconfig` files that gave any, from those between the file's directory and `root`: the nearest
    file wins, and within a file the last matching section."""
    chain: list[tuple[Path, list[tuple[str, dict[str, str]]]]] = []
    for directory in _directories_up_to(path.parent, root):
        parsed = _read_editorconfig(directory / ".editorconfig")
        if parsed is None:
            continue
        is_root, sections = parsed
        chain.append((directory / ".editorconfig", sections))
        if is_root:
            break
    properties: dict[str, str] = {}
    used: list[Path] = []
    for config, sections in reversed(chain):  # the farthest first, so nearer files override
        relative = path.relative_to(config.parent).as_posix()
        matched = False
        for glob, values in sections:
            if editorconfig_glob_matches(glob, relative):
                properties.update(values)
                matched = matched or bool(values)
        if matched:
            used.append(config)
    return {name: value for name, value in properties.items() if value != "unset"}, used


def _read_editorconfig(config: Path) -> tuple[bool, list[tuple[str, dict[str, str]]]] | None:
    """(`root = true` in the preamble, its sections in order), or None if there is no such readable file."""
    text = _read_small(config)
    if text is None:
        return None
    is_root = False
    sections: list[tuple[str, dict[str, str]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            sections.append((line[1:-1], {}))
            continue
        name, separator, value = line.partition("=")
        if not separator:
            continue
        name, value = name.strip().lower(), value.strip()
        if not sections:
            if name == "root":
                is_root = value.lower() == "true"
            continue
        sections[-1][1][name] = value.lower() if name in _LOWERCASE_VALUES else value
    return is_root, sections


_LOWERCASE_VALUES = frozenset(
    {
        "indent_style",
        "indent_size",
        "tab_width",
        "trim_trailing_whitespace",
        "insert_final_newline",
        "end_of_line",
        "charset",
    }
)


def _editorconfig_choice(path: Path, root: Path) -> _Choice:
    properties, configs = editorconfig_properties(path, root)
    choice = _Choice(config_file=str(configs[-1]) if configs else None)
    style = properties.get("indent_style")
    if style in ("space", "tab"):
        choice.insert_spaces = style == "space"
    indent_size = _positive_int(properties.get("indent_size"))
    tab_width = _positive_int(properties.get("tab_width"))
    if properties.get("indent_size") == "tab" or (style == "tab" and indent_size is None):
        indent_size = tab_width
    if choice.insert_spaces is False:
        choice.tab_size = tab_width or indent_size  # a tab is this wide; indentation is whole tabs
    else:
        choice.tab_size = indent_size
    for name in ("trim_trailing_whitespace", "insert_final_newline"):
        if properties.get(name) in ("true", "false"):
            choice.extras[name] = properties[name] == "true"
    if choice.extras.get("insert_final_newline"):
        choice.extras["trim_final_newlines"] = True  # exactly one final newline
    return choice


def editorconfig_glob_matches(glob: str, relative_path: str) -> bool:
    """Whether an editorconfig section name matches a path relative to that `.editorconfig`'s directory
    (`/`-separated). A glob without `/` matches the file name in any directory; `*` stops at `/`, `**` does not;
    `?`, `[abc]`, `[!abc]`, `{a,b}` (nested, with globs inside) and `{1..9}` as in the editorconfig specification."""
    ranges: list[tuple[int, int]] = []
    # Without a `/` the glob names a file in any directory below the `.editorconfig`.
    pattern = _glob_regex(glob.removeprefix("/"), ranges) if "/" in glob else "(?:.*/)?" + _glob_regex(glob, ranges)
    try:
        match = re.fullmatch(pattern, relative_path, re.DOTALL)
    except re.error:
        return False
    if match is None:
        return False
    return all(low <= int(number) <= high for number, (low, high) in zip(match.groups(), ranges, strict=True))


def _glob_regex(glob: str, ranges: list[tuple[int, int]]) -> str:
    """The regular expression of an editorconfig glob; each `{n..m}` becomes a group, its bounds appended to
    `ranges` (the only groups: alternatives do not capture)."""
    out: list[str] = []
    index, length = 0, len(glob)
    while index < length:
        char = glob[index]
        if char == "\\" and index + 1 < length:
            out.append(re.escape(glob[index + 1]))
            index += 2
        elif char == "*":
            if glob.startswith("**", index):
                out.append(".*")
                index += 2
                while index < length and glob[index] == "*":
                    index += 1
            else:
                out.append("[^/]*")
                index += 1
        elif char == "?":
            out.append("[^/]")
            index += 1
        elif char == "[":
            close = glob.find("]", index + 1)
            body = glob[index + 1 : close] if close != -1 else ""
            if close == -1 or "/" in body:
                out.append(r"\[")  # not a class: a literal bracket
                index += 1
                continue
            negated = body[:1] in ("!", "^")
            members = body[1:] if negated else body
            escaped = "".join(member if member == "-" else re.escape(member) for member in members)
            out.append(f"[{'^/' if negated else ''}{escaped}]")
            index = close + 1
        elif char == "{":
            brace_end = _matching_brace(glob, index)
            if brace_end is None:
                out.append(r"\{")
                index += 1
                continue
            inner = glob[index + 1 : brace_end]
            numeric = re.fullmatch(r"([+-]?\d+)\.\.([+-]?\d+)", inner)
            alternatives = _split_alternatives(inner)
            if numeric:
                low, high = sorted((int(numeric.group(1)), int(numeric.group(2))))
                ranges.append((low, high))
                out.append(r"([+-]?\d+)")
            elif len(alternatives) == 1:
                out.append(r"\{" + _glob_regex(inner, ranges) + r"\}")
            else:
                out.append("(?:" + "|".join(_glob_regex(part, ranges) for part in alternatives) + ")")
            index = brace_end + 1
        else:
            out.append(re.escape(char))
            index += 1
    return "".join(out)


def _matching_brace(glob: str, start: int) -> int | None:
    depth, index = 0, start
    while index < len(glob):
        char = glob[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return None


def _split_alternatives(inner: str) -> list[str]:
    """`a,{b,c},d` → `a`, `{b,c}`, `d` (commas inside nested braces or escaped stay)."""
    parts: list[str] = []
    depth, current, index = 0, [], 0
    while index < len(inner):
        char = inner[index]
        if char == "\\" and index + 1 < len(inner):
            current.append(inner[index : index + 2])
            index += 2
            continue
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            depth += {"{": 1, "}": -1}.get(char, 0)
            current.append(char)
        index += 1
    parts.append("".join(current))
    return parts


# ==================================================================================================== prettier
def prettier_indentation(path: Path, root: Path) -> tuple[bool, int, Path] | None:
    """(insert spaces, tab width, the file that said so) from the nearest prettier configuration between the file's
    directory and `root` (`.prettierrc` as JSON or simple YAML, `.prettierrc.json|yaml|yml`, or package.json's
    "prettier" object), prettier's defaults (2 spaces) for what it does not set; None without one. A configuration
    naming a shared one (a string) is not followed: None."""
    for directory in _directories_up_to(path.parent, root):
        for name in ("package.json", *PRETTIER_FILES):
            candidate = directory / name
            text = _read_small(candidate)
            if text is None:
                continue
            settings = _prettier_settings(name, text)
            if settings is None:
                continue
            if not isinstance(settings, dict):
                return None
            use_tabs = settings.get("useTabs")
            tab_width = settings.get("tabWidth")
            return (
                use_tabs is not True,
                tab_width if isinstance(tab_width, int) and tab_width > 0 else PRETTIER_TAB_SIZE,
                candidate,
            )
    return None


def _prettier_settings(name: str, text: str) -> Any:
    """The settings in one candidate file (any JSON value), or None when it holds no prettier configuration."""
    if name == "package.json":
        try:
            package = json.loads(text)
        except ValueError:
            return None
        return package.get("prettier") if isinstance(package, dict) else None
    if name in (".prettierrc", ".prettierrc.json"):
        try:
            return json.loads(text)
        except ValueError:
            if name == ".prettierrc.json":
                return None
    return _simple_yaml(text)


def _simple_yaml(text: str) -> dict[str, Any]:
    """The top-level `key: scalar` lines of a YAML mapping (enough for tabWidth and useTabs)."""
    settings: dict[str, Any] = {}
    for line in text.splitlines():
        found = re.match(r"""^["']?([A-Za-z_][\w-]*)["']?\s*:\s*([^#]*?)\s*(?:#.*)?$""", line)
        if not found:
            continue
        key, value = found.groups()
        lowered = value.lower().strip("\"'")
        settings[key] = (
            True if lowered == "true" else False if lowered == "false" else int(lowered) if lowered.isdigit() else value
        )
    return settings


def _prettier_choice(path: Path, root: Path) -> _Choice:
    found = prettier_indentation(path, root)
    if found is None:
        return _Choice()
    insert_spaces, tab_size, config = found
    return _Choice(insert_spaces, tab_size, str(config))


# ==================================================================================================== inference
def infer_indentation(text: str) -> tuple[bool, int] | None:
    """(insert spaces, indentation step) the text is written with: tabs if more lines start with a tab than with
    spaces, else the most common increase of indentation between a line and the next non-blank one (the smaller on
    a tie); None when no line is indented."""
    tab_lines = space_lines = 0
    steps: Counter[int] = Counter()
    previous = 0
    for line in _LINE_END.split(text):
        body = line.lstrip(" \t")
        if not body:
            continue
        indent = line[: len(line) - len(body)]
        if body.startswith("*"):
            continue  # ` * ` of a block comment is aligned one space past its `/**`, not indented
        if indent.startswith("\t"):
            tab_lines += 1
            continue
        if "\t" in indent:
            continue
        width = len(indent)
        if width:
            space_lines += 1
        if width > previous:
            steps[width - previous] += 1
        previous = width
    if tab_lines > space_lines:
        return False, DEFAULT_TAB_SIZE
    if not steps:
        return None
    step = max(steps, key=lambda size: (steps[size], -size))
    return True, step


def _inferred_choice(path: Path, existing_text: str | None) -> _Choice:
    if existing_text is not None:
        found = infer_indentation(existing_text)
        return _Choice(*found) if found is not None else _Choice()
    for sibling in _siblings_of_kind(path):
        text = _read_small(sibling)
        found = infer_indentation(text) if text is not None else None
        if found is not None:
            return _Choice(*found, config_file=str(sibling))
    return _Choice()


def _siblings_of_kind(path: Path) -> list[Path]:
    try:
        entries = sorted(
            entry
            for entry in path.parent.iterdir()
            if entry.suffix == path.suffix and entry.name != path.name and entry.is_file()
        )
    except OSError:
        return []
    return entries[:SIBLINGS_TRIED]


# ==================================================================================================== helpers
def _directories_up_to(start: Path, root: Path) -> list[Path]:
    """`start` and its parents up to and including `root` (only `start` when it is not inside `root`)."""
    directories = [start]
    if start != root and root not in start.parents:
        return directories
    while directories[-1] != root:
        directories.append(directories[-1].parent)
    return directories


def _read_small(path: Path) -> str | None:
    try:
        with path.open("rb") as file:
            data = file.read(CONFIG_MAX_BYTES + 1)
    except OSError:
        return None
    if len(data) > CONFIG_MAX_BYTES:
        return None
    return data.decode("utf-8", errors="replace")


def _positive_int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() and int(value) > 0 else None
