"""Relevance weights fitted to one repository from its own recent history, in the hub's idle time.

`tune(snapshot)` replays the repository's last REPLAY_COMMITS non-merge commits that changed 2..MAX_SOURCE_FILES
indexed files on the current index (the files as they are now): the target is the non-test file the commit
changed most, the key the other indexed files it changed, and the history signals see only the commits older than
the replayed one (`History.before`), so no commit answers its own question. Each commit is asked twice, without a
description and with its subject as one, as `bench/relevance_cochange.py` asks. `relevance_weights.fit_weights`
fits the weights, pulled towards the defaults; they are kept only when, fitted on the older two thirds of the
commits, they rank the newest third at least as well as the defaults do (else the defaults stay). With fewer than
MIN_QUERIES usable commits the defaults stay too.

The result is stored with the index (`IndexStore.save_graph` under WEIGHTS_KEY, fingerprinted by this code's
version, in this root's cache only: never in the records every root shares) with the HEAD it was fitted at, and
kept in memory per root: `weights_for(snapshot)` answers the last fitted weights of the root (also after later
commits, until the next tuning replaces them) or the defaults.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any

from lsp_hub.index import history as history_module
from lsp_hub.index.file_kinds import is_test_file
from lsp_hub.index.relevance_weights import (
    DEFAULT_WEIGHTS,
    DEFAULTS,
    FEATURES,
    SOURCE_DEFAULT,
    SOURCE_REPOSITORY,
    FitQuery,
    Weights,
    fit_weights,
    rank_metrics,
)
from lsp_hub.index.workspace import Snapshot

log = logging.getLogger(__name__)

WEIGHTS_KEY = "relevance-weights"
REPLAY_COMMITS = 400  # the newest non-merge commits read for replay (those changing 2..8 indexed files are used)
MAX_SOURCE_FILES = 8
MIN_QUERIES = 20  # fewer usable commits: the defaults stay
MAX_QUERIES = 80
TUNING_SECONDS = 5.0  # replaying stops here and fits on what it has
GIT_SECONDS = 10.0  # reading the history (idle time: more patient than a query's read)
# Pulled towards the defaults harder than the defaults' own fit is pulled towards the hand-set weights: a
# repository has a few dozen commits to say how it differs (on the development repositories, fitted on their older
# half and scored on the newer: recall@10 / MRR rose on three of four, 0.02 better than 0.002 or 0.1).
REPOSITORY_REGULARIZATION = 0.02
VALIDATION_SHARE = 1 / 3  # the newest commits that check a fit before it replaces the defaults
MECHANICAL_SUBJECT = re.compile(
    r"\b(format\w*|fmt|lint\w*|clippy|prettier|eslint|gofmt|rustfmt|black|version\w*|releas\w*|bump\w*|merge\w*|"
    r"typos?|deps|dependabot|changelog)\b",
    re.IGNORECASE,
)

_fitted: dict[str, Weights] = {}
_tuned_at: dict[str, str] = {}  # root -> the HEAD this process last tuned it at (with or without a store)
_lock = threading.Lock()


def code_version() -> str:
    """What stored weights depend on besides the history: the features and how they are computed."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256(" ".join(FEATURES).encode())
    sources = ("relevance.py", "relevance_signals.py", "relevance_weights.py", "relevance_tuning.py", "path_tables.py")
    for name in sources:
        try:
            digest.update((here / name).read_bytes())
        except OSError:
            continue
    return digest.hexdigest()[:12]


def weights_for(snapshot: Snapshot) -> Weights:
    """The root's fitted weights (from memory, else the store), or the defaults."""
    root = str(snapshot.root)
    with _lock:
        known = _fitted.get(root)
    if known is not None:
        return known
    stored = _load(snapshot)
    weights = stored[1] if stored is not None else DEFAULTS
    with _lock:
        _fitted.setdefault(root, weights)
    return weights


def forget(root: Path | str) -> None:
    with _lock:
        _fitted.pop(str(root), None)
        _tuned_at.pop(str(root), None)


def _load(snapshot: Snapshot) -> tuple[str, Weights] | None:
    """(HEAD fitted at, weights) from the store, when this code version stored them."""
    store = snapshot.store
    # This root's own: weights fitted to another repository's history must not come from the shared store.
    data = store.load_graph(WEIGHTS_KEY, code_version(), across_roots=False) if store is not None else None
    if data is None:
        return None
    try:
        value = json.loads(data)
        weights = Weights(
            {name: float(value["weights"][name]) for name in FEATURES}, str(value["source"]), int(value["queries"])
        )
        return str(value["head"]), weights
    except (ValueError, KeyError, TypeError):
        return None


def tune(snapshot: Snapshot, budget: float = TUNING_SECONDS) -> Weights:
    """Fit (or reuse, at the same HEAD) the repository's weights, keep them in memory and in the store."""
    root = snapshot.root
    history = history_module.read_history(
        root, REPLAY_COMMITS + history_module.DEFAULT_HISTORY_COMMITS, timeout=GIT_SECONDS
    )
    if history.state != history_module.STATE_GIT or history.head is None:
        return weights_for(snapshot)
    with _lock:
        done = _tuned_at.get(str(root)) == history.head
    if done:
        return weights_for(snapshot)
    stored = _load(snapshot)
    if stored is not None and stored[0] == history.head:
        weights = stored[1]
    else:
        queries = replay(snapshot, history, budget)
        weights = fit_repository(queries)
        log.info("relevance weights for %s: %s from %d replayed queries", root, weights.source, len(queries))
        if snapshot.store is not None:
            record = {
                "head": history.head,
                "source": weights.source,
                "queries": weights.queries,
                "weights": dict(weights.values),
            }
            snapshot.store.save_graph(WEIGHTS_KEY, code_version(), json.dumps(record).encode(), across_roots=False)
    with _lock:
        _fitted[str(root)] = weights
        _tuned_at[str(root)] = history.head
    return weights


def fit_repository(queries: list[FitQuery]) -> Weights:
    """Weights fitted on `queries` (newest first), or the defaults when there are too few or the fit does not
    rank the newest third better than the defaults when fitted on the rest."""
    commits = len(queries) // 2  # each commit is asked twice
    if commits < MIN_QUERIES:
        return Weights(DEFAULT_WEIGHTS, SOURCE_DEFAULT, commits)
    held = 2 * max(1, int(commits * VALIDATION_SHARE))
    trial = fit_weights(queries[held:], regularization=REPOSITORY_REGULARIZATION)
    fitted_recall, fitted_mrr = rank_metrics(queries[:held], trial)
    default_recall, default_mrr = rank_metrics(queries[:held], DEFAULT_WEIGHTS)
    if fitted_recall + fitted_mrr < default_recall + default_mrr:
        return Weights(DEFAULT_WEIGHTS, SOURCE_DEFAULT, commits)
    return Weights(fit_weights(queries, regularization=REPOSITORY_REGULARIZATION), SOURCE_REPOSITORY, commits)


def replay(
    snapshot: Snapshot,
    history: history_module.History,
    budget: float = TUNING_SECONDS,
    changes: list[history_module.ChangedCommit] | None = None,
) -> list[FitQuery]:
    """Two queries (no description; the subject as description) per usable recent commit, newest first."""
    from lsp_hub.index.relevance import collect_evidence

    started = time.monotonic()
    if changes is None:
        changes = history_module.read_changes(snapshot.root, REPLAY_COMMITS, timeout=GIT_SECONDS)
    queries: list[FitQuery] = []
    for commit in changes:
        if time.monotonic() - started > budget or len(queries) >= 2 * MAX_QUERIES:
            break
        question = commit_question(snapshot, commit)
        if question is None:
            continue
        target, key = question
        older = history.before(commit.sha, history_module.DEFAULT_HISTORY_COMMITS)
        if older.state != history_module.STATE_GIT:
            continue
        for description in ("", commit.subject):
            evidence = collect_evidence(snapshot, description, frozenset((target,)), older)
            queries.append(fit_query(evidence.features, key))
    return queries


def commit_question(snapshot: Snapshot, commit: history_module.ChangedCommit) -> tuple[str, frozenset[str]] | None:
    """(target, key) for a commit worth replaying: 2..MAX_SOURCE_FILES indexed files, not a mechanical change,
    a non-test file to ask about."""
    files = {path: lines for path, lines in commit.lines.items() if path in snapshot.files}
    if not 2 <= len(files) <= MAX_SOURCE_FILES or MECHANICAL_SUBJECT.search(commit.subject):
        return None
    modules = [path for path in files if not is_test_file(path)]
    if not modules:
        return None
    target = min(modules, key=lambda path: (-files[path], path))
    return target, frozenset(files) - {target}


def fit_query(features: dict[str, dict[str, float]], key: frozenset[str]) -> FitQuery:
    paths = sorted(features)
    found = key.intersection(paths)
    return FitQuery([features[path] for path in paths], [path in key for path in paths], len(key) - len(found))


def summary(weights: Weights) -> dict[str, Any]:
    return {"weights": weights.source, "queries": weights.queries, "values": dict(weights.values)}
