"""Children die with the hub however it ends, by each mechanism this machine can run: PR_SET_PDEATHSIG, and the
warden that stands in for it where prctl does not exist (macOS), tested here by taking prctl away; and index
workers that watch their owner without a pidfd."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lsp_hub.platform import children
from lsp_hub.transport.rawclient import HubClient
from tests.hub_fixtures import FAKE_LANGUAGES, pids_alive
from tests.hubclient import REPO_ROOT, fake_server_config

# A stand-in for the hub: starts `sleep` as the hub starts its servers, says the child's pid, and waits to be killed.
FAKE_HUB = textwrap.dedent("""
    import subprocess, sys, time
    from lsp_hub.platform import children
    if sys.argv[1] == "without-prctl":
        children.PRCTL = None
    child = subprocess.Popen(["sleep", "300"], **children.CHILDREN.launch_options())
    children.CHILDREN.adopt(child.pid)
    print(child.pid, children.CHILDREN.mechanism, children.CHILDREN.warden.pid, flush=True)
    time.sleep(300)
""")


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while pids_alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids_alive(pids)


@pytest.mark.parametrize("facility", ["with-prctl", "without-prctl"])
def test_a_child_dies_with_a_hub_killed_by_sigkill(facility: str) -> None:
    if facility == "with-prctl" and children.PRCTL is None:
        pytest.skip("prctl is Linux's")
    hub = subprocess.Popen([sys.executable, "-c", FAKE_HUB, facility], stdout=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert hub.stdout is not None
    child_pid, mechanism, warden_pid = hub.stdout.readline().split()
    assert mechanism == ("pdeathsig" if facility == "with-prctl" else "warden")
    assert (warden_pid == "None") == (facility == "with-prctl")
    child = int(child_pid)
    try:
        assert pids_alive([child]) == [child]
        time.sleep(0.2)  # the warden has read the child's group
        hub.kill()
        hub.wait()
        assert _wait_gone([child], 10.0) == []
        if warden_pid != "None":
            assert _wait_gone([int(warden_pid)], 10.0) == []  # its work done, the warden leaves too
    finally:
        if pids_alive([child]):
            os.kill(child, signal.SIGKILL)


def test_the_warden_forgets_a_child_that_ended(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"+4242\n+4343\n-4242\n+1\n+garbage\n")
    os.close(write_end)
    from lsp_hub.platform.warden import watch

    assert watch(read_end) == {4343}  # the ended one forgotten, and never a group 1 or a line that is no pid
    os.close(read_end)


@pytest.mark.asyncio
async def test_without_prctl_no_server_outlives_a_killed_hub(tmp_path: Path) -> None:
    """The whole hub, its prctl taken away as on macOS: its language servers end with it."""
    config = tmp_path / "hub.toml"
    # Servers that outstay their stdin, as some do: only the warden can end them.
    lingering = {"ignore_stdin_close": True}
    config.write_text(fake_server_config({"fakeA": lingering, "fakeB": lingering}, FAKE_LANGUAGES))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    launch = ("import sys; from lsp_hub.platform import children; children.PRCTL = None; "
              "from lsp_hub.cli import main; raise SystemExit(main(sys.argv[1:]))")
    client = HubClient()
    await client.start(command=[sys.executable, "-c", launch, "--config", str(config)], cwd=str(workspace),
                       env={"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    try:
        await client.initialize(workspace)
        path = workspace / "a.alpha"
        path.write_text("x\n")
        uri = client.open(path, "alpha")
        await client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                    "position": {"line": 0, "character": 0}})
        servers = [server["pid"] for server in (await client.status())["servers"]]
        assert servers and pids_alive(servers) == servers
        client.process.send_signal(signal.SIGKILL)
        assert await asyncio.to_thread(_wait_gone, servers, 10.0) == []
    finally:
        for pid in pids_alive(servers if "servers" in locals() else []):
            os.kill(pid, signal.SIGKILL)
        await asyncio.wait_for(client.process.wait(), 10)
        await client.stop()


def test_an_index_worker_without_a_pidfd_still_leaves_with_its_owner() -> None:
    owner = subprocess.Popen(["sleep", "300"])
    watcher = subprocess.Popen([sys.executable, "-c", (
        "import os, sys\n"
        "del os.pidfd_open  # as on macOS, or a kernel before 5.3\n"
        "from lsp_hub.index.parse_worker import _exit_when_gone\n"
        "_exit_when_gone(int(sys.argv[1]))\n"), str(owner.pid)], env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        time.sleep(0.5)
        assert watcher.poll() is None  # the owner lives: the worker stays
        owner.kill()
        owner.wait()
        assert watcher.wait(timeout=10) == 0
    finally:
        for process in (owner, watcher):
            if process.poll() is None:
                process.kill()
