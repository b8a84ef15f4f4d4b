"""How relevance combines its signals: one feature per signal, a weight per feature, and the fit of the weights.

`relevance.py` records, for each candidate file, each signal's raw value (a feature: `FEATURES`) and the reasons
that go with it (`Evidence`); a file's score is the weighted sum. The weights come from the repository's own
history when the hub has fitted them (`relevance_tuning.py`, in idle time) and otherwise from `DEFAULT_WEIGHTS`,
fitted across development repositories by `bench/fit_relevance_weights.py`.

The fit (`fit_weights`) is a pairwise ranking objective: for each replayed query (a target and the files its
commit changed with it), every (key file, other candidate) pair should score the key file higher; the loss is the
logistic loss of the score difference, averaged per query, plus an L2 pull towards a prior vector (the defaults),
so a feature the queries never exercise (the description's, when a repository is replayed without one) keeps its
prior weight and a repository with little history moves little. Weights stay non-negative, so every signal only
ever adds to a file's score and its reason says why. Plain numpy gradient descent: deterministic, a few hundred
milliseconds for a hundred queries.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Each signal's raw value for one candidate file; the weights multiply these.
FEATURES = (
    "mention",  # the description names the file (1 per mention)
    "defines_named",  # defines names the description spells (3 written as in code, 2 by several words, 1 by one)
    "uses_named",  # uses such a name, resolved to its definition (1, less when many files do)
    "path_words",  # its path holds words of the description (1 or 2)
    "imported_by_target",  # a target imports it
    "imports_target",  # it imports a target
    "import_distance",  # 2+ imports away from a target, either way (1/2 per further step)
    "same_directory",  # in a target's directory
    "same_name",  # a module with a target's name elsewhere (`x.py` and `sansio/x.py`, `x.pyi`)
    "test_pair",  # the test of a target, or the subject of a target test
    "uses_target_names",  # references names a target defines (distinct names, 1 at 5)
    "used_by_target",  # defines names a target references (distinct names, 1 at 5)
    "pagerank",  # reference-graph PageRank towards the targets, 1 for the best
    "co_change",  # recency- and size-weighted share of a target's commits that changed it too
    "co_change_test",  # the same, for a test file (tests are changed with what they test, named after it or not)
    "co_change_share",  # the plain share of a target's commits that changed it (no recency or size weighting)
    "co_change_described",  # co_change with the files the description points at, when they are not targets
    "busy_test",  # a test file the project changes often (recency-weighted), 1 for the busiest; with targets only
    "busy_module",  # the same for a non-test file
)

# The output of `python bench/fit_relevance_weights.py /work/.mirror/{pallets+flask,honojs+hono,gin-gonic+gin,
# BurntSushi+ripgrep}/repo` (bench/results/fit_relevance_weights.txt): fitted on 60 commits of each of flask, hono,
# gin and ripgrep older than the half `bench/relevance_cochange.py` holds out. "mention" keeps its hand-set value:
# no commit subject named a file.
DEFAULT_WEIGHTS: Mapping[str, float] = {
    "mention": 5.0,
    "defines_named": 0.6828,
    "uses_named": 1.2867,
    "path_words": 1.5634,
    "imported_by_target": 0.0241,
    "imports_target": 0.6592,
    "import_distance": 0.0,
    "same_directory": 0.543,
    "same_name": 0.7506,
    "test_pair": 1.9842,
    "uses_target_names": 0.8489,
    "used_by_target": 0.4225,
    "pagerank": 0.1572,
    "co_change": 8.1132,
    "co_change_test": 0.6022,
    "co_change_share": 0.581,
    "co_change_described": 0.6904,
    "busy_test": 1.8452,
    "busy_module": 0.5568,
}

SOURCE_DEFAULT = "default"
SOURCE_REPOSITORY = "repository"


@dataclass(frozen=True)
class Weights:
    values: Mapping[str, float]
    source: str = SOURCE_DEFAULT  # "default" or "repository"
    queries: int = 0  # how many replayed commits a repository's weights were fitted on

    def vector(self) -> list[float]:
        return [float(self.values.get(name, 0.0)) for name in FEATURES]


DEFAULTS = Weights(DEFAULT_WEIGHTS)


@dataclass
class Evidence:
    """Each candidate file's features and the reasons behind them (several reasons per feature, in order found)."""

    features: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    reasons: dict[str, dict[str, list[str]]] = field(default_factory=lambda: defaultdict(dict))
    beyond_words: set[str] = field(default_factory=set)  # files with a signal other than a word of the description
    # A reason too weak to give beside others (a co-change in one broad commit), given when a file has no other.
    weak_reasons: dict[str, str] = field(default_factory=dict)

    def add(self, path: str, feature: str, value: float, reason: str | None, *, by_words: bool = False) -> None:
        if value <= 0:
            return
        features = self.features[path]
        features[feature] = features.get(feature, 0.0) + value
        if not by_words:
            self.beyond_words.add(path)
        if reason is not None:
            self.note(path, feature, reason)

    def note(self, path: str, feature: str, reason: str) -> None:
        """A further reason for a feature the file has."""
        reasons = self.reasons[path].setdefault(feature, [])
        if reason not in reasons:
            reasons.append(reason)

    def score(self, path: str, weights: Weights) -> float:
        values = weights.values
        return sum(values.get(feature, 0.0) * value for feature, value in self.features.get(path, {}).items())

    def reasons_of(self, path: str, weights: Weights) -> list[str]:
        """The reasons, strongest contribution first; a feature with no weight gives none (it did not count)."""
        values = weights.values
        contributions = [
            (values.get(feature, 0.0) * self.features[path].get(feature, 0.0), order, feature)
            for order, feature in enumerate(self.reasons.get(path, {}))
        ]
        ordered = sorted((item for item in contributions if item[0] > 0), key=lambda item: (-item[0], item[1]))
        reasons = list(
            dict.fromkeys(
                reason for _contribution, _order, feature in ordered for reason in self.reasons[path][feature]
            )
        )
        weak = self.weak_reasons.get(path)
        return reasons if reasons or weak is None else [weak]


# --- fitting ----------------------------------------------------------------------------------------------------

NEGATIVES_PER_QUERY = 40  # the candidates a query's key files must beat: the best-scored others by the prior
REGULARIZATION = 0.002  # the L2 pull towards the prior, per query's worth of loss
ITERATIONS = 500
LEARNING_RATE = 0.05
BETA1, BETA2 = 0.9, 0.999


@dataclass(frozen=True)
class FitQuery:
    """One replayed commit: each candidate's features and whether the commit changed it."""

    candidates: Sequence[Mapping[str, float]]
    relevant: Sequence[bool]
    unreachable: int = 0  # key files no signal found (missed whatever the weights)


def fit_weights(
    queries: Sequence[FitQuery],
    prior: Mapping[str, float] = DEFAULT_WEIGHTS,
    regularization: float = REGULARIZATION,
    iterations: int = ITERATIONS,
) -> dict[str, float]:
    """Non-negative weights that rank each query's relevant candidates above its others (pairwise logistic loss
    with an L2 pull towards `prior`); the prior itself when no query has both kinds of candidate. Deterministic."""
    import numpy as np

    prior_vector = np.array([float(prior.get(name, 0.0)) for name in FEATURES])
    differences, pair_weights = _pairs(queries, prior_vector)
    if not len(differences):
        return dict(zip(FEATURES, prior_vector.tolist(), strict=True))
    # Features on a common scale, so one step size suits them all; undone at the end.
    scale = np.maximum(np.abs(differences).max(axis=0), 1e-9)
    scaled = differences / scale
    weights = prior_vector * scale
    prior_scaled = weights.copy()
    # The pull is measured relative to the prior's size, so a feature with a large weight can move as freely.
    stiffness = regularization / np.maximum(np.abs(prior_scaled), 1.0) ** 2
    # Adam (deterministic: no sampling), projected onto non-negative weights after each step.
    first = np.zeros_like(weights)
    second = np.zeros_like(weights)
    for step in range(1, iterations + 1):
        margins = scaled @ weights
        pull = 0.5 * (1.0 - np.tanh(margins / 2.0))  # sigmoid(-margin), without overflow
        gradient = -(pair_weights * pull) @ scaled + 2.0 * stiffness * (weights - prior_scaled)
        first = BETA1 * first + (1 - BETA1) * gradient
        second = BETA2 * second + (1 - BETA2) * gradient**2
        corrected = (first / (1 - BETA1**step)) / (np.sqrt(second / (1 - BETA2**step)) + 1e-8)
        weights = np.maximum(0.0, weights - LEARNING_RATE * corrected)
    fitted = weights / scale
    return {name: round(float(value), 4) for name, value in zip(FEATURES, fitted, strict=True)}


def _pairs(queries: Sequence[FitQuery], prior_vector: Any) -> tuple[Any, Any]:
    """(feature differences key - other, one row per pair; each pair's weight, every query counting 1 in all)."""
    import numpy as np

    rows: list[Any] = []
    weights: list[Any] = []
    usable = [query for query in queries if any(query.relevant) and not all(query.relevant)]
    for query in usable:
        matrix = np.array([[float(candidate.get(name, 0.0)) for name in FEATURES] for candidate in query.candidates])
        relevant = np.array(query.relevant, dtype=bool)
        positives = matrix[relevant]
        others = matrix[~relevant]
        order = np.lexsort((np.arange(len(others)), -(others @ prior_vector)))
        others = others[order[:NEGATIVES_PER_QUERY]]
        pairs = (positives[:, None, :] - others[None, :, :]).reshape(-1, len(FEATURES))
        rows.append(pairs)
        weights.append(np.full(len(pairs), 1.0 / (len(pairs) * len(usable))))
    if not rows:
        return np.zeros((0, len(FEATURES))), np.zeros(0)
    return np.concatenate(rows), np.concatenate(weights)


def rank_metrics(queries: Sequence[FitQuery], weights: Mapping[str, float], cut: int = 10) -> tuple[float, float]:
    """(recall@cut, MRR within the cut) of `weights` on the queries' candidates, as the benchmark scores them
    (key files that are not candidates count as missed)."""
    recalls, reciprocal = [], []
    vector = [float(weights.get(name, 0.0)) for name in FEATURES]
    for query in queries:
        if not any(query.relevant):
            if query.unreachable:
                recalls.append(0.0)
                reciprocal.append(0.0)
            continue
        scores = [
            sum(w * candidate.get(name, 0.0) for w, name in zip(vector, FEATURES, strict=True))
            for candidate in query.candidates
        ]
        order = sorted(range(len(scores)), key=lambda index: -scores[index])[:cut]
        hits = [index for index in order if query.relevant[index]]
        recalls.append(len(hits) / (sum(query.relevant) + query.unreachable))
        first = next((rank for rank, index in enumerate(order, 1) if query.relevant[index]), None)
        reciprocal.append(1.0 / first if first else 0.0)
    if not recalls:
        return 0.0, 0.0
    return sum(recalls) / len(recalls), sum(reciprocal) / len(reciprocal)
