"""What the git history adds to `lspHub.relevantFiles`, replayed on a repository's own multi-file commits.

The repository (by default this project's main checkout) is cloned into a temporary directory. For a sample of
its commits that changed between 2 and MAX_CHANGED source files that existed before them (spread evenly over the
commits that have at least MIN_HISTORY commits before them), the clone is checked out at the commit's parent, so
the index and the history are what they were before the commit. Relevance is asked with one of the commit's changed
files as the target (the first in path order that the index holds); the other files it changed, those that existed
before it, are the answer key: recall@10 is the share of them in the top 10, MRR the reciprocal rank of the first
of them (0 when none is in the top 10). The same question is asked without history (`historyCommits: 0`) and with
it (the default), on the same index, with three descriptions: the whole commit message, its subject line, and none
(the target alone). This project's messages are long and name the code they change, which leaves history less to
add than a terse "fix the bug" would.

    python bench/relevance_history.py [--repo /work/main] [--rev HEAD] [--commits 30] [--history-commits 300] [-v]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_hub.index import history, relevance
from lsp_hub.index.languages import language_for_path
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex

TOP_N = 10
MAX_CHANGED = 15
MIN_HISTORY = 20
MODES = ("message", "subject", "none")
MODE_NAMES = {"message": "whole message", "subject": "subject line", "none": "none"}


@dataclass(frozen=True)
class Sample:
    sha: str
    parent: str
    message: str
    changed: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    sample: Sample
    mode: str
    target: str
    expected: frozenset[str]
    recall_without: float
    recall_with: float
    rank_without: int | None
    rank_with: int | None


def git(repo: Path, *arguments: str) -> str:
    return subprocess.run(["git", *arguments], cwd=repo, check=True, capture_output=True, text=True).stdout


def candidate_commits(repo: Path) -> list[Sample]:
    """Commits other than merges, oldest first, each with the source files it changed that existed before it
    (modified or deleted; renames count as a delete and an add)."""
    log = git(repo, "log", "--no-merges", "--topo-order", "--reverse", "--no-renames", "--name-status",
              "--format=%x1e%H %P%x1f%B%x1f")
    samples = []
    for record in log.split("\x1e")[1:]:
        header, message, names = record.split("\x1f")
        sha, *parents = header.split()
        if len(parents) != 1:
            continue  # the root commit has no state before it
        changed = tuple(sorted(
            path for status, _, path in (line.partition("\t") for line in names.splitlines())
            if status in ("M", "D") and language_for_path(path) is not None
        ))
        samples.append(Sample(sha, parents[0], message.strip(), changed))
    return samples


def rank_of_first(ranked: list[str], expected: frozenset[str]) -> int | None:
    return next((position for position, path in enumerate(ranked, 1) if path in expected), None)


def describe(sample: Sample, mode: str) -> str:
    return {"message": sample.message, "subject": sample.message.split("\n", 1)[0], "none": ""}[mode]


def ranked(snapshot: Snapshot, description: str, target: str, history_commits: int) -> list[str]:
    result = relevance.relevant_files(snapshot, description, [target], TOP_N, history_commits)
    return [entry["path"] for entry in result["files"]]


def mean_reciprocal_rank(ranks: list[int | None]) -> float:
    return statistics.mean(1 / rank if rank else 0.0 for rank in ranks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repo", default="/work/main", help="a git repository with history (cloned, not touched)")
    parser.add_argument("--rev", default="HEAD", help="replay the commits up to this one (default HEAD)")
    parser.add_argument("--commits", type=int, default=30, help="how many commits to replay")
    parser.add_argument("--history-commits", type=int, default=history.DEFAULT_HISTORY_COMMITS)
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per commit (full message)")
    options = parser.parse_args()

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="relevance-history-") as temporary:
        clone = Path(temporary) / "repo"
        subprocess.run(["git", "clone", "-q", options.repo, str(clone)], check=True)
        git(clone, "checkout", "-q", "--detach", options.rev)
        head = git(clone, "rev-parse", "--short", "HEAD").strip()
        commits = candidate_commits(clone)
        eligible = [sample for position, sample in enumerate(commits) if position >= MIN_HISTORY
                    and 2 <= len(sample.changed) <= MAX_CHANGED]
        step = max(1, len(eligible) // max(1, options.commits))
        chosen = eligible[::step][: options.commits]
        print(f"repository {options.repo} at {head}: {len(commits)} commits, {len(eligible)} with 2-{MAX_CHANGED} "
              f"changed source files and at least {MIN_HISTORY} commits before them; replaying {len(chosen)}")

        index = WorkspaceIndex(clone, cache_dir=Path(temporary) / "cache")
        outcomes: list[Outcome] = []
        history_seconds: list[float] = []
        cached_seconds: list[float] = []
        for sample in chosen:
            git(clone, "checkout", "-q", "--detach", sample.parent)
            index.build()
            snapshot = index.snapshot()
            present = [path for path in sample.changed if path in snapshot.files]
            if len(present) < 2:
                continue  # the commit changed at most one file the index knew before it
            target, expected = present[0], frozenset(present[1:])
            before = time.perf_counter()
            read = history.read_history(clone, options.history_commits)
            history_seconds.append(time.perf_counter() - before)
            before = time.perf_counter()
            history.read_history(clone, options.history_commits)
            cached_seconds.append(time.perf_counter() - before)
            assert read.state == history.STATE_GIT, read.summary()
            for mode in MODES:
                description = describe(sample, mode)
                without = ranked(snapshot, description, target, 0)
                with_history = ranked(snapshot, description, target, options.history_commits)
                outcome = Outcome(
                    sample, mode, target, expected,
                    len(expected.intersection(without)) / len(expected),
                    len(expected.intersection(with_history)) / len(expected),
                    rank_of_first(without, expected), rank_of_first(with_history, expected),
                )
                outcomes.append(outcome)
                if options.verbose and mode == "message":
                    subject = sample.message.splitlines()[0][:60]
                    print(f"  {sample.sha[:9]} {len(expected):2d} expected  recall {outcome.recall_without:.2f} -> "
                          f"{outcome.recall_with:.2f}  first hit {outcome.rank_without} -> {outcome.rank_with}  "
                          f"{target}  {subject}")
        index.close()

    if not outcomes:
        print("no commit to replay")
        return 1
    replayed = [outcome for outcome in outcomes if outcome.mode == MODES[0]]
    print(f"{len(replayed)} commits, {sum(len(outcome.expected) for outcome in replayed)} other changed files to "
          f"find; target: the first changed file; top {TOP_N}")
    print(f"{'description':<16}{'recall@10 without':>18}{'with history':>14}{'MRR without':>13}{'with history':>14}"
          f"{'recall better/worse':>21}")
    for mode in MODES:
        of_mode = [outcome for outcome in outcomes if outcome.mode == mode]
        better = sum(outcome.recall_with > outcome.recall_without for outcome in of_mode)
        worse = sum(outcome.recall_with < outcome.recall_without for outcome in of_mode)
        print(f"{MODE_NAMES[mode]:<16}"
              f"{statistics.mean(outcome.recall_without for outcome in of_mode):>18.3f}"
              f"{statistics.mean(outcome.recall_with for outcome in of_mode):>14.3f}"
              f"{mean_reciprocal_rank([outcome.rank_without for outcome in of_mode]):>13.3f}"
              f"{mean_reciprocal_rank([outcome.rank_with for outcome in of_mode]):>14.3f}"
              f"{f'{better}/{worse}':>21}")
    print(f"git log of {options.history_commits} commits: median {statistics.median(history_seconds) * 1000:.0f} ms "
          f"(max {max(history_seconds) * 1000:.0f} ms); again on the same HEAD: median "
          f"{statistics.median(cached_seconds) * 1000:.2f} ms")
    print(f"total {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
