"""Every module of lsp_hub imports on a system without Linux's own facilities (macOS lacks some, Windows all):
a fresh interpreter makes fcntl, termios, resource, grp and pwd unimportable and takes os.pidfd_open,
socket.SO_PEERCRED and socket.AF_UNIX away, then imports each module, naming any that raises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent

# Run in a fresh interpreter: argv[1] is the package whose modules are imported (its parent on sys.path).
PROBE = """
import importlib, os, pkgutil, socket, sys

# Dependencies that choose their POSIX branch by sys.platform (the MCP SDK's stdio imports fcntl unless on
# win32) are loaded first, as the real system would load them; only lsp_hub's own imports are under test.
import mcp.server.stdio

for name in ("fcntl", "termios", "resource", "grp", "pwd"):
    sys.modules[name] = None  # `import fcntl` now raises ImportError, as on Windows
for owner, facility in ((os, "pidfd_open"), (socket, "SO_PEERCRED"), (socket, "AF_UNIX")):
    if hasattr(owner, facility):
        delattr(owner, facility)

package = importlib.import_module(sys.argv[1])
failures = []
def on_package_error(name):
    failures.append(f"{name}: {sys.exc_info()[0].__name__}: {sys.exc_info()[1]}")
for module in pkgutil.walk_packages(package.__path__, package.__name__ + ".", onerror=on_package_error):
    if module.name.rsplit(".", 1)[-1] == "__main__":
        continue  # running it is what importing it does
    try:
        importlib.import_module(module.name)
    except BaseException as error:
        failures.append(f"{module.name}: {type(error).__name__}: {error}")
print("\\n".join(sorted(set(failures))))
"""


def modules_failing_without_linux_facilities(package: str, parent: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, package],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=parent,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(parent), str(PROJECT)])},
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line.strip()]


def test_every_module_imports_without_the_linux_only_facilities() -> None:
    failing = modules_failing_without_linux_facilities("lsp_hub", PROJECT)
    assert failing == [], "these modules need a Linux-only facility at import time:\n" + "\n".join(failing)


def test_the_probe_names_a_module_that_needs_a_linux_facility(tmp_path: Path) -> None:
    package = tmp_path / "planted"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "fine.py").write_text("import os\n")
    (package / "inner" / "__init__.py").write_text("")
    (package / "inner" / "locking.py").write_text("import fcntl\n")
    (package / "listening.py").write_text("import socket\nFAMILY = socket.AF_UNIX\n")
    (package / "watching.py").write_text("import os\nopen_pid = os.pidfd_open\n")
    failing = modules_failing_without_linux_facilities("planted", tmp_path)
    assert [line.split(":")[0] for line in failing] == [
        "planted.inner.locking",
        "planted.listening",
        "planted.watching",
    ]
