"""`lspHub.relevantFiles` replayed on other people's multi-file commits (issue 27, point 1), beside aider's repo map
and two baselines.

For each git repository given (a working clone or a bare git directory, such as the `fetch` tool's
/work/.mirror/owner+name/repo; never modified except for a temporary linked worktree, removed at the end), commits
are chosen as `cochange_commits.py` says: non-merge, 2-8 changed source files, not mechanical, not only renames.
`--commits` of them are spread evenly over the newest `--span` qualifying ones. Each commit's parent is checked out
in the temporary worktree (so the tree and the history are what they were before it), indexed (one index per
repository, brought up to date per parent; unchanged files come from the shared records in `--cache-dir`), and
asked which files go with the target, the non-test file the commit changed most. The key is the other source files
the commit modified or deleted that the index holds. Rankings compared, each cut at 10:
- ours:target   `relevance.relevant_files` with the target and no description, default weights;
- ours:subject  the same with the commit's subject line as the description;
- ours:described  the subject line alone, no target (an agent's first question): its key is the target and the
                rest of the key, every source file the commit changed;
- ours:repo     ours:target with the weights the hub would fit to the repository (`relevance_tuning`), fitted
                once, at the parent of the first held-out commit, from the commits before it (held-out half only);
- same-dir      files nearest the target in the directory tree, then by the length of the name they share;
- history       files ranked by how often and how recently they changed with the target in the parent's last
                `--history-commits` commits (`history.co_changes`, the signal relevance uses), nothing else;
- aider:target / aider:subject   aider's `RepoMap.get_ranked_tags` with the target as the chat file (and the
                subject as the message), files by first appearance (`aider_rank.py`, run by `--aider-python`).
Scores: recall@5 and recall@10 (share of the key in the top 5 / 10, averaged over commits) and MRR (reciprocal rank
of the first key file in the top 10, 0 when none). Commits are split by date: the older half is for tuning, the
newer half is held out; the held-out table is the one to quote. Pooled rows average over every commit of every
repository. `-v` prints each commit and each key file ours:target or ours:subject misses, with its kind (twin,
test, example/docs, other package, same directory, same package) and its rank in each ranking up to 50; the
summary counts the kinds.

    python bench/relevance_cochange.py /work/.mirror/pallets+flask/repo /work/.mirror/honojs+hono/repo \\
        /work/.mirror/gin-gonic+gin/repo /work/.mirror/BurntSushi+ripgrep/repo [--commits 40] [--span 400] \\
        [--aider-python /work/aider-env/bin/python | --no-aider] [-v]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench's helpers, also when imported by a test

from cochange_commits import (
    MIN_COMMITS_BEFORE,
    Query,
    candidate_queries,
    manifest_directories,
    miss_kind,
    same_directory_ranking,
    spread,
)
from relevance_history import git, mean_reciprocal_rank, rank_of_first

from lsp_hub.index import history, relevance, relevance_tuning
from lsp_hub.index.relevance_weights import DEFAULTS, Weights
from lsp_hub.index.workspace import WorkspaceIndex

TOP_N = 10
DEEP = 50  # rankings are kept this deep so a miss can say how far down it was
SYSTEMS = (
    "ours:target",
    "ours:subject",
    "ours:described",
    "ours:repo",
    "same-dir",
    "history",
    "aider:target",
    "aider:subject",
)
OURS = ("ours:target", "ours:subject")
SPLITS = ("held-out", "tuning")
DEFAULT_CACHE = Path.home() / ".cache" / "lsp-hub-bench" / "relevance-cochange"
DEFAULT_AIDER_PYTHON = Path("/work/aider-env/bin/python")


@dataclass
class Outcome:
    repo: str
    split: str
    query: Query
    key: tuple[str, ...]
    rankings: dict[str, list[str] | None]  # None: that ranking could not be had (aider absent or failed)
    kinds: dict[str, str] = field(default_factory=dict)  # key file -> what it is to the target


def recall(ranked: list[str], key: tuple[str, ...], cut: int) -> float:
    return len(set(key).intersection(ranked[:cut])) / len(key)


class AiderRanker:
    """aider_rank.py in the bench-only environment, one process per repository worktree."""

    def __init__(self, python: Path, root: Path, cache_dir: Path) -> None:
        script = Path(__file__).resolve().parent / "aider_rank.py"
        self.process = subprocess.Popen(
            [str(python), str(script), str(cache_dir)],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            # aider lists files without tags in set order: a fixed hash seed makes its ranking the same every run
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        self.errors: Counter[str] = Counter()

    def rank(self, root: Path, files: list[str], target: str, text: str) -> list[str] | None:
        assert self.process.stdin is not None and self.process.stdout is not None
        request = {"root": str(root), "files": files, "chat": [target], "text": text}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            self.errors["aider_rank.py exited"] += 1
            return None
        answer = json.loads(line)
        if "error" in answer:
            self.errors[answer["error"][:120]] += 1
            return None
        return list(answer["ranked"])

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


@contextmanager
def temporary_worktree(repo: Path, commit: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="relevance-cochange-") as temporary:
        worktree = Path(temporary) / "tree"
        git(repo, "worktree", "add", "-q", "--detach", str(worktree), commit)
        try:
            yield worktree
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=repo, capture_output=True)
            subprocess.run(["git", "worktree", "prune"], cwd=repo, capture_output=True)


def history_ranking(root: Path, target: str, known: frozenset[str], commits: int) -> list[str]:
    read = history.read_history(root, commits)
    changes = history.co_changes(read, [target], known)
    return [
        change.path for change in sorted(changes, key=lambda change: (-change.strength, -change.together, change.path))
    ][:DEEP]


def repository_weights(root: Path, snapshot: object) -> Weights:
    """The weights the hub's idle-time tuning fits on this checkout (from its history only), without keeping them
    (ours:target must go on with the defaults)."""
    read = history.read_history(root, relevance_tuning.REPLAY_COMMITS + history.DEFAULT_HISTORY_COMMITS, timeout=60)
    changes = history.read_changes(root, relevance_tuning.REPLAY_COMMITS, timeout=60)
    queries = relevance_tuning.replay(snapshot, read, float("inf"), changes)  # type: ignore[arg-type]
    return relevance_tuning.fit_repository(queries)


def replay_repository(repo: Path, options: argparse.Namespace, aider_python: Path | None) -> list[Outcome]:
    name = repo.parent.name if repo.name in ("repo", ".git") else repo.name
    started = time.perf_counter()
    total, queries = candidate_queries(repo, options.min_commits_before)
    chosen = spread(queries, options.commits, options.span)  # oldest first, in git's date order
    print(
        f"{name}: {total} non-merge commits, {len(queries)} qualify; replaying {len(chosen)} of the newest "
        f"{min(len(queries), options.span)}",
        flush=True,
    )
    if not chosen:
        return []
    held_out = {query.sha for query in chosen[len(chosen) // 2 :]}
    outcomes: list[Outcome] = []
    skipped: Counter[str] = Counter()
    fitted: Weights | None = None
    with temporary_worktree(repo, chosen[0].parent) as worktree:
        index = WorkspaceIndex(worktree, cache_dir=options.cache_dir)
        aider = AiderRanker(aider_python, worktree, options.cache_dir / "aider-tags") if aider_python else None
        try:
            for query in chosen:
                git(worktree, "checkout", "-q", "--detach", query.parent)
                index.build()
                snapshot = index.snapshot()
                files = frozenset(snapshot.files)
                key = tuple(path for path in query.expected if path in files)
                if query.target not in files or not key:
                    skipped["target or key not indexed"] += 1
                    continue
                held = query.sha in held_out
                if held and fitted is None:
                    fitted = repository_weights(worktree, snapshot)
                    print(f"  ours:repo: {fitted.source} weights from {fitted.queries} commits", flush=True)
                rankings: dict[str, list[str] | None] = {
                    "ours:target": _paths(
                        relevance.relevant_files(snapshot, "", [query.target], DEEP, options.history_commits, DEFAULTS)
                    ),
                    "ours:subject": _paths(
                        relevance.relevant_files(
                            snapshot, query.subject, [query.target], DEEP, options.history_commits, DEFAULTS
                        )
                    ),
                    "ours:described": _paths(
                        relevance.relevant_files(snapshot, query.subject, [], DEEP, options.history_commits, DEFAULTS)
                    ),
                    "ours:repo": _paths(
                        relevance.relevant_files(snapshot, "", [query.target], DEEP, options.history_commits, fitted)
                    )
                    if held and fitted is not None
                    else None,
                    "same-dir": same_directory_ranking(query.target, files, DEEP),
                    "history": history_ranking(worktree, query.target, files, options.history_commits),
                    "aider:target": None,
                    "aider:subject": None,
                }
                if aider is not None:
                    listed = sorted(files)
                    rankings["aider:target"] = aider.rank(worktree, listed, query.target, "")
                    rankings["aider:subject"] = aider.rank(worktree, listed, query.target, query.subject)
                manifests = manifest_directories(worktree)
                outcome = Outcome(
                    name,
                    "held-out" if held else "tuning",
                    query,
                    key,
                    rankings,
                    {path: miss_kind(query.target, path, manifests) for path in key},
                )
                outcomes.append(outcome)
                if options.verbose:
                    print_query(outcome)
        finally:
            index.close()
            if aider is not None:
                aider.close()
                for error, count in aider.errors.items():
                    print(f"  aider failed {count}x: {error}")
    skip_note = ", ".join(f"{count} skipped: {reason}" for reason, count in skipped.items())
    print(
        f"{name}: {len(outcomes)} commits scored{', ' + skip_note if skip_note else ''}; "
        f"{time.perf_counter() - started:.0f} s",
        flush=True,
    )
    return outcomes


def _paths(result: dict[str, object]) -> list[str]:
    files = result["files"]
    assert isinstance(files, list)
    return [entry["path"] for entry in files]


def _rank(ranking: list[str] | None, path: str) -> str:
    if ranking is None:
        return "n/a"
    return str(ranking.index(path) + 1) if path in ranking[:DEEP] else f">{DEEP}"


def print_query(outcome: Outcome) -> None:
    query = outcome.query
    figures = "  ".join(
        f"{system} {recall(ranking, key_of(outcome, system), TOP_N):.2f}"
        for system, ranking in outcome.rankings.items()
        if ranking is not None
    )
    print(
        f"  [{outcome.split}] {query.sha[:9]} {query.target} ({len(outcome.key)} key) "
        f"{query.subject[:70]!r}\n      recall@10: {figures}"
    )
    for path in outcome.key:
        if all(path in (outcome.rankings[system] or [])[:TOP_N] for system in OURS):
            continue
        ranks = " ".join(f"{system}#{_rank(ranking, path)}" for system, ranking in outcome.rankings.items())
        print(f"      miss {outcome.kinds[path]:<15} {path}  {ranks}")


def key_of(outcome: Outcome, system: str) -> tuple[str, ...]:
    """What a ranking should find: the other files the commit changed, and the target too where it was not given."""
    return (outcome.query.target, *outcome.key) if system == "ours:described" else outcome.key


def scores(outcomes: list[Outcome], system: str) -> tuple[float, float, float, int] | None:
    rankings = [(outcome.rankings[system], key_of(outcome, system)) for outcome in outcomes]
    scored = [(ranking, key) for ranking, key in rankings if ranking is not None]
    if not scored:
        return None
    return (
        statistics.mean(recall(ranking, key, 5) for ranking, key in scored),
        statistics.mean(recall(ranking, key, TOP_N) for ranking, key in scored),
        mean_reciprocal_rank([rank_of_first(ranking[:TOP_N], frozenset(key)) for ranking, key in scored]),
        len(scored),
    )


def print_tables(outcomes: list[Outcome]) -> None:
    repos = list(dict.fromkeys(outcome.repo for outcome in outcomes))
    width = 17
    for split in SPLITS:
        of_split = [outcome for outcome in outcomes if outcome.split == split]
        print(
            f"\n{split} half ({'quote this' if split == 'held-out' else 'for tuning only'}): "
            f"recall@5 / recall@10 / MRR, top {TOP_N}"
        )
        print(f"{'repository':<20}{'commits':>8} " + "".join(f"{system:>{width}}" for system in SYSTEMS))
        for repo in [*repos, "pooled"]:
            rows = of_split if repo == "pooled" else [outcome for outcome in of_split if outcome.repo == repo]
            if not rows:
                continue
            cells = []
            for system in SYSTEMS:
                figures = scores(rows, system)
                cells.append(
                    f"{'n/a':>{width}}"
                    if figures is None
                    else f"{f'{figures[0]:.2f} {figures[1]:.2f} {figures[2]:.2f}':>{width}}"
                )
            print(f"{repo:<20}{len(rows):>8} " + "".join(cells))


def print_miss_kinds(outcomes: list[Outcome]) -> None:
    """Every key file by kind: how many there are and how many each ranking leaves out of its top 10; where
    ours:target's misses were (further down, or nowhere: a signal missing rather than a weight) and whether another
    ranking had them; and ours:target's misses by repository."""
    in_key: Counter[str] = Counter()
    missed: dict[str, Counter[str]] = {system: Counter() for system in SYSTEMS}
    available = {system for outcome in outcomes for system, ranking in outcome.rankings.items() if ranking is not None}
    where: dict[str, Counter[str]] = defaultdict(Counter)  # kind -> where ours:target's missed files were
    by_repo: dict[str, Counter[str]] = defaultdict(Counter)
    key_by_repo: dict[str, Counter[str]] = defaultdict(Counter)
    for outcome in outcomes:
        for path, kind in outcome.kinds.items():
            in_key[kind] += 1
            key_by_repo[outcome.repo][kind] += 1
            for system, ranking in outcome.rankings.items():
                if ranking is not None and path not in ranking[:TOP_N]:
                    missed[system][kind] += 1
            ours = outcome.rankings["ours:target"] or []
            if path in ours[:TOP_N]:
                continue
            by_repo[outcome.repo][kind] += 1
            where[kind]["11-50" if path in ours else f">{DEEP}"] += 1
            for system in ("history", "same-dir", "aider:target"):
                if path in (outcome.rankings[system] or [])[:TOP_N]:
                    where[kind][system] += 1
    kinds = [kind for kind, _ in in_key.most_common()]
    print(f"\nkey files by kind (both halves), and how many each ranking misses in its top {TOP_N}")
    print(f"{'kind':<16}{'in key':>8}" + "".join(f"{system:>15}" for system in SYSTEMS))
    for kind in kinds:
        cells = "".join(f"{missed[system][kind] if system in available else 'n/a':>15}" for system in SYSTEMS)
        print(f"{kind:<16}{in_key[kind]:>8}{cells}")
    columns = ("11-50", f">{DEEP}", "history", "same-dir", "aider:target")
    print(f"\nours:target's misses by kind: ranked 11-{DEEP} or not in its top {DEEP}; of them, in the top {TOP_N} of")
    print(f"{'kind':<16}{'missed':>8}" + "".join(f"{column:>14}" for column in columns))
    for kind in kinds:
        count = missed["ours:target"][kind]
        print(f"{kind:<16}{count:>8}" + "".join(f"{where[kind][column]:>14}" for column in columns))
    print("\nours:target's misses by repository, missed/in key")
    print(f"{'repository':<20}" + "".join(f"{kind:>16}" for kind in kinds))
    for repo, key_counts in key_by_repo.items():
        print(f"{repo:<20}" + "".join(f"{f'{by_repo[repo][kind]}/{key_counts[kind]}':>16}" for kind in kinds))


def main(arguments: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("repos", nargs="+", type=Path, help="git repositories (working clones or bare git dirs)")
    parser.add_argument("--commits", type=int, default=40, help="commits replayed per repository (default 40)")
    parser.add_argument("--span", type=int, default=400, help="spread them over this many newest qualifying ones")
    parser.add_argument(
        "--min-commits-before",
        type=int,
        default=MIN_COMMITS_BEFORE,
        help="skip the repository's oldest commits, which have too little history behind them",
    )
    parser.add_argument("--history-commits", type=int, default=history.DEFAULT_HISTORY_COMMITS)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE, help="index and aider tag caches")
    parser.add_argument(
        "--aider-python",
        type=Path,
        default=DEFAULT_AIDER_PYTHON,
        help="a Python with aider-chat installed (a bench-only environment)",
    )
    parser.add_argument("--no-aider", action="store_true", help="leave aider's columns out")
    parser.add_argument("-v", "--verbose", action="store_true", help="each commit and each key file ours misses")
    options = parser.parse_args(arguments)

    for repo in options.repos:
        if (
            subprocess.run(
                ["git", "rev-parse", "--git-dir"], cwd=repo if repo.is_dir() else "/", capture_output=True
            ).returncode
            != 0
            or not repo.is_dir()
        ):
            print(f"not a git repository: {repo}")
            return 2
    aider_python: Path | None = None
    if not options.no_aider:
        probe = (
            subprocess.run([str(options.aider_python), "-c", "import aider.repomap"], capture_output=True)
            if options.aider_python.exists()
            else None
        )
        if probe is None or probe.returncode != 0:
            print(f"aider: no aider-chat at {options.aider_python}; its columns are n/a")
        else:
            aider_python = options.aider_python
    options.cache_dir.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()
    outcomes: list[Outcome] = []
    for repo in options.repos:
        outcomes.extend(replay_repository(repo.resolve(), options, aider_python))
    if not outcomes:
        print("no commit to replay")
        return 1
    print_tables(outcomes)
    print_miss_kinds(outcomes)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
