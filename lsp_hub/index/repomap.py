"""The repo map: the most important files of the workspace and their most important definitions, within a budget.

Files are ranked by PageRank over the reference graph, personalized toward the focus files and toward files that
define, or are named like, the mentioned identifiers. Definitions are ranked by the rank that flows to them from the
files referencing them (plus a small share of their file's rank, so that unreferenced definitions of important files
still come before those of unimportant ones); mentioned identifiers count ten times. The map shows the top
definitions, grouped by file (files in rank order, definitions in source order, a method under its class), as many
as fit in the token budget (tokens estimated as characters / 4), found by binary search. Focus files are not listed:
the caller already has them.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lsp_hub.index.file_kinds import is_generated, is_named_callback
from lsp_hub.index.graph_inputs import name_tables
from lsp_hub.index.graph_store import ranking
from lsp_hub.index.pagerank import best_positions
from lsp_hub.index.path_tables import squashed
from lsp_hub.index.records import D_CONTAINER, D_KIND, D_LOCAL, D_NAME, D_START_LINE
from lsp_hub.index.workspace import Snapshot

DEFAULT_TOKEN_BUDGET = 1024
MENTIONED_FACTOR = 10.0
DEFINITION_FLOOR = 0.05  # share of its file's rank every definition gets (times its kind's weight)
FOCUS_REFERENCE_FACTOR = 3.0  # definitions the focus files use
KIND_WEIGHTS = {
    "class": 1.0,
    "interface": 1.0,
    "type": 0.9,
    "function": 1.0,
    "module": 0.6,
    "method": 0.7,
    "constant": 0.5,
    "variable": 0.3,
}
PRIVATE_FACTOR = 0.1
INDENT = "  "
ESTIMATED_SIGNATURE_CHARS = 40


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def personalization_for(
    snapshot: Snapshot, focus_files: Iterable[str], mentioned_idents: Iterable[str]
) -> dict[str, float]:
    """Teleport weights: focus files, files defining a mentioned identifier, files named like one."""
    weights: dict[str, float] = {}
    files = snapshot.files
    for path in focus_files:
        if path in files:
            weights[path] = weights.get(path, 0.0) + 1.0
    idents = [ident for ident in mentioned_idents if ident]
    if idents:
        definers = name_tables(snapshot).definers
        wanted = {squashed(ident) for ident in idents}
        for ident in idents:
            for path in definers.get(ident, ()):
                weights[path] = weights.get(path, 0.0) + 1.0
        for path in files:
            stem = posixpath.basename(path).split(".", 1)[0]
            if stem == "__init__" or stem == "index" or stem == "mod":
                stem = posixpath.basename(posixpath.dirname(path))  # a package is named by its directory
            if squashed(stem) in wanted:
                weights[path] = weights.get(path, 0.0) + 1.0
    if weights:
        # A floor for every file (a tenth of the boosted mass, spread evenly), so files the boosted ones do not
        # reach still rank by the graph instead of all tying at zero.
        floor = 0.1 * sum(weights.values()) / max(1, len(files))
        weights = {path: weights.get(path, 0.0) + floor for path in files}
    return weights


# A definition in the ranking: (-score, path, position of the definition in its file). Plain tuples: they sort
# best first as they are, and twenty thousand of them are made for every map.
_Tag = tuple[float, str, int]
_FLOORS = {kind: DEFINITION_FLOOR * weight for kind, weight in KIND_WEIGHTS.items()}
_DEFAULT_FLOOR = DEFINITION_FLOOR * 0.3


def _rank_tags(
    snapshot: Snapshot,
    ranks: Mapping[str, float],
    candidates: Sequence[str],
    mentioned: frozenset[str],
    focus_names: frozenset[str],
) -> list[_Tag]:
    """Every definition of the candidate files, best first: its file's rank times its share of the rank flowing
    into the file's definitions (plus a floor by kind, so unreferenced definitions still follow their file)."""
    graph = ranking(snapshot)
    tags: list[_Tag] = []
    append = tags.append
    floors, default_floor = _FLOORS, _DEFAULT_FLOOR
    for path in candidates:
        file_rank = ranks.get(path, 0.0)
        scores = graph.definition_scores(path)
        score_of = scores.get
        total = math.fsum(scores.values()) or 1.0  # fsum: the same whatever order the scores come in
        record = snapshot.files[path]
        definitions = record.definitions
        generated = is_generated(path, record.generated_by)
        for position, definition in enumerate(definitions):
            if definition[D_LOCAL]:
                continue  # a closure or a local class: no other file can name it, whatever shares its name
            if position and _continues_run(definitions[position - 1], definition):
                continue  # drawn as the run's first, which says how many follow it
            name = definition[D_NAME]
            # A constructor is named as its class (Java, C#, C++): the uses of the name are the class's.
            passed = score_of(name, 0.0) if definition[D_CONTAINER] != name else 0.0
            score = file_rank * (passed / total + floors.get(definition[D_KIND], default_floor))
            if name.startswith("_") and not name.startswith("__"):
                score *= PRIVATE_FACTOR
            elif name.endswith(")") and is_named_callback(name):
                # a test's or a route's callback (`app.get("/users")`): no name can link to it, so it has only its
                # kind's floor, which put an app's example routes before a library's own methods (express)
                score *= PRIVATE_FACTOR
            if name in mentioned:
                score *= MENTIONED_FACTOR
            else:
                if generated:  # generated code (`sdk.gen.ts`, `_pb2.py`) is read, not worked in
                    score *= PRIVATE_FACTOR
                if name in focus_names:
                    score *= FOCUS_REFERENCE_FACTOR
            append((-score, path, position))
    tags.sort()
    return tags


class _Renderer:
    """Renders prefixes of the ranked tags. The budget's binary search renders a dozen prefixes, and most files show
    the same definitions in each: a file's block is made once per set of definitions shown."""

    def __init__(self, snapshot: Snapshot, file_order: Mapping[str, int]) -> None:
        self.snapshot = snapshot
        self.file_order = file_order
        self._blocks: dict[tuple[str, frozenset[int]], tuple[list[str], list[str]]] = {}
        self._signatures: dict[str, tuple[str, ...]] = {}  # decoded once per file, not once per block

    def render(self, tags: Sequence[_Tag], bare_files: Sequence[str]) -> tuple[str, list[tuple[str, list[str]]]]:
        """The map text and, per listed file, the definition names shown."""
        chosen: dict[str, set[int]] = {}
        for tag in tags:
            chosen.setdefault(tag[1], set()).add(tag[2])
        for path in bare_files:
            chosen.setdefault(path, set())
        lines: list[str] = []
        listed: list[tuple[str, list[str]]] = []
        for path in sorted(chosen, key=lambda p: (self.file_order[p], p)):
            positions = chosen[path]
            if not positions:
                lines.append(path)
                listed.append((path, []))
                continue
            key = (path, frozenset(positions))
            block = self._blocks.get(key)
            if block is None:
                block = self._blocks[key] = self._block(path, positions)
            lines.extend(block[0])
            listed.append((path, block[1]))
        text = "\n".join(lines) + "\n" if lines else ""
        return text, listed

    def _block(self, path: str, positions: set[int]) -> tuple[list[str], list[str]]:
        """A file's lines in the map, and the names of the chosen definitions among them."""
        lines = [f"{path}:"]
        record = self.snapshot.files[path]
        definitions = record.definitions
        signatures = self._signatures.get(path)
        if signatures is None:
            signatures = self._signatures[path] = record.signatures()
        shown = self._with_containers(definitions, positions)
        shown_names: list[str] = []
        containers_shown = {definitions[p][D_NAME] for p in shown}
        beside = _beside_their_container(definitions)
        depths: dict[str, int] = {}  # how deep each line drawn so far is, by its name: a member goes one deeper
        for position in sorted(shown, key=lambda p: (definitions[p][D_START_LINE], p)):
            definition = definitions[position]
            container, signature = definition[D_CONTAINER], signatures[position]
            depth = 1
            if container is not None and container in containers_shown and position in beside:
                depth = depths.get(container, 1) + 1  # Ruby's `module Sinatra; class Request; def params`
            elif container is not None and not _names_its_type(signature, container):
                # a Go method or a Rust impl's function, away from its type: said whose it is, unless it says so
                signature += f" [{container}]"
            following = _run_after(definitions, position)
            if following:
                signature += f" [+{following} more]"
            lines.append(INDENT * depth + signature)
            depths[definition[D_NAME]] = depth
            if position in positions:
                shown_names.append(definition[D_NAME])
        return lines, shown_names

    @staticmethod
    def _with_containers(definitions: Sequence[tuple[Any, ...]], positions: set[int]) -> set[int]:
        """The chosen definitions plus the class lines of chosen methods, as context."""
        shown = set(positions)
        wanted = {definitions[p][D_CONTAINER] for p in positions if definitions[p][D_CONTAINER] is not None}
        if wanted:
            for position, definition in enumerate(definitions):
                if (
                    definition[D_NAME] in wanted
                    and definition[D_KIND] in ("class", "interface", "type", "module")
                    and not definition[D_LOCAL]
                ):
                    shown.add(position)
                    wanted.discard(definition[D_NAME])
        return shown


def _continues_run(previous: tuple[Any, ...], definition: tuple[Any, ...]) -> bool:
    """Whether `definition` follows one of the same name, kind and container: an overload after its siblings
    (Python's `@overload` stubs, TypeScript's signatures, Java's and C#'s constructors) or a property's setter after
    its getter. The map draws such a run as its first definition and a count: requests' auth.py took six lines
    for two classes' `__init__`."""
    return (
        previous[D_NAME] == definition[D_NAME]
        and previous[D_CONTAINER] == definition[D_CONTAINER]
        and previous[D_KIND] == definition[D_KIND]
        and not previous[D_LOCAL]
    )


def _run_after(definitions: Sequence[tuple[Any, ...]], position: int) -> int:
    """How many definitions continue the run that the one at `position` begins."""
    following = position + 1
    while following < len(definitions) and _continues_run(definitions[following - 1], definitions[following]):
        following += 1
    return following - position - 1


def _beside_their_container(definitions: Sequence[tuple[Any, ...]]) -> set[int]:
    """The members that follow their container with no top-level definition between (inside a class, say), by
    position: a Go method or a Rust impl's function may come after other types, and indented under the type above
    it, it would read as that type's."""
    beside: set[int] = set()
    open_names: set[str] = set()  # the last top-level definition and its members drawn after it
    for position in sorted(range(len(definitions)), key=lambda p: (definitions[p][D_START_LINE], p)):
        definition = definitions[position]
        if definition[D_LOCAL]:
            continue  # never drawn (Ruby's `def block.each` in a method's body)
        container = definition[D_CONTAINER]
        if container is None:
            open_names = {definition[D_NAME]}
            continue
        if container in open_names:
            beside.add(position)
            open_names.add(definition[D_NAME])
        else:  # drawn at the top level: what follows is not nested under the type above it either
            open_names = set()
    return beside


def _names_its_type(signature: str, container: str) -> bool:
    """Whether a member's signature names its type as the owner: a Go receiver `(c *Command)`, C++ `Type::name`."""
    owner = re.escape(container)
    return re.search(rf"^\s*func\s*\(\s*\w*\s*\*?\s*{owner}\b|\b{owner}::", signature) is not None


def _candidate_files(nodes: list[str], ordered: Sequence[int], token_budget: int) -> Sequence[int]:
    """The best-ranked files (`ordered` positions in `nodes`) that could possibly appear: each listed file costs at
    least its path line and, to be useful, one definition line; files past twice the budget's worth are never shown,
    so never scored."""
    cost = 0
    limit = 2 * token_budget * 4  # in characters
    for count, position in enumerate(ordered, 1):
        cost += len(nodes[position]) + 2 + ESTIMATED_SIGNATURE_CHARS
        if cost > limit:
            return ordered[:count]
    return ordered


def _best_candidates(
    nodes: list[str], ranks: Any, focus: frozenset[str], token_budget: int, best_first: Sequence[int] | None
) -> Sequence[int]:
    """`_candidate_files` of every file (`nodes`, ranked `ranks`: a vector in their order) but the focus, best rank
    first (then by path), as positions: the best few hundred are picked, and more only when the budget could show
    more, rather than all sorted. `best_first`: the order's first positions when a stored ranking kept them."""
    wanted = 512
    while True:
        best = _best_files(nodes, ranks, wanted, focus, best_first)
        candidates = _candidate_files(nodes, best, token_budget)
        if len(candidates) < len(best) or wanted + len(focus) >= len(nodes):
            return candidates
        wanted *= 4


def _best_files(
    nodes: list[str], ranks: Any, wanted: int, left_out: frozenset[str], best_first: Sequence[int] | None
) -> list[int]:
    """The positions of the first `wanted` of `nodes` but those `left_out`, by (-rank, path)."""
    kept = min(wanted + len(left_out), len(nodes))
    if best_first is None or len(best_first) < kept:
        best_first = best_positions(nodes, ranks, kept)
    return [position for position in best_first[:kept] if nodes[position] not in left_out][:wanted]


def repo_map(
    snapshot: Snapshot,
    focus_files: Sequence[str] = (),
    mentioned_idents: Sequence[str] = (),
    token_budget: int = DEFAULT_TOKEN_BUDGET,
) -> dict[str, Any]:
    """`{text, files: [{path, score, symbols}], tokens}` for workspace-relative focus paths. Never over budget."""
    focus = frozenset(focus_files)
    mentioned = frozenset(mentioned_idents)
    graph = ranking(snapshot)
    personalization = personalization_for(snapshot, focus, mentioned)
    vector = graph.pagerank_vector(personalization) if personalization else graph.base_vector
    nodes = graph.nodes
    positions = _best_candidates(nodes, vector, focus, token_budget, None if personalization else graph.best_first)
    candidates = [nodes[position] for position in positions]
    ranks = {nodes[position]: float(vector[position]) for position in positions}  # the only ranks a map shows
    file_order = {path: position for position, path in enumerate(candidates)}
    if token_budget <= 0 or not candidates:
        return {"text": "", "files": [], "tokens": 0}
    focus_names = frozenset(
        name for path in focus if path in snapshot.files for name in snapshot.files[path].reference_counts()
    )
    tags = _rank_tags(snapshot, ranks, candidates, mentioned, focus_names)
    tagged_files = {tag[1] for tag in tags}
    # After every definition: the remaining files, by rank, as bare path lines.
    bare = [path for path in candidates if path not in tagged_files]
    renderer = _Renderer(snapshot, file_order)

    def render(count: int) -> tuple[str, list[tuple[str, list[str]]]]:
        return renderer.render(tags[:count], bare[: max(0, count - len(tags))])

    # The largest prefix within the budget: found by doubling from one, then halving between the last prefix that
    # fit and the first that did not. A search starting from the middle of thousands of tags made blocks for
    # hundreds of files that could never fit (on the standard library, most of a map's time).
    total = len(tags) + len(bare)
    best_text, best_listed = "", []
    fitted, probe = 0, 1
    while probe <= total:
        text, listed = render(probe)
        if estimate_tokens(text) > token_budget:
            break
        best_text, best_listed = text, listed
        fitted, probe = probe, probe * 2
    low, high = fitted + 1, min(probe - 1, total)
    while low <= high:
        middle = (low + high) // 2
        text, listed = render(middle)
        if estimate_tokens(text) <= token_budget:
            best_text, best_listed = text, listed
            low = middle + 1
        else:
            high = middle - 1
    if not best_listed:
        # Not even the best definition with its file fits: list as many file paths as fit instead.
        low, high = 1, len(candidates)
        while low <= high:
            middle = (low + high) // 2
            text, listed = renderer.render((), candidates[:middle])
            if estimate_tokens(text) <= token_budget:
                best_text, best_listed = text, listed
                low = middle + 1
            else:
                high = middle - 1
    return {
        "text": best_text,
        "files": [
            {"path": path, "score": round(ranks.get(path, 0.0), 6), "symbols": names} for path, names in best_listed
        ],
        "tokens": estimate_tokens(best_text),
    }
