"""Pytest fixture parameters annotated with the type their fixture gives, in a copy of a repository, so that a type
checker can type `def test_x(app): app.route(...)` (bench/callers_accuracy.py's honest truth, issue 27).

A fixture's type is its return annotation, else the class it constructs and returns or yields (`app = Flask(...)`
... `return app`, `return CliRunner()`), else, when it returns a fixture it requested (`def app(self, app): ...
return app`), that fixture's type. Fixtures are looked up as pytest does, nearest first: the test's class, its
module, then the conftest.py files from its directory up. Each annotated file gets `: "_fixture_N"` after the
parameter's name and, on its last line, the imports those names stand for: no line moves, only the columns of the
changed `def` lines. Syntax only (`ast`), never importing the code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

_SKIPPED_PARAMETERS = frozenset(("self", "cls"))


@dataclass(frozen=True, slots=True)
class FixtureType:
    """A class as an import: `from module import name` (module None: the class is defined in the fixture's file,
    `file` the path it is defined in)."""

    module: str | None
    name: str
    file: Path


@dataclass
class _Fixture:
    function: ast.FunctionDef | ast.AsyncFunctionDef
    file: Path
    imports: dict[str, tuple[str, str | None]]  # local name -> (module, imported name or None for `import m`)
    defined_classes: frozenset[str]


def _fixture_name(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The name a fixture is requested by (`@pytest.fixture(name="x")` gives x), or None for no fixture."""
    for decorator in function.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call is not None else decorator
        name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
        if name != "fixture":
            continue
        for keyword in call.keywords if call is not None else ():
            if (
                keyword.arg == "name"
                and isinstance(keyword.value, ast.Constant)
                and isinstance(keyword.value.value, str)
            ):
                return keyword.value.value
        return function.name
    return None


def _module_imports(tree: ast.Module) -> dict[str, tuple[str, str | None]]:
    imports: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                imports[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                # `import a.b as c` binds c to a.b; `import a.b` binds a
                bound = alias.asname or alias.name.split(".")[0]
                imports[bound] = (alias.name if alias.asname else bound, None)
    return imports


def _fixtures_in(body: list[ast.stmt], file: Path, tree: ast.Module) -> dict[str, _Fixture]:
    imports = _module_imports(tree)
    classes = frozenset(node.name for node in tree.body if isinstance(node, ast.ClassDef))
    found = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = _fixture_name(node)
            if name is not None:
                found[name] = _Fixture(node, file, imports, classes)
    return found


class _Scopes:
    """The fixtures visible from a function: its class's, its module's, then the conftest files' up the tree."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._conftests: dict[Path, dict[str, _Fixture]] = {}

    def conftest(self, directory: Path) -> dict[str, _Fixture]:
        if directory not in self._conftests:
            path = directory / "conftest.py"
            fixtures: dict[str, _Fixture] = {}
            if path.is_file():
                tree = _parse(path)
                if tree is not None:
                    fixtures = _fixtures_in(tree.body, path, tree)
            self._conftests[directory] = fixtures
        return self._conftests[directory]

    def levels(
        self, file: Path, module: dict[str, _Fixture], cls: dict[str, _Fixture] | None
    ) -> list[dict[str, _Fixture]]:
        levels = [cls] if cls else []
        levels.append(module)
        directory = file.parent
        while True:
            levels.append(self.conftest(directory))
            if directory == self.root or self.root not in directory.parents:
                return levels
            directory = directory.parent


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_bytes())
    except (SyntaxError, ValueError):
        return None


def _class_of(expression: ast.expr | None, fixture: _Fixture) -> FixtureType | None:
    """The class an expression names or constructs: `Flask`, `Flask(...)`, `flask.Flask(...)`."""
    if isinstance(expression, ast.Call):
        expression = expression.func
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        try:
            expression = ast.parse(expression.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(expression, ast.Name) and expression.id[:1].isupper():
        if expression.id in fixture.imports:
            module, imported = fixture.imports[expression.id]
            return FixtureType(module, imported or expression.id, fixture.file) if imported else None
        if expression.id in fixture.defined_classes:
            return FixtureType(None, expression.id, fixture.file)
        return None
    if isinstance(expression, ast.Attribute) and expression.attr[:1].isupper():
        head = expression.value
        if isinstance(head, ast.Name) and head.id in fixture.imports:
            module, imported = fixture.imports[head.id]
            return FixtureType(module if imported is None else f"{module}.{imported}", expression.attr, fixture.file)
    return None


def _returned(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """The expressions a function returns or yields (not those of functions nested in it)."""
    found: list[ast.expr] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Return, ast.Yield)) and node.value is not None:
            found.append(node.value)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _assigned(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> list[ast.expr]:
    values = []
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            values.append(node.value)
        elif (
            isinstance(node, ast.withitem)
            and isinstance(node.optional_vars, ast.Name)
            and node.optional_vars.id == name
        ):
            values.append(node.context_expr)
    return values


def fixture_type(fixture: _Fixture, outer: list[dict[str, _Fixture]], depth: int = 0) -> FixtureType | None:
    """The type a fixture gives (see the module's description); `outer`: the levels a parameter it requests is
    looked up in (a fixture overriding one of its name requests the outer one)."""
    function = fixture.function
    if function.returns is not None:
        return _class_of(function.returns, fixture)
    returned = _returned(function)
    if len(returned) != 1 or depth > 4:
        return None
    [value] = returned
    if isinstance(value, ast.Name):
        parameters = {argument.arg for argument in function.args.args}
        if value.id in parameters:
            for level in outer:
                requested = level.get(value.id)
                if requested is not None and requested is not fixture:
                    return fixture_type(requested, outer[outer.index(level) + 1 :], depth + 1)
            return None
        made = [_class_of(assigned, fixture) for assigned in _assigned(function, value.id)]
        first = made[0] if made else None
        return first if first is not None and all(other == first for other in made) else None
    return _class_of(value, fixture)


def _test_functions(tree: ast.Module) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None]]:
    """Test functions and fixtures, module-level or in a class, with their class."""
    found: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None]] = []
    for node in tree.body:
        members = node.body if isinstance(node, ast.ClassDef) else [node]
        for member in members:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                member.name.startswith("test") or _fixture_name(member) is not None
            ):
                found.append((member, node if isinstance(node, ast.ClassDef) else None))
    return found


def _import_line(kind: FixtureType, alias: str, file: Path) -> str | None:
    if kind.module is not None:
        return f"from {kind.module} import {kind.name} as {alias}"
    if kind.file == file:
        return ""  # the class is the file's own: its name stands
    if kind.file.parent == file.parent:
        return f"from {kind.file.stem} import {kind.name} as {alias}"
    return None


def annotate_fixtures(root: Path) -> tuple[int, int]:
    """Annotates, in place, the fixture parameters of test functions and fixtures under `root` whose fixture's type
    is known. Returns (files changed, parameters annotated)."""
    scopes = _Scopes(root)
    files = parameters = 0
    for path in sorted(root.rglob("*.py")):
        if ".git" in path.parts or not (path.name.startswith("test") or path.name == "conftest.py"):
            continue
        tree = _parse(path)
        if tree is None:
            continue
        module_fixtures = _fixtures_in(tree.body, path, tree)
        insertions: list[tuple[int, int, str]] = []  # (line, byte column, text)
        aliases: dict[FixtureType, str] = {}
        for function, cls in _test_functions(tree):
            class_fixtures = _fixtures_in(cls.body, path, tree) if cls is not None else None
            levels = scopes.levels(path, module_fixtures, class_fixtures)
            own = _fixture_name(function)
            for argument in function.args.args:
                if argument.annotation is not None or argument.arg in _SKIPPED_PARAMETERS:
                    continue
                visible = [level for level in levels if argument.arg in level]
                # A fixture requesting its own name asks for the one it overrides.
                if own == argument.arg and visible and visible[0][argument.arg].function is function:
                    visible = visible[1:]
                if not visible:
                    continue
                requested = visible[0][argument.arg]
                start = levels.index(visible[0])
                kind = fixture_type(requested, levels[start + 1 :] if requested.function is function else levels)
                if kind is None or _import_line(kind, "_", path) is None:
                    continue
                alias = kind.name if kind.file == path and kind.module is None else None
                alias = alias or aliases.setdefault(kind, f"_fixture_{len(aliases)}")
                end = argument.end_col_offset if argument.end_col_offset is not None else argument.col_offset
                insertions.append((argument.lineno, end, f': "{alias}"'))
        if not insertions:
            continue
        lines = path.read_bytes().split(b"\n")
        for line, column, text in sorted(insertions, reverse=True):
            raw = lines[line - 1]
            lines[line - 1] = raw[:column] + text.encode() + raw[column:]
        imports = [_import_line(kind, alias, path) for kind, alias in aliases.items()]
        # On the last line, so that no call site moves to another line.
        tail = "; ".join(line for line in imports if line)
        if lines and lines[-1].strip():
            lines.append(b"")
        lines[-1] = (tail + "  # fixture types, by the bench").encode()
        path.write_bytes(b"\n".join(lines) + b"\n")
        files += 1
        parameters += len(insertions)
    return files, parameters
