"""Each server the hub starts gets a temporary directory of its own, removed when the server ends, and one a killed
hub left is removed by the next (lsp_hub/platform/server_temp.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from lsp_hub.platform import server_temp
from lsp_hub.platform.server_temp import PREFIX, ServerTemporaryDirectories
from tests.hub_fixtures import StartHub, start_events

pytestmark = pytest.mark.skipif(not server_temp.enabled(), reason="macOS: servers keep the user's own TMPDIR")

ONLY_A = {"alpha": {"extensions": ["alpha"], "language_ids": ["alpha"], "servers": ["fakeA"]}}


def _ended_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_server_directory_is_private_named_for_its_hub_and_named_in_the_environment(tmp_path: Path) -> None:
    directories = ServerTemporaryDirectories(tmp_path)
    made = directories.make()
    assert made is not None and made.parent == tmp_path
    assert made.name.startswith(f"{PREFIX}{os.getpid()}-")
    assert made.stat().st_mode & 0o777 == 0o700
    environment = directories.environment(made)
    assert set(environment.values()) == {str(made)}
    assert ("TEMP" in environment) if sys.platform == "win32" else ("TMPDIR" in environment)
    (made / "left-behind").mkdir()
    (made / "left-behind" / "file").write_text("x")
    directories.remove(made)
    assert not made.exists()
    assert directories.environment(None) == {}


def _aged(directory: Path, seconds: float = 3600.0) -> Path:
    old = time.time() - seconds
    os.utime(directory, (old, old))
    return directory


def _held_by_another_process(directory: Path) -> subprocess.Popen[str]:
    """A process that holds `directory` as a hub holds its servers' (Windows: whose pid is in its name)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import os, sys; from lsp_hub.platform.locks import try_lock; "
         "d = os.open(sys.argv[1], os.O_RDONLY); assert try_lock(d); print('held', flush=True); sys.stdin.read()",
         str(directory)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.skipif(sys.platform == "win32", reason="Windows cannot lock a directory: the pid in its name decides")
def test_the_sweep_removes_only_old_directories_nobody_holds(tmp_path: Path) -> None:
    ended = tmp_path / f"{PREFIX}{_ended_pid()}-abcdefgh"
    held = tmp_path / f"{PREFIX}{_ended_pid()}-held0000"  # a pid this namespace cannot see, say: the lock decides
    young = tmp_path / f"{PREFIX}{_ended_pid()}-young000"
    mine = tmp_path / f"{PREFIX}{os.getpid()}-abcdefgh"
    unrelated = tmp_path / "lsp-hub-server-notapid-x"
    other = tmp_path / "somebody-elses"
    for directory in (ended, held, young, mine, unrelated, other):
        directory.mkdir()
        (directory / "file").write_text("x")
    for directory in (ended, held, mine, unrelated, other):
        _aged(directory)
    target = tmp_path / "not-to-follow"
    target.mkdir()
    (target / "kept").write_text("x")
    linked = tmp_path / f"{PREFIX}{_ended_pid()}-symlinkd"
    linked.symlink_to(target, target_is_directory=True)
    holder = _held_by_another_process(held)
    try:
        removed = ServerTemporaryDirectories(tmp_path).sweep()
    finally:
        holder.communicate("")
    assert removed == [ended]
    assert all(path.exists() for path in (held, young, mine, unrelated, other, target / "kept", linked))
    assert ServerTemporaryDirectories(tmp_path).sweep() == [held]  # its holder has ended


def test_a_directory_made_here_is_held_until_removed(tmp_path: Path) -> None:
    directories = ServerTemporaryDirectories(tmp_path)
    made = directories.make()
    assert made is not None
    _aged(made)
    other_process = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; from lsp_hub.platform.server_temp import "
         "ServerTemporaryDirectories as S; print(len(S(Path(sys.argv[1])).sweep()))", str(tmp_path)],
        capture_output=True, text=True, check=True)
    assert other_process.stdout.strip() == "0"
    assert made.exists()
    directories.remove(made)
    assert not made.exists()


def test_making_one_sweeps_what_a_killed_hub_left_in_the_background(tmp_path: Path) -> None:
    left = tmp_path / f"{PREFIX}{_ended_pid()}-abcdefgh"
    left.mkdir()
    _aged(left)
    directories = ServerTemporaryDirectories(tmp_path)
    made = directories.make()
    assert made is not None
    for _ in range(200):  # the sweep runs in a thread of its own
        if not left.exists():
            break
        time.sleep(0.01)
    assert not left.exists()
    assert made.exists()
    directories.remove(made)


def test_no_directory_where_none_can_be_made(tmp_path: Path) -> None:
    assert ServerTemporaryDirectories(tmp_path / "missing").make() is None


async def _wait_gone(path: Path) -> None:
    for _ in range(200):
        if not path.exists():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} is still there: {sorted(p.name for p in path.iterdir())}")


async def test_a_server_runs_in_its_own_temporary_directory_removed_when_it_crashes(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"responses": {"textDocument/hover": {"crash": True}}}}, languages=ONLY_A)
    uri = hub.client.open(hub.file("t.alpha", "a\n"), "alpha")
    await hub.client.wait_for(lambda: start_events(hub.records, "fakeA"), what="fakeA started")
    first = Path(start_events(hub.records, "fakeA")[0]["tmpdir"])
    assert first.parent == Path(tempfile.gettempdir())
    assert first.name.startswith(f"{PREFIX}{hub.client.process.pid}-")
    assert first.is_dir()
    (first / "tscancellation-like").mkdir()
    with pytest.raises(Exception):  # noqa: B017 - the crash fails the request; its kind is another test's concern
        await hub.client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                         "position": {"line": 0, "character": 0}}, timeout=15)
    await _wait_gone(first)
    await hub.client.wait_for(lambda: len(start_events(hub.records, "fakeA")) == 2, what="fakeA restarted")
    second = Path(start_events(hub.records, "fakeA")[1]["tmpdir"])
    assert second != first and second.is_dir()
    await hub.client.stop()
    await _wait_gone(second)


async def test_a_tmpdir_the_configuration_sets_wins(start_hub: StartHub, tmp_path: Path) -> None:
    chosen = tmp_path / "chosen-tmp"
    chosen.mkdir()
    hub = await start_hub({"fakeA": {"_config": {"env": {"TMPDIR": str(chosen)}}}}, languages=ONLY_A)
    hub.client.open(hub.file("t.alpha", "a\n"), "alpha")
    await hub.client.wait_for(lambda: start_events(hub.records, "fakeA"), what="fakeA started")
    assert start_events(hub.records, "fakeA")[0]["tmpdir"] == str(chosen)


async def test_a_killed_hub_leaves_a_directory_the_next_hub_removes(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {}}, languages=ONLY_A)
    hub.client.open(hub.file("t.alpha", "a\n"), "alpha")
    await hub.client.wait_for(lambda: start_events(hub.records, "fakeA"), what="fakeA started")
    left = Path(start_events(hub.records, "fakeA")[0]["tmpdir"])
    hub.client.process.send_signal(signal.SIGKILL)
    await asyncio.wait_for(hub.client.process.wait(), 10)
    assert left.is_dir()  # nobody removed it: the hub was killed
    directories = ServerTemporaryDirectories()
    for _ in range(100):  # the server dies with the hub; the directory goes once nothing holds it
        if left in directories.sweep(min_age_seconds=0) or not left.exists():
            break
        await asyncio.sleep(0.1)
    assert not left.exists()


@pytest.mark.real_server
async def test_typescript_language_server_leaves_nothing_in_the_temporary_directory(  # type: ignore[no-untyped-def]
        tmp_path: Path, hub_at, require_binary) -> None:
    """typescript-language-server makes a directory for tsserver's cancellation files at every start and never
    removes it: it is made in the server's own directory now, and goes with it."""
    require_binary("typescript-language-server")
    project = tmp_path / "project"
    project.mkdir()
    (project / "tsconfig.json").write_text("{}\n")
    (project / "main.ts").write_text("export const answer = 42;\n")
    client = await hub_at(project)
    uri = client.open(project / "main.ts", "typescript")
    await client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 14}},
                         timeout=90)
    own = list(Path(tempfile.gettempdir()).glob(f"{PREFIX}{client.process.pid}-*"))
    assert len(own) == 1
    assert [entry for entry in own[0].iterdir() if entry.is_dir()]  # the server's cancellation directory, in it
    await client.stop()
    await _wait_gone(own[0])


async def test_a_server_killed_as_the_hub_leaves_leaves_no_directory(start_hub: StartHub) -> None:
    """A server that neither shuts down nor heeds SIGTERM is killed at the hub's exit (`kill_now`), which does not
    wait to see it end: its directory goes with the kill."""
    hub = await start_hub({"fakeA": {"responses": {"shutdown": {"hang": True}}, "ignore_sigterm": True,
                                     "ignore_exit": True}}, languages=ONLY_A)
    hub.client.open(hub.file("t.alpha", "a\n"), "alpha")
    await hub.client.wait_for(lambda: start_events(hub.records, "fakeA"), what="fakeA started")
    own = Path(start_events(hub.records, "fakeA")[0]["tmpdir"])
    assert own.is_dir()
    await hub.client.stop()
    assert not own.exists()
