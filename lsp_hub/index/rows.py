"""Each file's row of the weighted reference graph: the weight of each of its links (aider's `multiplier *
sqrt(uses) / sqrt(files defining the name)`, a tenth for private and very common names), summed per target, the
edges kept for ranking and what each link passes on to each target. A row depends only on the file's links and
the multipliers of the names they use (`ranking.py` puts the rows together).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lsp_hub.index.file_kinds import is_test_file
from lsp_hub.index.graph import FileLinks
from lsp_hub.index.graph_inputs import COMMON_NAMES, MAX_DEFINERS, NameTables

# Edges carrying less than this share of their source's outgoing weight are dropped from the power iteration (about
# half of all edges on the standard library, 2-3% of the weight): they cannot change a ranking, only slow it down.
PRUNE_SHARE = 0.002
COMMON_DEFINER_COUNT = 5  # defined in more files than this: a common name
COMMON_REFERENCER_SHARE = 0.05  # referenced by more than this share of all files (and at least 10): a common name
PRIVATE_OR_COMMON_FACTOR = 0.1


def name_multiplier(name: str, definer_count: int, referencer_count: int, file_count: int) -> float:
    """How much one name says about the files that define it (1 for a distinctive name)."""
    multiplier = 1.0
    if name in COMMON_NAMES:
        multiplier *= PRIVATE_OR_COMMON_FACTOR
    if name.startswith("_"):
        multiplier *= PRIVATE_OR_COMMON_FACTOR
    if definer_count > COMMON_DEFINER_COUNT:
        multiplier *= PRIVATE_OR_COMMON_FACTOR
    if referencer_count >= 10 and referencer_count > COMMON_REFERENCER_SHARE * file_count:
        multiplier *= PRIVATE_OR_COMMON_FACTOR
    return multiplier


def name_factor(name: str, tables: NameTables, file_count: int) -> float | None:
    """multiplier / sqrt(definer count) for a name, or None for names left out of the graph."""
    definers = tables.definers.get(name)
    if not definers or len(definers) > MAX_DEFINERS:
        return None
    multiplier = name_multiplier(name, len(definers), len(tables.referencers.get(name, ())), file_count)
    return multiplier / math.sqrt(len(definers))


@dataclass(frozen=True, slots=True)
class Row:
    """One file's part of the graph."""

    out_weight: float  # the summed weight of all its links
    kept: tuple[tuple[str, float], ...]  # (target, weight) of the edges kept for ranking, in link order
    passes: Mapping[str, tuple[tuple[str, float], ...]]  # target -> (name, weight) of each link reaching it


def file_row(links: FileLinks, factor: Any, unreachable: frozenset[str] = frozenset()) -> Row:
    """A file's row; links into `unreachable` files (tests, for a file that is not one) pass nothing on."""
    targets: dict[str, float] = {}
    passes: dict[str, list[tuple[str, float]]] = {}
    sqrt = math.sqrt
    target_weight, passes_into = targets.get, passes.get
    for used, uses, link_targets in links:
        multiplier = factor(used)
        if multiplier is None:
            continue
        weight = multiplier * sqrt(uses)
        entry = (used, weight)  # one tuple for every target of the link (366,000 entries on the standard library)
        for target in link_targets:
            if target in unreachable:
                continue
            targets[target] = target_weight(target, 0.0) + weight
            entries = passes_into(target)
            if entries is None:
                passes[target] = [entry]
            else:
                entries.append(entry)
    total = sum(targets.values())
    threshold = PRUNE_SHARE * total
    kept = tuple((target, weight) for target, weight in targets.items() if weight >= threshold) if total > 0 else ()
    return Row(total, kept, {target: tuple(entries) for target, entries in passes.items()})


def factor_lookup(factors: dict[str, float | None], tables: NameTables, file_count: int) -> Any:
    def factor(name: str) -> float | None:
        try:
            return factors[name]
        except KeyError:
            value = factors[name] = name_factor(name, tables, file_count)
            return value

    return factor


def test_files(nodes: Iterable[str]) -> frozenset[str]:
    return frozenset(node for node in nodes if is_test_file(node))


def unreachable_from(node: str, tests: frozenset[str]) -> frozenset[str]:
    """Code does not use its tests: a name a non-test file uses never passes rank to a test that defines it too
    (otherwise a test file defining many common type names opens the map)."""
    return frozenset() if node in tests else tests
