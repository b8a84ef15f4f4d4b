"""`imports` (issue #24): the import graph around a file on real trees, per language as its tooling resolves."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

import lsp_hub
from lsp_hub.index import api
from lsp_hub.index.navigation.common import NavigationError
from lsp_hub.index.navigation.imports_graph import import_edges
from lsp_hub.index.workspace import WorkspaceIndex
from tests.index.index_helpers import write


def _built(root: Path) -> WorkspaceIndex:
    index = WorkspaceIndex(root, use_cache=False)
    index.build()
    return index


def _module_file(root: Path, dotted: str) -> str | None:
    base = root.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate.relative_to(root).as_posix()
    return None


def _ast_imports(root: Path, path: Path) -> set[str]:
    """What a file imports inside the tree, by Python's own `ast`: each imported module's file, and the submodule
    of each from-imported name that is one."""
    package = path.relative_to(root).parent.parts
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                module = _module_file(root, alias.name)
                if module:
                    found.add(module)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1])
                dotted = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                dotted = node.module or ""
            module = _module_file(root, dotted) if dotted else None
            if module:
                found.add(module)
            for alias in node.names:
                submodule = _module_file(root, f"{dotted}.{alias.name}") if alias.name != "*" else None
                if submodule:
                    found.add(submodule)
    found.discard(path.relative_to(root).as_posix())
    return found


def test_the_import_graph_of_lsp_hub_matches_pythons_ast(tmp_path: Path) -> None:
    shutil.copytree(Path(lsp_hub.__file__).parent, tmp_path / "lsp_hub",
                    ignore=shutil.ignore_patterns("__pycache__", "*.js"))
    index = _built(tmp_path)
    edges = import_edges(index.snapshot())
    checked = 0
    for path in sorted((tmp_path / "lsp_hub").rglob("*.py")):
        relative = path.relative_to(tmp_path).as_posix()
        assert set(edges.imports.get(relative, ())) == _ast_imports(tmp_path, path), relative
        checked += 1
    assert checked > 50
    # And both ways from one file, breadth-first.
    result = api.imports(index, "lsp_hub/index/resolve.py", "both", depth=1).to_json()
    assert {"path": "lsp_hub/index/records.py", "depth": 1} in result["imports"]
    assert {"path": "lsp_hub/index/graph_inputs.py", "depth": 1} in result["importedBy"]
    assert "re" in result["external"] and result["complete"] is True
    deeper = api.imports(index, "lsp_hub/index/resolve.py", "up", depth=2).to_json()
    assert "imports" not in deeper and any(entry["depth"] == 2 for entry in deeper["importedBy"])


def test_typescript_tsconfig_paths_base_url_and_workspace_packages(tmp_path: Path) -> None:
    write(tmp_path, "tsconfig.json", """{
      // comments and trailing commas, as tsc accepts them
      "compilerOptions": {"baseUrl": "src", "paths": {"@app/*": ["app/*"], "@config": ["config/index.ts"],},},
    }""")
    write(tmp_path, "src/app/cart.ts", "export class Cart {}\n")
    write(tmp_path, "src/config/index.ts", "export const config = 1;\n")
    write(tmp_path, "src/util/text.ts", "export function slug(s: string) { return s; }\n")
    write(tmp_path, "src/main.ts", "import { Cart } from '@app/cart';\nimport { config } from '@config';\n"
                                   "import { slug } from 'util/text';\nimport { ui } from '@acme/ui';\n"
                                   "import { h } from '@acme/ui/helpers';\nimport React from 'react';\n")
    write(tmp_path, "packages/ui/package.json", '{"name": "@acme/ui", "main": "dist/index.js"}')
    write(tmp_path, "packages/ui/src/index.ts", "export const ui = 1;\n")
    write(tmp_path, "packages/ui/helpers.ts", "export const h = 1;\n")
    result = api.imports(_built(tmp_path), "src/main.ts", "down").to_json()
    assert [entry["path"] for entry in result["imports"]] == [
        "src/app/cart.ts", "src/config/index.ts", "src/util/text.ts", "packages/ui/src/index.ts",
        "packages/ui/helpers.ts"]
    assert result["external"] == ["react"]


def test_a_package_name_means_its_types_to_typescript_and_its_code_to_javascript(tmp_path: Path) -> None:
    """As each resolves it: TypeScript reads a package's declarations (`types`), node runs its code (`main`, the
    `import`/`default` export). A JavaScript file is not broken by a change to declarations it never loads."""
    write(tmp_path, "package.json", '{"name": "cli-kit", "type": "module", "main": "./index.js", '
                                    '"types": "typings/index.d.ts", "exports": {".": {"types": "./typings/index.d.ts", '
                                    '"default": "./index.js"}}}')
    write(tmp_path, "index.js", "export { Option } from './lib/option.js';\n")
    write(tmp_path, "lib/option.js", "export class Option {}\n")
    write(tmp_path, "typings/index.d.ts", "export class Option {}\n")
    write(tmp_path, "typings/check.ts", "import { Option } from 'cli-kit';\n")
    write(tmp_path, "examples/menu.js", "import { Option } from 'cli-kit';\n")
    write(tmp_path, "examples/legacy.cjs", "const { Option } = require('cli-kit');\n")
    index = _built(tmp_path)
    imports = {path: [entry["path"] for entry in api.imports(index, path, "down").to_json()["imports"]]
               for path in ("typings/check.ts", "examples/menu.js", "examples/legacy.cjs")}
    assert imports == {"typings/check.ts": ["typings/index.d.ts"], "examples/menu.js": ["index.js"],
                       "examples/legacy.cjs": ["index.js"]}


def test_go_module_paths_from_go_mod(tmp_path: Path) -> None:
    write(tmp_path, "go.mod", "module example.com/shop\n\ngo 1.22\n")
    write(tmp_path, "cart/cart.go", "package cart\n\nfunc Total() int { return 1 }\n")
    write(tmp_path, "cart/cart_test.go", "package cart\n")
    write(tmp_path, "main.go", 'package main\n\nimport (\n\t"fmt"\n\t"example.com/shop/cart"\n)\n\n'
                               "func main() { fmt.Println(cart.Total()) }\n")
    index = _built(tmp_path)
    result = api.imports(index, "main.go").to_json()
    assert result["imports"] == [{"path": "cart/cart.go", "depth": 1}] and result["external"] == ["fmt"]
    assert api.imports(index, "cart/cart.go", "up").to_json()["importedBy"] == [{"path": "main.go", "depth": 1}]


def test_a_go_package_imported_whole_is_one_line_of_text_and_named_in_packages(tmp_path: Path) -> None:
    """A Go import takes in every file of its package: 14 lines for cobra's root package from each file of its
    doc/ package; one line, with the files in `packages` (the `imports` entries stay one per file)."""
    write(tmp_path, "go.mod", "module example.com/shop\n\ngo 1.22\n")
    for name in ("cart", "price", "tax"):
        write(tmp_path, f"cart/{name}.go", f"package cart\n\nfunc {name.title()}() int {{ return 1 }}\n")
    write(tmp_path, "util/util.go", "package util\n\nfunc Round() int { return 1 }\n")
    write(tmp_path, "main.go", 'package main\n\nimport (\n\t"example.com/shop/cart"\n\t"example.com/shop/util"\n)\n\n'
                               "func main() { cart.Cart(); util.Round() }\n")
    result = api.imports(_built(tmp_path), "main.go", "down")
    data = result.to_json()
    assert [entry["path"] for entry in data["imports"]] == ["cart/cart.go", "cart/price.go", "cart/tax.go",
                                                            "util/util.go"]
    assert data["packages"] == [{"module": "example.com/shop/cart",
                                 "files": ["cart/cart.go", "cart/price.go", "cart/tax.go"]}]
    assert result.to_text().splitlines()[1:4] == [
        "imports:", "  1 example.com/shop/cart (package: 3 files in cart/)", "  1 util/util.go"]


def test_rust_crate_modules_and_a_cargo_workspace_of_two_crates(tmp_path: Path) -> None:
    write(tmp_path, "Cargo.toml", '[workspace]\nmembers = ["core", "app"]\n')
    write(tmp_path, "core/Cargo.toml", '[package]\nname = "shop-core"\nversion = "0.1.0"\n')
    write(tmp_path, "core/src/lib.rs", "pub mod cart;\n")
    write(tmp_path, "core/src/cart.rs", "pub struct Cart;\n")
    write(tmp_path, "app/Cargo.toml", '[package]\nname = "app"\nversion = "0.1.0"\n\n[dependencies]\n'
                                      'shop-core = { path = "../core" }\n')
    write(tmp_path, "app/src/main.rs", "mod cli;\nuse crate::cli::run;\nuse shop_core::cart::Cart;\n"
                                       "use serde::Serialize;\nfn main() { run(); }\n")
    write(tmp_path, "app/src/cli.rs", "pub fn run() {}\n")
    index = _built(tmp_path)
    result = api.imports(index, "app/src/main.rs", "down").to_json()
    assert [entry["path"] for entry in result["imports"]] == ["app/src/cli.rs", "core/src/cart.rs"]
    assert result["external"] == ["serde::Serialize"]
    up = api.imports(index, "core/src/cart.rs", "up", depth=0).to_json()
    assert [entry["path"] for entry in up["importedBy"]] == ["app/src/main.rs", "core/src/lib.rs"]


def test_c_quoted_includes(tmp_path: Path) -> None:
    write(tmp_path, "include/shop/cart.h", "int total(void);\n")
    write(tmp_path, "src/cart.c", '#include "shop/cart.h"\n#include <stdio.h>\nint total(void) { return 1; }\n')
    result = api.imports(_built(tmp_path), "src/cart.c", "down").to_json()
    assert result["imports"] == [{"path": "include/shop/cart.h", "depth": 1}]
    assert result["external"] == ["<stdio.h>"]


def test_imports_refuses_bad_arguments(tmp_path: Path) -> None:
    write(tmp_path, "a.py", "import os\n")
    index = _built(tmp_path)
    with pytest.raises(NavigationError, match="direction must be up, down or both"):
        api.imports(index, "a.py", "sideways")
    with pytest.raises(NavigationError, match="outside the workspace"):
        api.imports(index, str(tmp_path.parent / "b.py"))
