"""Fit relevance's default weights (`relevance_weights.DEFAULT_WEIGHTS`) across development repositories.

For each git repository given (a clone or a bare git directory, as for `relevance_cochange.py`), the commits are
chosen as that benchmark chooses them, and only commits OLDER than the first one its held-out half quotes (with the
same `--commits` and `--span`) are replayed here: `--fit-commits` of them, spread evenly over the newest `--span`
of those. Each is replayed at its parent in a temporary worktree (the tree and the history as they were), asked
with the target alone and with its subject as the description, and each candidate's features are kept. The weights
are fitted on every query of every repository (`relevance_weights.fit_weights`, pulled towards `--prior`: the
hand-set weights by default) and printed as the Python mapping to paste into relevance_weights.py, with recall@10
and MRR on the fitted queries (defaults before, fitted after) and, per repository, when fitted on the others only.

    python bench/fit_relevance_weights.py /work/.mirror/pallets+flask/repo /work/.mirror/honojs+hono/repo \\
        /work/.mirror/gin-gonic+gin/repo /work/.mirror/BurntSushi+ripgrep/repo [--fit-commits 60] \\
        [--save features.json | --load features.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cochange_commits import MIN_COMMITS_BEFORE, candidate_queries, spread
from relevance_cochange import DEFAULT_CACHE, temporary_worktree
from relevance_history import git

from lsp_hub.index import history as history_module
from lsp_hub.index.relevance import collect_evidence
from lsp_hub.index.relevance_tuning import fit_query
from lsp_hub.index.relevance_weights import DEFAULT_WEIGHTS, FEATURES, FitQuery, fit_weights, rank_metrics
from lsp_hub.index.workspace import WorkspaceIndex

# The weights set by hand before any fit: the prior the fit is pulled towards.
HAND_WEIGHTS = {
    "mention": 5.0,
    "defines_named": 1.0,
    "uses_named": 1.5,
    "path_words": 1.0,
    "imported_by_target": 3.0,
    "imports_target": 3.0,
    "import_distance": 3.0,
    "same_directory": 1.0,
    "test_pair": 3.0,
    "pagerank": 2.0,
    "co_change": 4.0,
    "co_change_described": 2.0,
}


def tuning_queries(repo: Path, options: argparse.Namespace) -> list:  # type: ignore[type-arg]
    _total, queries = candidate_queries(repo, MIN_COMMITS_BEFORE)
    benchmarked = spread(queries, options.commits, options.span)
    held_out = benchmarked[len(benchmarked) // 2 :]
    if not held_out:
        return []
    first_held = queries.index(held_out[0])
    return spread(queries[:first_held], options.fit_commits, options.span)


def replay(repo: Path, options: argparse.Namespace) -> list[dict[str, object]]:
    """Each tuning commit's two queries as {features: [...], relevant: [...], unreachable}."""
    chosen = tuning_queries(repo, options)
    name = repo.parent.name if repo.name in ("repo", ".git") else repo.name
    print(f"{name}: replaying {len(chosen)} tuning commits", flush=True)
    found: list[dict[str, object]] = []
    if not chosen:
        return found
    started = time.perf_counter()
    with temporary_worktree(repo, chosen[0].parent) as worktree:
        index = WorkspaceIndex(worktree, cache_dir=options.cache_dir)
        try:
            for query in chosen:
                git(worktree, "checkout", "-q", "--detach", query.parent)
                index.build()
                snapshot = index.snapshot()
                key = frozenset(path for path in query.expected if path in snapshot.files)
                if query.target not in snapshot.files or not key:
                    continue
                history = history_module.read_history(worktree, options.history_commits)
                for description in ("", query.subject):
                    evidence = collect_evidence(snapshot, description, frozenset((query.target,)), history)
                    fitted = fit_query(evidence.features, key)
                    found.append(
                        {
                            "repo": name,
                            "candidates": [dict(c) for c in fitted.candidates],
                            "relevant": list(fitted.relevant),
                            "unreachable": fitted.unreachable,
                        }
                    )
        finally:
            index.close()
    print(f"{name}: {len(found) // 2} commits replayed; {time.perf_counter() - started:.0f} s", flush=True)
    return found


def as_queries(records: list[dict[str, object]]) -> list[FitQuery]:
    return [
        FitQuery(record["candidates"], record["relevant"], int(record["unreachable"]))  # type: ignore[arg-type]
        for record in records
    ]


def main(arguments: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("repos", nargs="*", type=Path, help="git repositories (clones or bare git directories)")
    parser.add_argument(
        "--commits",
        type=int,
        default=40,
        help="relevance_cochange.py's --commits (its held-out half is never replayed here)",
    )
    parser.add_argument("--span", type=int, default=400, help="relevance_cochange.py's --span, and this one's")
    parser.add_argument("--fit-commits", type=int, default=60, help="tuning commits replayed per repository")
    parser.add_argument("--history-commits", type=int, default=history_module.DEFAULT_HISTORY_COMMITS)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument(
        "--prior",
        choices=("hand", "current"),
        default="hand",
        help="pull the fit towards the hand-set weights or the current defaults",
    )
    parser.add_argument("--save", type=Path, help="keep the replayed features in this JSON file")
    parser.add_argument("--load", type=Path, help="fit on features saved by --save instead of replaying")
    options = parser.parse_args(arguments)
    if options.load is not None:
        try:
            records = json.loads(options.load.read_text())
        except (OSError, ValueError) as error:
            print(f"cannot read {options.load}: {error}")
            return 2
    else:
        if not options.repos:
            print("give git repositories to replay, or --load")
            return 2
        records = []
        for repo in options.repos:
            if not repo.is_dir():
                print(f"not a directory: {repo}")
                return 2
            records.extend(replay(repo.resolve(), options))
        if options.save is not None:
            options.save.write_text(json.dumps(records))
    if not records:
        print("no commit to fit on")
        return 1
    prior = HAND_WEIGHTS if options.prior == "hand" else dict(DEFAULT_WEIGHTS)
    queries = as_queries(records)
    fitted = fit_weights(queries, prior)
    print("\nrecall@10 / MRR on the fitted queries (both modes)")
    for label, weights in (("hand", prior), ("current defaults", DEFAULT_WEIGHTS), ("fitted", fitted)):
        recall, mrr = rank_metrics(queries, weights)
        print(f"  {label:<18}{recall:.3f} / {mrr:.3f}")
    print("\nleave one repository out: fitted on the others, scored on it (hand -> fitted)")
    repos = list(dict.fromkeys(str(record["repo"]) for record in records))
    for repo in repos:
        others = as_queries([record for record in records if record["repo"] != repo])
        mine = as_queries([record for record in records if record["repo"] == repo])
        if not others:
            continue
        before = rank_metrics(mine, prior)
        after = rank_metrics(mine, fit_weights(others, prior))
        print(f"  {repo:<20}{before[0]:.3f} / {before[1]:.3f} -> {after[0]:.3f} / {after[1]:.3f}")
    print("\nDEFAULT_WEIGHTS: Mapping[str, float] = {")
    for name in FEATURES:
        print(f'    "{name}": {fitted[name]},')
    print("}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
