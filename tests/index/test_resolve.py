"""Import resolution to workspace files, per language, on the fixture repositories and small layouts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lsp_hub.index.resolve import ImportResolver
from lsp_hub.index.workspace import WorkspaceIndex
from tests.index.index_helpers import write


def resolver_for(root: Path) -> ImportResolver:
    index = WorkspaceIndex(root, use_cache=False)
    index.build()
    snapshot = index.snapshot()
    return ImportResolver(snapshot.files, snapshot.markers)


def targets(resolver: ImportResolver, path: str) -> dict[str, tuple[str, ...]]:
    return {resolved.module: resolved.files for resolved in resolver.resolve_file(path)}


def test_python_relative_absolute_packages_and_submodules(copy_repo: Callable[[str], Path]) -> None:
    resolver = resolver_for(copy_repo("pyapp"))
    assert targets(resolver, "pyapp/storage.py") == {
        "models": ("pyapp/models.py",), "util.text": ("pyapp/util/text.py",)
    }
    assert targets(resolver, "tests/test_storage.py") == {
        "pyapp.models": ("pyapp/models.py",), "pyapp.storage": ("pyapp/storage.py",)
    }
    service = {resolved.module: resolved for resolved in resolver.resolve_file("pyapp/service.py")}
    assert dict(service[""].names) == {"models": ("pyapp/models.py",)}  # `from . import models`: a submodule
    assert targets(resolver, "pyapp/cli.py")["sys"] == ()  # the standard library is external


def test_python_src_layout_and_nearest_candidate(tmp_path: Path) -> None:
    write(tmp_path, "src/shop/__init__.py", "")
    write(tmp_path, "src/shop/cart.py", "def total(): pass\n")
    write(tmp_path, "tools/shop/cart.py", "def other(): pass\n")  # `tools` is not an import root of `shop`
    write(tmp_path, "tools/__init__.py", "")
    write(tmp_path, "tests/test_cart.py", "from shop.cart import total\nimport shop\n")
    write(tmp_path, "src/shop/helpers/__init__.py", "from ..cart import total\nfrom . import missing\n")
    resolver = resolver_for(tmp_path)
    assert targets(resolver, "tests/test_cart.py") == {"shop.cart": ("src/shop/cart.py",),
                                                       "shop": ("src/shop/__init__.py",)}
    resolved = targets(resolver, "src/shop/helpers/__init__.py")
    assert resolved["cart"] == ("src/shop/cart.py",)
    assert resolved[""] == ("src/shop/helpers/__init__.py",)


def test_a_package_module_named_like_the_standard_library_s_is_not_what_its_siblings_import(tmp_path: Path) -> None:
    """rich has rich/abc.py, rich/json.py and rich/logging.py: `from abc import ABC` in rich/progress.py is the
    standard library's (Python 3 has no implicit relative import), and `impact rich/abc.py` listed 83 files. A
    sibling that is no standard module still resolves, as for a script run from its directory."""
    write(tmp_path, "rich/__init__.py", "")
    write(tmp_path, "rich/abc.py", "class RichRenderable: pass\n")
    write(tmp_path, "rich/logging.py", "class RichHandler: pass\n")
    write(tmp_path, "rich/helper.py", "def helped(): pass\n")
    write(tmp_path, "rich/progress.py", "from abc import ABC\nimport logging\nimport helper\nfrom . import abc\n")
    resolved = targets(resolver_for(tmp_path), "rich/progress.py")
    assert resolved["abc"] == () and resolved["logging"] == (), resolved
    assert resolved["helper"] == ("rich/helper.py",), resolved
    assert resolved[""] == ("rich/__init__.py",), resolved  # `from . import abc` is the package's own


def test_typescript_extension_and_index_probing(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("tsapp")
    write(root, "src/esm.ts", 'import { add } from "./lib/math.js";\nimport React from "react";\n')
    resolver = resolver_for(root)
    assert targets(resolver, "src/cart.ts") == {"./lib": ("src/lib/index.ts",)}
    assert targets(resolver, "src/components/CartView.tsx") == {"../cart": ("src/cart.ts",)}
    assert targets(resolver, "src/main.js") == {
        "./components/CartView": ("src/components/CartView.tsx",), "./legacy.js": ("src/legacy.js",)
    }
    assert targets(resolver, "src/esm.ts") == {"./lib/math.js": ("src/lib/math.ts",), "react": ()}


def test_a_name_an_es_module_imports_from_a_package_means_the_package_s(tmp_path: Path) -> None:
    """ava's `test` in a test file that also builds an object with a `test()` method: `test(...)` is ava's, not
    the method (a definition at the call went to the method, and the method's callers were every test), and
    `process.exit()` after `import process from "node:process"` is no call of a workspace `exit` method."""
    from lsp_hub.index.callers import find_callers, resolve_targets_by_name
    from lsp_hub.index.symbols import definition_targets

    write(tmp_path, "package.json", '{"name": "x"}\n')
    write(tmp_path, "src/app.ts", "export class App {\n  exit(code: number): void {}\n}\n")
    write(tmp_path, "test/app.test.ts", 'import test from "ava";\nimport process from "node:process";\n\n'
          "const retry = {\n  async test() {\n    return true;\n  },\n};\n\n"
          'test("runs", async () => {\n  process.exit(0);\n});\n')
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    snapshot = index.snapshot()
    assert definition_targets(snapshot, "test/app.test.ts", 9, 0) == []  # `test(` of `test("runs", ...)`
    method = [entry for entry in resolve_targets_by_name(snapshot, "test") if entry[1].kind == "method"]
    assert method and find_callers(snapshot, method)["callers"] == []
    assert find_callers(snapshot, resolve_targets_by_name(snapshot, "App.exit"))["callers"] == []


def test_go_module_paths(copy_repo: Callable[[str], Path]) -> None:
    resolver = resolver_for(copy_repo("gomod"))
    assert targets(resolver, "main.go") == {"fmt": (), "example.com/shop/cart": ("cart/cart.go",)}
    assert targets(resolver, "cart/cart.go") == {"example.com/shop/pricing": ("pricing/pricing.go",)}


def test_rust_c_java_csharp_ruby(copy_repo: Callable[[str], Path]) -> None:
    resolver = resolver_for(copy_repo("mixed"))
    assert targets(resolver, "engine/src/main.rs") == {
        "self::net": ("engine/src/net/mod.rs",),
        "self::util": ("engine/src/util.rs",),
        "crate::util::checksum": ("engine/src/util.rs",),
    }
    assert targets(resolver, "engine/src/net/mod.rs") == {
        "self::framing": ("engine/src/net/framing.rs",), "framing::frame": ("engine/src/net/framing.rs",)
    }
    assert targets(resolver, "engine/src/net/framing.rs") == {"crate::util::checksum": ("engine/src/util.rs",)}
    assert targets(resolver, "native/src/main.c") == {
        "<stdio.h>": (), '"ring.h"': ("native/include/ring.h",), '"local.h"': ("native/src/local.h",)
    }
    assert targets(resolver, "jvm/src/main/java/com/acme/App.java") == {
        "com.acme.core.Engine": ("jvm/src/main/java/com/acme/core/Engine.java",)
    }
    assert targets(resolver, "dotnet/Program.cs") == {"System": (), "Acme.Tools": ("dotnet/Acme.Tools/Clock.cs",)}
    assert targets(resolver, "scripts/lib/greeter.rb") == {"./formatter": ("scripts/lib/formatter.rb",)}
