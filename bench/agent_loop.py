"""What an agent gets from `lsp-hub mcp`: a scripted write-check-fix loop through the official MCP SDK client, and
the size of the `lsp` tool's answers beside the raw LSP JSON of the same answers, in one run (issue 9).

- loop: one MCP session (`mcp.ClientSession` over `stdio_client`) with `lsp-hub mcp --no-daemon --root` on a copy of
  `examples/sample`. Each round `write_file`s a new Python file with a type error (basedpyright) and an unused
  variable (ruff F841), checks that the answer says written, complete, nothing pending and holds both servers'
  findings, then `edit_file`s the fix and checks the answer says no issues (complete). The wall time of each tool
  call, as the client sees it, is a verified write: the text on disk and every server's verdict on it. One round
  first is not counted (the hub and its servers start). Beside it: what an agent does today, write the file and
  sleep a fixed 3 s (stated, not slept: bench/agent_latency.py measures what such a sleep finds).
- dependents: a signature change used from two other files (`app/sig_lib.py`'s `rate`, called in `app/sig_a.py` and
  `app/sig_b.py`), then its revert, as `edit_file` calls: in one MCP session with the dependents checked (the
  default), and in another with `[hub] dependents_limit = 0`, alternating, where the agent then asks
  `lsp diagnostics` of each dependent itself. Each broken write must name both dependents' new errors; each
  revert, none.
- answer size: the `lsp` tool's text answers (what a model reads) for hover, references and diagnostics, in
  tokens (characters / 4), beside the raw LSP JSON results of the same questions (textDocument/hover,
  textDocument/references, the lspHub.diagnostics command), asked of a hub of its own over stdio (`HubClient`).

Everything runs in a temporary directory (removed on the way out, Ctrl-C and errors included), with the MCP
server's and the hub's language servers found on PATH with this checkout's .venv/bin and .tools/npm first, as
scripts/env.sh puts them. About 20 s on 2 cores; no new round starts after --max-seconds (90).

    python bench/agent_loop.py [--rounds 20] [--max-seconds 90] [--dependent-rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import math
import os
import shutil
import signal
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
NEEDED = ("mcp", "orjson")  # the MCP SDK, and the hub's own dependencies
if __name__ == "__main__" and (absent := [name for name in NEEDED if importlib.util.find_spec(name) is None]):
    sys.exit(f"agent_loop: {' and '.join(absent)} not installed for {sys.executable}; run this with the project's "
             ".venv/bin/python (`. scripts/env.sh` puts it first on PATH)")

from agent_latency import SLEEP_SECONDS, World, interrupted, ms, note, percentile, row  # noqa: E402

from lsp_hub.transport.rawclient import HubClient, position_of  # noqa: E402

if TYPE_CHECKING:
    from mcp import ClientSession

PYTHON_SERVERS = {"basedpyright": "basedpyright-langserver", "ruff": "ruff"}
HOVER = ("app/service.py", 16, 66)  # total_value(...) in report(): basedpyright answers with its signature
REFERENCES_SYMBOL = "total_value"  # defined in app/models.py, used in three other places
DIAGNOSED = "app/broken.py"  # an error and a hint from basedpyright, a warning from ruff
REQUEST_TIMEOUT = 60.0


def broken_text(number: int) -> str:
    # basedpyright: reportReturnType (its message quotes 'x_N'); ruff F841: `unused_N` is never used.
    return f'def loop_{number}() -> int:\n    unused_{number} = 1\n    return "x_{number}"\n'


def fix(number: int) -> tuple[str, str]:
    """edit_file's (old_text, new_text): both findings gone."""
    return f'    unused_{number} = 1\n    return "x_{number}"\n', f"    return {number}\n"


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# ============================================================================================= the loop
@dataclass
class Loop:
    broken: list[float] = field(default_factory=list)
    fixed: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    rounds: int = 0


def unwritten_problem(result: Any) -> str | None:
    """Why a write's answer is not a complete, written one, else None."""
    if result.is_error:
        return "is_error"
    data = result.structured_content or {}
    if not (data.get("written") and data.get("complete")) or data.get("pending"):
        return (f"written={data.get('written')} complete={data.get('complete')} "
                f"pending={data.get('pending')}")
    return None


def broken_problem(result: Any, number: int) -> str | None:
    """Why the broken write's answer is not the verified answer expected, else None."""
    if (problem := unwritten_problem(result)) is not None:
        return problem
    data = result.structured_content or {}
    diagnostics = data.get("diagnostics") or []
    pyright = any("pyright" in str(d.get("source", "")).lower() and f"'x_{number}'" in str(d.get("message", ""))
                  for d in diagnostics)
    ruff = any("ruff" in str(d.get("source", "")).lower() and f"unused_{number}" in str(d.get("message", ""))
               for d in diagnostics)
    if not (pyright and ruff):
        return f"findings: basedpyright {'yes' if pyright else 'NO'}, ruff {'yes' if ruff else 'NO'}"
    return None


def fixed_problem(result: Any) -> str | None:
    if (problem := unwritten_problem(result)) is not None:
        return problem
    data = result.structured_content or {}
    text = result.content[0].text if result.content else ""
    if data.get("diagnostics") or "\nno issues" not in text:
        return f"{len(data.get('diagnostics') or [])} diagnostics left"
    return None


async def timed_call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await session.call_tool(tool, arguments, read_timeout_seconds=REQUEST_TIMEOUT)
    return time.perf_counter() - started, result


async def one_round(session: ClientSession, number: int, loop: Loop | None) -> tuple[float, float]:
    """write_file broken, edit_file the fix; times of verified writes go into `loop` (None: the warm-up)."""
    path = f"app/loop_{number}.py"
    seconds_broken, result = await timed_call(session, "write_file", {"path": path, "content": broken_text(number)})
    problem = broken_problem(result, number)
    record(loop, loop.broken if loop else None, seconds_broken, problem, f"write_file {path} (broken)", result)
    old, new = fix(number)
    seconds_fixed, result = await timed_call(session, "edit_file", {"path": path, "old_text": old, "new_text": new})
    record(loop, loop.fixed if loop else None, seconds_fixed, fixed_problem(result), f"edit_file {path} (fix)",
           result)
    return seconds_broken, seconds_fixed


def record(loop: Loop | None, column: list[float] | None, seconds: float, problem: str | None, what: str,
           result: Any) -> None:
    if problem is None:
        if column is not None:
            column.append(seconds)
        return
    text = result.content[0].text if result.content else "(no content)"
    line = f"{what}: {problem} after {ms(seconds)}; the answer: {text!r}"
    if loop is not None:
        loop.failures.append(line)
    print(f"  NOT VERIFIED: {line[:600]}")


async def ask_lsp(session: ClientSession) -> dict[str, Any]:
    """The lsp tool's answers for the three questions: action -> CallToolResult."""
    file, line, column = HOVER
    questions = {
        "hover": {"action": "hover", "file": file, "line": line, "column": column},
        "references": {"action": "references", "symbol": REFERENCES_SYMBOL},
        "diagnostics": {"action": "diagnostics", "file": DIAGNOSED},
    }
    answers = {}
    for action, arguments in questions.items():
        answers[action] = await session.call_tool("lsp", arguments, read_timeout_seconds=REQUEST_TIMEOUT)
    return answers


async def mcp_session(world: World, rounds: int, deadline: float) -> tuple[Loop, dict[str, Any], dict[str, float]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "lsp_hub", "mcp", "--no-daemon", "--root", str(world.sample)],
        env=world.env, cwd=str(world.sample))
    loop = Loop()
    phases: dict[str, float] = {}
    log_path = world.directory / "mcp-stderr.log"
    with log_path.open("w") as errlog:
        started = time.perf_counter()
        try:
            async with (stdio_client(params, errlog=errlog) as (read, write),
                        ClientSession(read, write, read_timeout_seconds=REQUEST_TIMEOUT) as session):
                await session.initialize()
                phases["initialize"] = time.perf_counter() - started
                phases["warm-up broken"], phases["warm-up fix"] = await one_round(session, 0, None)
                for number in range(1, rounds + 1):
                    if time.monotonic() > deadline:
                        print(f"  (time bound reached: stopped after {loop.rounds} rounds)")
                        break
                    await one_round(session, number, loop)
                    loop.rounds += 1
                answers = await ask_lsp(session)
                closing = time.perf_counter()
        finally:
            errlog.flush()
            stderr = log_path.read_text(errors="replace").strip()
            if stderr:
                print("  the MCP server's stderr:")
                for line in stderr.splitlines()[-20:]:
                    print(f"    {line}")
        phases["close"] = time.perf_counter() - closing
    return loop, answers, phases


def report_loop(loop: Loop, phases: dict[str, float]) -> None:
    print(f"  MCP server start + initialize {ms(phases['initialize'])}; warm-up round (hub and servers start): "
          f"broken write {ms(phases['warm-up broken'])}, fix {ms(phases['warm-up fix'])}; "
          f"session close {ms(phases['close'])}")
    row("", "write_file broken", "edit_file fix", f"write + sleep {SLEEP_SECONDS:g} s")
    for label, fraction in (("median", None), ("p95", 0.95)):
        cells = [ms(statistics.median(values) if fraction is None else percentile(values, fraction))
                 if values else "-" for values in (loop.broken, loop.fixed)]
        row(label, *cells, ms(SLEEP_SECONDS))
    row("min - max", *(f"{min(values) * 1000:.0f} - {max(values) * 1000:.0f} ms" if values else "-"
                       for values in (loop.broken, loop.fixed)), "")
    row("verified", f"{len(loop.broken)}/{loop.rounds}", f"{len(loop.fixed)}/{loop.rounds}", "not known")
    row(f"sum over {loop.rounds} rounds", f"{sum(loop.broken):.1f} s", f"{sum(loop.fixed):.1f} s",
        f"{2 * loop.rounds * SLEEP_SECONDS:.0f} s (both)")
    note("Wall time of each tools/call as the MCP client sees it, verified writes only: the file is on disk and "
         "the answer is complete (basedpyright and ruff both reported on that text, nothing pending); the broken "
         "write's answer holds basedpyright's return-type error and ruff's F841, the fix's says 'no issues'. "
         f"The sleeping agent's figure is the sleep alone, stated: it still has to ask for the diagnostics after "
         f"it, and bench/agent_latency.py shows how often a {SLEEP_SECONDS:g} s sleep finds both servers' findings.")


# ============================================================================================= dependents
SIG_LIB = "def rate(amount: int) -> int:\n    return amount * 2\n"
SIG_USERS = {"app/sig_a.py": "from app.sig_lib import rate\n\n\ndef a() -> int:\n    return rate(1)\n",
             "app/sig_b.py": "from app import sig_lib\n\n\ndef b() -> int:\n    return sig_lib.rate(2)\n"}
SIG_OLD, SIG_NEW = "def rate(amount: int)", "def rate(amount: int, factor: int)"


@dataclass
class DependentTimes:
    with_dependents: list[float] = field(default_factory=list)  # the write, dependents checked in it
    without: list[float] = field(default_factory=list)  # the write alone ([hub] dependents_limit = 0)
    follow_up: list[float] = field(default_factory=list)  # the write alone plus `lsp diagnostics` per dependent
    failures: list[str] = field(default_factory=list)


async def dependents_rounds(world: World, rounds: int, deadline: float) -> DependentTimes:
    """Signature change and revert, alternating a session that checks dependents with one that does not."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    (world.sample / "app" / "sig_lib.py").write_text(SIG_LIB)
    for name, text in SIG_USERS.items():
        (world.sample / name).write_text(text)
    off = world.directory / "no-dependents.toml"
    off.write_text("[hub]\ndependents_limit = 0\n")
    times = DependentTimes()
    base = ["-m", "lsp_hub", "mcp", "--no-daemon", "--root", str(world.sample)]
    params = [StdioServerParameters(command=sys.executable, args=base, env=world.env, cwd=str(world.sample)),
              StdioServerParameters(command=sys.executable, args=[*base, "--config", str(off)], env=world.env,
                                    cwd=str(world.sample))]
    with (world.directory / "dependents-stderr.log").open("w") as errlog:
        async with (stdio_client(params[0], errlog=errlog) as (read_a, write_a),
                    ClientSession(read_a, write_a, read_timeout_seconds=REQUEST_TIMEOUT) as checking,
                    stdio_client(params[1], errlog=errlog) as (read_b, write_b),
                    ClientSession(read_b, write_b, read_timeout_seconds=REQUEST_TIMEOUT) as plain):
            await checking.initialize()
            await plain.initialize()
            for number in range(rounds + 1):  # the first pair warms both sessions up and is not counted
                if time.monotonic() > deadline:
                    print(f"  (time bound reached: stopped after {number - 1} rounds)")
                    break
                counted = number > 0
                for session, checks in ((checking, True), (plain, False)) if number % 2 else ((plain, False),
                                                                                             (checking, True)):
                    for old, new, broken in ((SIG_OLD, SIG_NEW, True), (SIG_NEW, SIG_OLD, False)):
                        seconds, result = await timed_call(session, "edit_file", {
                            "path": "app/sig_lib.py", "old_text": old, "new_text": new})
                        problem = None if not result.is_error else result.content[0].text
                        if checks and problem is None:
                            found = sorted({d["path"] for d in (result.structured_content or {}).get(
                                "dependents", {}).get("new", []) if d.get("severity") == "error"})
                            if found != (sorted(SIG_USERS) if broken else []):
                                problem = f"dependents' new errors {found}"
                        follow = 0.0
                        if not checks and problem is None:
                            for name in SIG_USERS:
                                asked, answer = await timed_call(session, "lsp", {"action": "diagnostics",
                                                                                  "file": name})
                                follow += asked
                                errors = [d for d in (answer.structured_content or {}).get("diagnostics", [])
                                          if d.get("severity") == "error"]
                                if bool(errors) != broken:
                                    problem = f"{name}: {len(errors)} errors after {'change' if broken else 'revert'}"
                        if problem is not None:
                            times.failures.append(f"{'checking' if checks else 'plain'} "
                                                  f"{'change' if broken else 'revert'}: {problem[:300]}")
                            print(f"  NOT VERIFIED: {times.failures[-1]}")
                        elif counted and checks:
                            times.with_dependents.append(seconds)
                        elif counted:
                            times.without.append(seconds)
                            times.follow_up.append(seconds + follow)
    return times


def report_dependents(times: DependentTimes) -> None:
    row("", "with dependents", "write alone", "alone + 2 asks")
    columns = (times.with_dependents, times.without, times.follow_up)
    for label, fraction in (("median", None), ("p95", 0.95)):
        row(label, *(ms(statistics.median(values) if fraction is None else percentile(values, fraction))
                     if values else "-" for values in columns))
    row("writes", *(str(len(values)) for values in columns))
    if times.with_dependents and times.without:
        added = statistics.median(times.with_dependents) - statistics.median(times.without)
        note(f"Dependents add {ms(added)} at the median to a verified edit_file (target: at most 1.5 s); the agent "
             "that checks them itself pays the last column, and learns of the broken callers only if it knows "
             "which files to ask about. Each change must name both dependents' new errors, each revert none.")


# ============================================================================================= raw LSP
async def raw_answers(world: World) -> dict[str, Any]:
    """The JSON-RPC results of the same three questions, from a hub of its own over stdio."""
    try:
        return await ask_raw(await world.client(), world)
    finally:
        await world.stop_clients()


async def ask_raw(client: HubClient, world: World) -> dict[str, Any]:
    command = "workspace/executeCommand"
    file, line, column = HOVER
    service = world.sample / file
    uri = client.open(service, "python")
    # basedpyright answers project-wide questions from the open files only until its first report on a file
    # (as `lsp-hub query` does, the answer is waited for first).
    await client.request(command, {"command": "lspHub.diagnostics", "arguments": [{"uri": uri, "timeoutMs": 30000}]},
                         timeout=REQUEST_TIMEOUT)
    text = service.read_text()
    line_text = text.split("\n")[line - 1]
    position = {"line": line - 1, "character": len(line_text[:column - 1].encode("utf-16-le")) // 2}
    hover = await client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": position},
                                 timeout=REQUEST_TIMEOUT)
    models = world.sample / "app/models.py"
    models_uri = client.open(models, "python")
    definition = position_of(models.read_text(), f"def {REFERENCES_SYMBOL}", len("def "))
    references = await client.request("textDocument/references", {
        "textDocument": {"uri": models_uri}, "position": definition, "context": {"includeDeclaration": True}},
        timeout=REQUEST_TIMEOUT)
    broken_uri = client.open(world.sample / DIAGNOSED, "python")
    diagnostics = await client.request(command, {"command": "lspHub.diagnostics",
                                                 "arguments": [{"uri": broken_uri, "timeoutMs": 30000}]},
                                       timeout=REQUEST_TIMEOUT)
    return {"hover": hover, "references": references, "diagnostics": diagnostics}


def same_answer(action: str, mcp: Any, raw: Any) -> str:
    """Whether both sides answered the same thing, by a count or the text."""
    text = mcp.content[0].text if mcp.content else ""
    data = mcp.structured_content or {}
    if mcp.is_error:
        return "MCP error"
    if action == "hover":
        value = str(((raw or {}).get("contents") or {}).get("value", "")).strip()
        return "yes" if value and value in text else "NO (text differs)"
    if action == "references":
        ours, theirs = len(data.get("locations") or []), len(raw or [])
        return f"yes ({ours})" if ours == theirs else f"NO ({ours} vs {theirs})"
    ours, theirs = len(data.get("diagnostics") or []), len((raw or {}).get("diagnostics") or [])
    complete = bool(data.get("complete")) and bool((raw or {}).get("complete"))
    return (f"yes ({ours})" if ours == theirs else f"NO ({ours} vs {theirs})") + ("" if complete else ", incomplete")


def report_sizes(answers: dict[str, Any], raw: dict[str, Any]) -> None:
    def table_row(*cells: str) -> None:
        print(f"  {cells[0]:<14}" + "".join(f"{cell:>{width}}" for cell, width in zip(cells[1:5], (17, 21, 8, 25),
                                                                                       strict=True))
              + f"   {cells[5]}")

    table_row("action", "MCP text tokens", "raw LSP JSON tokens", "ratio", "(MCP structuredContent)", "same answer")
    for action in ("hover", "references", "diagnostics"):
        mcp = answers[action]
        text = mcp.content[0].text if mcp.content else ""
        ours, theirs = tokens(text), tokens(compact(raw[action]))
        structured = tokens(compact(mcp.structured_content)) if mcp.structured_content is not None else 0
        cells = (action, str(ours), str(theirs), f"{theirs / ours:.1f}x" if ours else "-", str(structured),
                 same_answer(action, mcp, raw[action]))
        table_row(*cells)
    file, line, column = HOVER
    note(f"Tokens are characters / 4, rounded up. MCP text: the lsp tool's content[0].text (hover {file}:{line}:"
         f"{column}, references symbol={REFERENCES_SYMBOL}, diagnostics {DIAGNOSED}); raw: the JSON-RPC result, "
         "compact JSON, of textDocument/hover, textDocument/references (includeDeclaration, at the definition) and "
         "workspace/executeCommand lspHub.diagnostics, from a hub of its own. The structuredContent column is the "
         "JSON the same MCP answer also carries (paths absolute), for clients that show it to the model. Ratio: "
         "raw / MCP text.")


# ============================================================================================= main
def missing_servers(path: str) -> list[str]:
    return [f"{name} ({binary})" for name, binary in PYTHON_SERVERS.items() if shutil.which(binary, path=path) is None]


async def run(world: World, options: argparse.Namespace) -> int:
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print()
    print(f"loop: `lsp-hub mcp --no-daemon` through the MCP SDK client, {options.rounds} rounds of write_file "
          "(a type error and an unused variable) then edit_file (the fix), each answer checked")
    loop, answers, phases = await mcp_session(world, options.rounds, time.monotonic() + options.max_seconds)
    report_loop(loop, phases)
    print("dependents: a signature change used from two other files and its revert (edit_file), checked by the "
          "write or asked after it")
    times = await dependents_rounds(world, options.dependent_rounds, time.monotonic() + options.max_seconds)
    report_dependents(times)
    print("answer size: the MCP lsp tool's text beside the raw LSP JSON of the same answer")
    report_sizes(answers, await raw_answers(world))
    if times.failures:
        print(f"agent_loop: {len(times.failures)} dependents writes were not verified (see above)")
        return 1
    if loop.failures or not loop.rounds:
        print(f"agent_loop: {len(loop.failures)} of {2 * loop.rounds} writes were not verified (see above)")
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20, help="counted write/fix rounds (default 20)")
    parser.add_argument("--max-seconds", type=float, default=90,
                        help="start no new round after this long (default 90)")
    parser.add_argument("--dependent-rounds", type=int, default=10,
                        help="counted signature change/revert rounds per session (default 10)")
    options = parser.parse_args()
    world = World(deadline=math.inf)
    try:
        extra = [str(ROOT / ".venv" / "bin"), str(ROOT / ".tools" / "npm" / "node_modules" / ".bin")]
        world.env["PATH"] = os.pathsep.join([*extra, world.env.get("PATH", os.defpath)])
        world.env["TMPDIR"] = str(world.directory)  # the MCP server's socket directory, the servers' files
        missing = missing_servers(world.env["PATH"])
        if missing:
            print(f"agent_loop: not found on PATH: {', '.join(missing)}; install them with scripts/setup.sh",
                  file=sys.stderr)
            return 2
        signal.signal(signal.SIGTERM, interrupted)  # as Ctrl-C: the temporary directory is removed
        try:
            return asyncio.run(run(world, options))
        except KeyboardInterrupt:
            print("interrupted: stopping the MCP server and hub this run started", file=sys.stderr)
            return 130
    finally:
        world.remove()


if __name__ == "__main__":
    raise SystemExit(main())
