"""Relevance's weights (issue #27 point 2): the pairwise fit, the evidence a score is made of, and the weights a
repository gets from its own history (or the defaults when it has too little)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lsp_hub.index import api, background, history, relevance_tuning
from lsp_hub.index.relevance_weights import (
    DEFAULT_WEIGHTS,
    FEATURES,
    Evidence,
    FitQuery,
    Weights,
    fit_weights,
    rank_metrics,
)
from lsp_hub.index.workspace import WorkspaceIndex
from tests.index.test_history import Repository, pytestmark  # noqa: F401 (needs git, as those tests do)


@pytest.fixture(autouse=True)
def fresh_caches() -> Iterator[None]:
    history.clear_cache()
    yield
    history.clear_cache()


def synthetic_queries(answer: str, seed: int, count: int = 30) -> list[FitQuery]:
    """Every feature is noise except `answer`, which is high on the one relevant candidate of each query."""
    generator = random.Random(seed)
    queries = []
    for _ in range(count):
        candidates = []
        for index in range(20):
            features = {name: generator.random() for name in FEATURES}
            features[answer] = 1.0 if index == 0 else generator.random() * 0.6
            candidates.append(features)
        queries.append(FitQuery(candidates, [index == 0 for index in range(20)]))
    return queries


@pytest.mark.parametrize("answer", ["co_change", "same_name", "busy_test"])
def test_the_fit_weights_the_signal_that_answers_highest(answer: str) -> None:
    queries = synthetic_queries(answer, seed=7)
    flat = dict.fromkeys(FEATURES, 1.0)  # a prior that favours nothing
    fitted = fit_weights(queries, flat)
    assert max(fitted, key=lambda name: fitted[name]) == answer, fitted
    assert fit_weights(queries, flat) == fitted  # deterministic
    assert rank_metrics(queries, fitted) > rank_metrics(queries, flat)
    assert all(value >= 0 for value in fitted.values())


def test_with_nothing_to_learn_the_fit_is_the_prior() -> None:
    only_relevant = [FitQuery([{"co_change": 1.0}], [True])]
    assert fit_weights(only_relevant, DEFAULT_WEIGHTS) == dict(DEFAULT_WEIGHTS)


def test_reasons_come_strongest_contribution_first_and_unweighted_ones_not_at_all() -> None:
    evidence = Evidence()
    evidence.add("a.py", "same_directory", 1.0, "same directory")
    evidence.add("a.py", "co_change", 0.5, "changed together")
    evidence.add("a.py", "pagerank", 1.0, "central")
    weights = Weights({"same_directory": 1.0, "co_change": 4.0, "pagerank": 0.0})
    assert evidence.reasons_of("a.py", weights) == ["changed together", "same directory"]
    assert evidence.score("a.py", weights) == pytest.approx(3.0)


def paired_repository(root: Path, rounds: int) -> Repository:
    """core/m<i>.py and extras/p<i>.py: no import, no shared name or directory; only their history pairs them."""
    repository = Repository(root)
    modules = [f"core/m{i}.py" for i in range(10)]
    partners = [f"extras/p{i}.py" for i in range(10)]
    repository.commit(*modules, *partners, "core/util.py", message="initial")
    for _ in range(rounds):
        for module, partner in zip(modules, partners, strict=True):
            repository.commit(module, partner, message=f"change {module}")
    return repository


def relevant(index: WorkspaceIndex, target: str) -> dict[str, object]:
    return api.relevant_files(index, {"description": "", "targets": [target]})


@contextmanager
def built_index(root: Path, cache: Path) -> Iterator[WorkspaceIndex]:
    """A built index of `root` with its cache in `cache`, as one process has it: closed and its weights forgotten
    after (the next process reads them from the cache, or not at all)."""
    index = WorkspaceIndex(root, cache_dir=cache)
    try:
        index.build()
        yield index
    finally:
        index.close()
        relevance_tuning.forget(root)


def test_a_repository_with_history_gets_its_own_weights_and_keeps_them(tmp_path: Path) -> None:
    repository = paired_repository(tmp_path / "paired", rounds=3)
    cache = tmp_path / "cache"
    with built_index(repository.root, cache) as index:
        assert relevant(index, "core/m3.py")["weights"] == "default"  # not tuned yet
        tuned = background.tune_relevance(index)
        assert tuned["weights"] == "repository" and tuned["queries"] >= relevance_tuning.MIN_QUERIES
        result = relevant(index, "core/m3.py")
        assert result["weights"] == "repository"
        first = result["files"][0]  # type: ignore[index]
        assert first["path"] == "extras/p3.py"
        assert first["reasons"][0].startswith("changed together with core/m3.py")
    with built_index(repository.root, cache) as index:  # another process on the same files: from the store
        assert relevant(index, "core/m3.py")["weights"] == "repository"


def test_another_repository_sharing_the_cache_does_not_get_these_weights(tmp_path: Path) -> None:
    """Fitted weights belong to one repository's history: the records and graphs every root shares by content must
    not carry them to another root (before, `weights_for` fell back to the shared store and answered with them)."""
    repository = paired_repository(tmp_path / "paired", rounds=3)
    other = paired_repository(tmp_path / "other", rounds=1)
    cache = tmp_path / "cache"
    with built_index(repository.root, cache) as index:
        assert background.tune_relevance(index)["weights"] == "repository"
    with built_index(other.root, cache) as index:
        assert relevant(index, "core/m3.py")["weights"] == "default"


def test_too_little_history_keeps_the_defaults(tmp_path: Path) -> None:
    repository = paired_repository(tmp_path / "young", rounds=1)  # 10 usable commits: fewer than MIN_QUERIES
    index = WorkspaceIndex(repository.root, use_cache=False)
    try:
        index.build()
        tuned = background.tune_relevance(index)
        assert tuned["weights"] == "default" and tuned["queries"] == 10
        assert relevant(index, "core/m3.py")["weights"] == "default"
    finally:
        index.close()
        relevance_tuning.forget(repository.root)


def test_a_replayed_commit_sees_only_older_history(tmp_path: Path) -> None:
    repository = paired_repository(tmp_path / "replayed", rounds=2)
    read = history.read_history(repository.root, 100)
    newest = read.commits[0]
    before = read.before(newest.sha, 100)
    assert [commit.sha for commit in before.commits] == [commit.sha for commit in read.commits[1:]]
    assert read.before("0" * 40, 100).state == history.STATE_NONE


def test_tuning_runs_once_per_head_without_a_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repository = paired_repository(tmp_path / "once", rounds=3)
    replays: list[int] = []
    replay = relevance_tuning.replay

    def counted(*arguments: object, **keywords: object) -> list[FitQuery]:
        replays.append(1)
        return replay(*arguments, **keywords)  # type: ignore[arg-type]

    monkeypatch.setattr(relevance_tuning, "replay", counted)
    index = WorkspaceIndex(repository.root, use_cache=False)
    try:
        index.build()
        assert background.tune_relevance(index)["weights"] == "repository"
        assert background.tune_relevance(index)["weights"] == "repository"
        assert len(replays) == 1
        repository.commit("core/m1.py", "extras/p1.py", message="one more")  # a new HEAD: tuned again
        history.clear_cache()
        background.tune_relevance(index)
        assert len(replays) == 2
    finally:
        index.close()
        relevance_tuning.forget(repository.root)
