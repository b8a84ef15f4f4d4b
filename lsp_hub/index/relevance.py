"""Which files a task described in words (and optionally anchored at target files) is likely to touch.

Signals, each adding to a file's score with a short reason:
- the description or the targets name the file (its path or file name);
- it defines a symbol named in the description (identifiers as written, and words split on camelCase and
  snake_case with stop words dropped, joined back in runs so "user cache" finds `UserCache`);
- it uses such a symbol (written as in the code or by several words), resolved to its definition;
- it defines names holding a rare word of the description (`resolve_redirects` for "redirect"), by how rare;
- its path contains a word of the description;
- it imports a target or is imported by one; further along the import graph (either way) the signal decays by half
  per step;
- it is in the same directory (package) as a target;
- it is the test of a target (`test_x.py`, `x_test.go`, `x.test.ts`, `XTest.java`) or the subject of a target test;
- its reference-graph PageRank personalized toward the targets (or the files the description points at);
- it changed together with a target (or, counting half, with a file the description points at) in the
  repository's recent commits (`history.py`: `git log`, weighted by recency and commit size, read once per HEAD).
Generated files (bundles, minified, source maps, vendored, lock files: `file_kinds`) that only words of the
description matched are left out; a test never ranks above the module it tests; with no target and nothing matched,
the project's most central files answer (`basis: "central"`). Targets themselves are never in the result.
Beside those, the signals of `relevance_signals.py`: nearby directories, modules named as a target, names shared
with a target either way, and the files the project changes most. Each signal is a feature of the file
(`relevance_weights.FEATURES`); the score is their weighted sum, with the repository's own weights when the hub has
fitted them from its history (`weights: "repository"`, `relevance_tuning.py`) and the defaults otherwise
(`weights: "default"`); reasons come strongest contribution first.
The result says whether the history was used (`history: "git"`, with
`historyCommits`) or why not (`history: "none"`, with `historyReason`).
"""

from __future__ import annotations

import math
import posixpath
import re
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lsp_hub.index import history as history_module
from lsp_hub.index import relevance_signals, relevance_tuning
from lsp_hub.index.file_kinds import (
    bare_name,
    definition_places,
    is_example_path,
    is_generated,
    is_named_callback,
    is_test_file,
    looks_minified,
    test_subject,
)
from lsp_hub.index.graph import use_resolver
from lsp_hub.index.graph_inputs import COMMON_NAMES, import_graph, name_tables
from lsp_hub.index.graph_store import ranking
from lsp_hub.index.path_tables import name_stems, path_tables, singular, split_words, squashed
from lsp_hub.index.relevance_weights import Evidence, Weights
from lsp_hub.index.workspace import Snapshot

DEFAULT_TOP_N = 10
MAX_DEPTH = 4
MAX_SYMBOL_REASONS = 3

# Feature values (`relevance_weights.FEATURES`); the weights say how much each counts.
SYMBOL_EXACT_SCORE = 3.0  # an identifier written as in the code
SYMBOL_WORDS_SCORE = 2.0  # several description words that together spell the name
SYMBOL_WORD_SCORE = 1.0  # one description word that is the whole name
SYMBOL_MADE_OF_SCORE = 1.5  # a name made of several description words, in any order, and stop words
SYMBOL_PART_SCORE = 0.5  # a distinctive description word inside names the file defines (`resolve_redirects`)
PART_MIN_LENGTH = 5  # shorter words are inside too many unrelated names ("host" in `ghost`)
PART_MIN_FILES, PART_MAX_SHARE = 8, 0.1  # a word inside the names of more files than both points nowhere
PART_FULL_NAMES = 3  # names holding the word that give a file the whole score
MANY_USERS = 10  # users of a name beyond this count less each
# The files the description points at: this much by these (fixed) weights of the description's signals, whatever
# the fitted weights, so which files anchor the history and PageRank does not move with a fit.
DESCRIBED_MIN_SCORE = 2.0
DESCRIBED_WEIGHTS = Weights({"mention": 5.0, "defines_named": 1.0, "uses_named": 1.5, "path_words": 1.0})
CENTRAL_FILES = 10
SUBJECT_SHARE = 0.25  # a module moves above its test when it has this share of the test's score
CENTRAL_SCORE = 2.0  # the most central file's score when nothing matched; others in proportion

_STOP_WORDS_TEXT = """
a an and are as at be but by can could do does for from get has have how i if in into is it its let make me my need
new not of on or our please set should so some that the their then there this to too use uses using want was we
what when where which while who why will with would you your fix add update change remove bug issue error code file
files function method class test tests support handle when all any also more same each
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
# The stop words a name made of the description's words may carry too (`get_host_header`, `test_follow_redirects`):
# the few that names are built with, since each is tried at every name (the whole list cost 25 ms a question on the
# standard library).
NAME_FILLERS = frozenset(
    ("get", "set", "is", "has", "to", "from", "make", "new", "add", "update", "remove", "handle", "test", "do", "can")
)

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATHLIKE = re.compile(r"[\w./-]+\.\w+")


# A description alone (no target) ranks examples' and docs' files at this share of their score: fastapi's 700 files of
# docs_src matched its words before the library did. bench/relevance_cochange.py, the subject line alone against
# every file the commit changed, 5 repositories: held-out 0.53/0.62/0.57 (recall@5/@10/MRR) against 0.52/0.61/0.55,
# fastapi 0.30/0.41/0.25 against 0.24/0.35/0.19; tests likewise at 0.5 cost hono 0.18 of recall@5 (its commits change
# tests with the code), so tests keep their score.
EXAMPLE_FACTOR = 0.5


def relevant_files(
    snapshot: Snapshot,
    description: str,
    targets: Sequence[str] = (),
    top_n: int = DEFAULT_TOP_N,
    history_commits: int = history_module.DEFAULT_HISTORY_COMMITS,
    weights: Weights | None = None,
) -> dict[str, Any]:
    """`{files: [{path, score, reasons}], weights, basis, history, historyCommits | historyReason}` for
    workspace-relative target paths (not included in the result); `history_commits` recent commits are read for
    co-changes (0: none); `weights` by default the repository's fitted ones when there are, else the defaults."""
    if weights is None:
        weights = relevance_tuning.weights_for(snapshot)
    target_set = frozenset(path for path in targets if path in snapshot.files)
    history = history_module.read_history(snapshot.root, history_commits)
    evidence = collect_evidence(snapshot, description, target_set, history)
    scored = {path: evidence.score(path, weights) for path in evidence.features}
    if not target_set:  # a description alone: the code it describes before the examples that show its use
        for path in scored:
            if is_example_path(path):
                scored[path] *= EXAMPLE_FACTOR
    ranked = sorted(
        (
            (path, score)
            for path, score in scored.items()
            if path not in target_set and score > 0 and not _generated_on_words_alone(snapshot, path, evidence)
        ),
        key=lambda item: (-item[1], item[0]),
    )
    basis = "matched"
    reasons = {path: evidence.reasons_of(path, weights) for path, _score in ranked[: max(0, 4 * top_n)]}
    if not ranked and not target_set:
        ranked, reasons, basis = *_central_files(snapshot), "central"
    ranked, moved_before = _subjects_before_their_tests(ranked)
    files: list[dict[str, Any]] = []
    for path, score in ranked[: max(0, top_n)]:
        entry: dict[str, Any] = {
            "path": path,
            "score": round(score, 3),
            "reasons": list(reasons.get(path) or evidence.reasons_of(path, weights)),
        }
        if (test := moved_before.get(path)) is not None:  # its score is lower than the test's: say why it is first
            entry["reasons"].append(f"listed before its test {test}, which scored higher")
            entry["listedBefore"] = test
        files.append(entry)
    return {
        "files": files,
        # "central": nothing in the description matched a file or a name, and there was no target: the project's
        # most central files stand in, so an agent with a vague task still gets a place to start.
        "basis": basis,
        # "repository": weights fitted on this repository's own recent commits; "default": fitted across others.
        "weights": weights.source,
        **history.summary(),
    }


def collect_evidence(
    snapshot: Snapshot, description: str, target_set: frozenset[str], history: history_module.History
) -> Evidence:
    """Every signal's feature values and reasons for the task (targets given as indexed paths)."""
    evidence = Evidence()
    _mentions(snapshot, description, evidence)
    words = _description_words(description)
    named = _symbols(snapshot, description, words, evidence)
    _users(snapshot, named, evidence)
    _path_words(snapshot, words, evidence)
    # The files the description points at, before the targets' neighbours add to anyone's score.
    described = {path for path in evidence.features if evidence.score(path, DESCRIBED_WEIGHTS) >= DESCRIBED_MIN_SCORE}
    if target_set:
        _import_neighbours(snapshot, target_set, evidence)
        relevance_signals.directory_signals(snapshot, target_set, evidence)
        _test_pairs(snapshot, target_set, evidence)
        relevance_signals.name_overlap(snapshot, target_set, evidence)
        relevance_signals.busy_files(snapshot, history, target_set, evidence)
    anchors = set(target_set) or described
    _pagerank(snapshot, anchors, evidence, "the targets" if target_set else "the files the description names")
    relevance_signals.co_changes(snapshot, history, target_set, described - target_set, evidence)
    for target in target_set:  # a target is never its own candidate
        evidence.features.pop(target, None)
    return evidence


def _generated_on_words_alone(snapshot: Snapshot, path: str, scores: Evidence) -> bool:
    """A bundle, minified copy, source map, vendored or generated file that only a word of the description
    matched: it would take a slot from the code a person edits."""
    if path in scores.beyond_words:
        return False
    record = snapshot.files.get(path)
    if is_generated(path, record.generated_by if record is not None else ""):
        return True
    return record is not None and looks_minified(record.size, record.line_count)


def _central_files(snapshot: Snapshot) -> tuple[list[tuple[str, float]], dict[str, list[str]]]:
    """The project's most central source files (reference-graph PageRank), tests and generated files left out."""
    ranks, files = ranking(snapshot).base_ranks, snapshot.files
    candidates = sorted(
        (path for path in files if not is_test_file(path) and not is_generated(path, files[path].generated_by)),
        key=lambda path: (-ranks.get(path, 0.0), path),
    )[:CENTRAL_FILES]
    best = max((ranks.get(path, 0.0) for path in candidates), default=0.0) or 1.0
    reason = ["one of the project's most central files (nothing in the description matched a file or a name)"]
    central = [(path, CENTRAL_SCORE * ranks.get(path, 0.0) / best) for path in candidates]
    return central, {path: reason for path in candidates}


def _subjects_before_their_tests(
    ranked: list[tuple[str, float]],
) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """A test never ranks above the module it tests when both are listed and the module has a fair share of its
    score: the module is what the task changes (a module only the busy-file prior lists stays where it is). Returns
    the order and, for each module moved, the test it was moved before."""
    position = {path: index for index, path in enumerate(path for path, _score in ranked)}
    score_of = dict(ranked)
    subjects = _Subjects(path for path, _score in ranked if not is_test_file(path))
    order: list[tuple[str, float]] = []
    placed: set[str] = set()
    moved_before: dict[str, str] = {}
    for path, score in ranked:
        if path in placed:
            continue
        subject = test_subject(path) if is_test_file(path) else None
        for module in subjects.of(path, subject) if subject else ():
            if module not in placed and position[module] > position[path] and score_of[module] >= SUBJECT_SHARE * score:
                order.append((module, score_of[module]))
                placed.add(module)
                moved_before[module] = path
        order.append((path, score))
        placed.add(path)
    return order, moved_before


class _Subjects:
    """The modules a test tests, by its subject's name: the one beside it, else the only one of that name (hono has
    dozens of `index.ts`; `index.test.ts` tests the one in its directory)."""

    def __init__(self, modules: Iterable[str]) -> None:
        self.by_name: dict[str, list[str]] = defaultdict(list)
        self.by_place: dict[tuple[str, str], list[str]] = defaultdict(list)
        for module in modules:
            name = bare_name(module)
            self.by_name[name].append(module)
            self.by_place[name, posixpath.dirname(module)].append(module)

    def of(self, test: str, subject: str) -> list[str]:
        beside = self.by_place.get((subject, posixpath.dirname(test)))
        if beside:
            return beside
        named = self.by_name.get(subject, [])
        return named if len(named) == 1 else []


def _description_words(description: str) -> list[str]:
    words: list[str] = []
    for identifier in _IDENTIFIER.findall(description):
        parts = split_words(identifier)
        words.extend(word for word in parts if word not in STOP_WORDS and len(word) > 1)
        if len(parts) > 1 and identifier.isalpha():
            # The word as written too: "GZip" splits into g and zip, and neither finds gzip.py or GZipMiddleware.
            words.append(identifier.lower())
    return words


def _mentions(snapshot: Snapshot, description: str, scores: Evidence) -> None:
    mentioned = {token.strip("./").lower() for token in _PATHLIKE.findall(description)}
    if not mentioned:
        return
    for path in snapshot.files:
        lowered = path.lower()
        name = posixpath.basename(lowered)
        if lowered in mentioned or name in mentioned or any(lowered.endswith("/" + m) for m in mentioned):
            scores.add(path, "mention", 1.0, "mentioned in the description")


def _word_runs(words: list[str]) -> dict[str, float]:
    """Runs of consecutive words, squashed, with the score of a name they spell: "user cache" and "user_cache" both
    find UserCache; a word alone of four letters or more finds a name that is that word."""
    runs: dict[str, float] = {}
    for length in (3, 2):
        for start in range(len(words) - length + 1):
            run = words[start : start + length]
            runs.setdefault("".join(run), SYMBOL_WORDS_SCORE)
            runs.setdefault("".join(singular(word) for word in run), SYMBOL_WORDS_SCORE)
    for word in words:
        if len(word) > 3:
            runs.setdefault(word, SYMBOL_WORD_SCORE)
            runs.setdefault(singular(word), SYMBOL_WORD_SCORE)
    return runs


def names_spelled_by(snapshot: Snapshot, description: str) -> list[str]:
    """The public names that runs of the description's words spell (`GZipMiddleware` for "GZip middleware"), in
    name order: what `context` shows beside the identifiers the description writes as in the code."""
    by_squashed = path_tables(snapshot).names_by_squashed
    return sorted(
        name
        for run, score in _word_runs(_description_words(description)).items()
        if score >= SYMBOL_WORDS_SCORE
        for name in by_squashed.get(run, ())
        if not name.startswith("_")
    )


def _symbols(snapshot: Snapshot, description: str, words: list[str], scores: Evidence) -> set[str]:
    """Score the files defining names the description spells; returns the names spelled distinctly (written as
    in the code, or by several words)."""
    definers = name_tables(snapshot).definers
    distinct: set[str] = set()
    matched: dict[str, list[tuple[float, str]]] = defaultdict(list)
    exact = {identifier for identifier in _IDENTIFIER.findall(description) if len(identifier) > 2}
    exact = {identifier for identifier in exact if identifier.lower() not in STOP_WORDS}
    runs = _word_runs(words)
    # The names written exactly, and those a run of words spells (looked up by their squashed spelling).
    tables = path_tables(snapshot)
    by_squashed = tables.names_by_squashed
    candidates = {name for name in exact if name in definers}
    candidates.update(name for run in runs for name in by_squashed.get(run, ()))
    # And the names made of several of its words in any order (private ones too: two words are distinctive enough),
    # found among the names holding any of them, which also score the files whose names hold a rare one.
    asked = {word for word in words if len(word) > 2}
    stems = name_stems(asked)
    holding = tables.names_holding(stems)
    made_of = set(tables.names_made_of(asked, NAME_FILLERS, holding)) if len(stems) > 1 else set()
    candidates.update(made_of)
    for name in sorted(candidates):
        paths = relevance_signals.beyond_fields(snapshot, name, definers[name])
        if name in exact:
            score = SYMBOL_EXACT_SCORE
        else:
            # private names match a run of words only when written exactly
            score = runs.get(squashed(name), 0.0) if not name.startswith("_") else 0.0
            if not score and name in made_of:
                score = SYMBOL_MADE_OF_SCORE
            if not score:
                continue
        if not paths or len(paths) > 20:
            continue  # a name defined everywhere points nowhere
        if score >= SYMBOL_WORDS_SCORE:
            distinct.add(name)
        for path in paths:  # a C header's prototype and its source's body are one place
            matched[path].append((score / max(1.0, definition_places(paths) ** 0.5), name))
    for path, found in matched.items():
        found.sort(key=lambda item: (-item[0], item[1]))
        total = sum(score for score, _name in found[:MAX_SYMBOL_REASONS])
        names = ", ".join(name for _score, name in found[:MAX_SYMBOL_REASONS])
        scores.add(path, "defines_named", total, f"defines {names} named in the description", by_words=True)
    _words_inside_names(len(snapshot.files), by_squashed, definers, holding, candidates, scores)
    return distinct


def _words_inside_names(
    file_count: int,
    names_by_squashed: Mapping[str, list[str]],
    definers: Mapping[str, tuple[str, ...]],
    holding: Mapping[str, set[str]],
    scored: set[str],
    scores: Evidence,
) -> None:
    """Score the few files whose names hold a distinctive word of the description (`holding`: the squashed names
    holding each word, `PathTables.names_holding`): requests' "redirect should drop the Authorization header" named
    no name of sessions.py, which defines `resolve_redirects`, `get_redirect_target` and `SessionRedirectMixin`. A
    word inside the names of many files says nothing."""
    if file_count < 2:
        return
    limit = max(PART_MIN_FILES, PART_MAX_SHARE * file_count)
    by_stem: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    common: set[str] = set()  # inside the names of more files than the limit: no longer counted
    for key, held in holding.items():
        for stem in held:
            if len(stem) < PART_MIN_LENGTH or stem in STOP_WORDS or stem in common:
                continue
            files = by_stem[stem]
            for name in names_by_squashed[key]:
                # A test's or a route's callback (`it("should encode the url")`) is named in prose, not a name.
                if name not in scored and not is_named_callback(name):
                    for path in definers.get(name, ()):
                        files[path].append(name)
            if len(files) > limit:
                common.add(stem)
    per_file: dict[str, tuple[Counter[str], list[tuple[float, str]]]] = {}  # names held, (score, word) per word
    for stem in sorted(by_stem.keys() - common):
        files = by_stem[stem]
        if not files:
            continue  # its names are scored already, or defined by no file
        # The rarer the word among the files' names, the more it says (inverse document frequency, 0 to 1); a file
        # with several such names is more about it than a file with one.
        rarity = math.log(file_count / len(files)) / math.log(file_count)
        for path, names in files.items():
            distinct = set(names)
            found = per_file.setdefault(path, (Counter(), []))
            found[0].update(distinct)
            found[1].append((SYMBOL_PART_SCORE * rarity * min(1.0, len(distinct) / PART_FULL_NAMES), stem))
    for path, (names_held, stems) in per_file.items():
        # One reason per file: the names holding the most of the words, then the words.
        best = sorted(names_held.items(), key=lambda item: (-item[1], item[0]))[:MAX_SYMBOL_REASONS]
        shown = ", ".join(name for name, _count in best)
        words_held = ", ".join(f"'{stem}'" for _score, stem in sorted(stems, key=lambda item: (-item[0], item[1])))
        reason = f"defines {shown}, with {words_held} in the names"
        scores.add(path, "defines_named", sum(score for score, _stem in stems), reason, by_words=True)


def _users(snapshot: Snapshot, names: set[str], scores: Evidence) -> None:
    """Files whose uses of a name the description spells lead to its definition (as the index resolves them):
    the code a change to that definition may break."""
    tables = name_tables(snapshot)
    resolver = use_resolver(snapshot)
    for name in sorted(names):
        if name in COMMON_NAMES:
            continue
        definers = set(tables.definers.get(name, ()))
        users = [
            source
            for source in tables.referencers.get(name, ())
            if source not in definers
            and any(
                definers.intersection(resolver.targets(source, name, receiver))
                for receiver in snapshot.files[source].reference_uses().get(name, {})
            )
        ]
        if not users:
            continue
        score = min(1.0, (MANY_USERS / len(users)) ** 0.5)
        for source in users:
            scores.add(source, "uses_named", score, f"uses {name} named in the description", by_words=True)


def _path_words(snapshot: Snapshot, words: list[str], scores: Evidence) -> None:
    interesting = {word for word in words if len(word) > 2}
    if not interesting:
        return
    # "dependency" finds fastapi/dependencies/, "websocket" websockets.py: by their singulars
    by_word = path_tables(snapshot).by_singular_path_word
    found: dict[str, list[str]] = defaultdict(list)
    written: dict[str, str] = {}  # singular -> the description's word, each counted once
    for word in sorted(interesting):
        written.setdefault(singular(word), word)
    for one, word in written.items():
        for path in by_word.get(one, ()):
            found[path].append(word)
    for path, hits in found.items():
        if hits:
            scores.add(
                path, "path_words", min(len(hits), 2), f"path matches {', '.join(repr(w) for w in hits)}", by_words=True
            )


def _import_neighbours(snapshot: Snapshot, targets: frozenset[str], scores: Evidence) -> None:
    graph = import_graph(snapshot)
    for target in sorted(targets):
        for dependency in graph.successors(target):
            scores.add(dependency, "imported_by_target", 1.0, f"imported by target {target}")
        for dependent in graph.predecessors(target):
            scores.add(dependent, "imports_target", 1.0, f"imports target {target}")
    # Further away, either direction, half as much per step.
    distance: dict[str, int] = dict.fromkeys(targets, 0)
    queue = deque(targets)
    while queue:
        path = queue.popleft()
        depth = distance[path]
        if depth >= MAX_DEPTH:
            continue
        for neighbour in _neighbours(graph, path):
            if neighbour not in distance:
                distance[neighbour] = depth + 1
                queue.append(neighbour)
    for path, depth in distance.items():
        if depth >= 2:
            scores.add(path, "import_distance", 0.5 ** (depth - 1), f"{depth} imports away from the targets")


def _neighbours(graph: Any, path: str) -> Iterable[str]:
    yield from graph.successors(path)
    yield from graph.predecessors(path)


def _test_pairs(snapshot: Snapshot, targets: frozenset[str], scores: Evidence) -> None:
    """The tests of the target modules and the modules of the target tests (`_Subjects` says which go together)."""
    target_modules = {target for target in targets if not is_test_file(target)}
    names = {bare_name(target) for target in target_modules} | {
        subject for target in targets if (subject := test_subject(target))
    }
    tables = path_tables(snapshot)
    subjects = _Subjects(
        path for name in sorted(names) for path in tables.by_bare_name.get(name, ()) if not is_test_file(path)
    )
    tests = sorted({(path, subject) for subject in names for path in tables.tests_by_subject.get(subject, ())})
    for path, subject in tests:
        tested = subjects.of(path, subject)
        if path in targets:
            for module in tested:
                scores.add(module, "test_pair", 1.0, f"tested by target {path}")
        else:
            for module in target_modules.intersection(tested):
                scores.add(path, "test_pair", 1.0, f"test of target {module}")


def _pagerank(snapshot: Snapshot, anchors: set[str], scores: Evidence, anchored_at: str) -> None:
    if not anchors:
        return
    graph = ranking(snapshot)
    anchored = [graph.index[path] for path in anchors if path in graph.index]
    if len(graph.nodes) <= len(anchored):
        return
    import numpy as np

    # The rank vector in node order, read without a dictionary of every file's rank (30 ms at 100,000 files).
    ranks = np.array(graph.pagerank_vector(dict.fromkeys(anchors, 1.0)), dtype=float)
    ranks[anchored] = -1.0  # not among the others
    best = float(ranks.max())
    if best <= 0:
        return
    # Only files that stand out: above the rank every file would have if all were equal.
    floor = 1.0 / len(graph.nodes)
    for position in np.flatnonzero(ranks > floor).tolist():
        rank = float(ranks[position])
        scores.add(graph.nodes[position], "pagerank", rank / best, f"central to {anchored_at} in the reference graph")
