"""Relevance's structural and history signals that need no description: where a file sits beside the targets, the
names it shares with them, how it changed with them and how often the project changes it (`relevance.py` has the
description's signals and the import graph's; `relevance_weights.FEATURES` says what each feature's value is)."""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable, Set

from lsp_hub.index import history as history_module
from lsp_hub.index.file_kinds import bare_name, is_generated, is_test_file
from lsp_hub.index.graph_inputs import COMMON_NAMES, name_tables
from lsp_hub.index.path_tables import path_tables
from lsp_hub.index.records import D_CONTAINER, D_KIND, D_NAME
from lsp_hub.index.relevance_weights import Evidence
from lsp_hub.index.workspace import Snapshot

NAMES_FOR_FULL_OVERLAP = 5  # distinct shared names that count as a full overlap
MAX_DEFINERS = 20  # a name defined in more files than this points nowhere
MAX_NAMES_IN_REASON = 3
MAX_CO_CHANGE_REASONS = 2
_FIELD_KINDS = frozenset(("variable", "field"))  # a class's attribute, a struct's field (with a container)
# Weaker co-changes (e.g. once in a target's last 20 commits) still count, without a reason of their own.
MIN_CO_CHANGE_REASON = 1 / 16
MAX_SAME_NAME = 4  # a module name more files share than this is no twin
BUSY_FILES = 50  # the busiest files of each kind that get the prior


def beyond_fields(snapshot: Snapshot, name: str, paths: Iterable[str]) -> list[str]:
    """The files of `paths` where a plain lower-case word `name` is more than a field of a class or interface: such a
    field's name is a word of the data it holds (`currency`, `digits`), which a description uses without meaning
    the file. TypeScript's fields made hono's described files rank lower (MRR 0.77 against 0.71). A field spelled
    as code (`openapi_url`, `responseModel`) still counts."""
    if not (name.isalpha() and name.islower()):
        return list(paths)
    return [
        path
        for path in paths
        if any(
            definition[D_NAME] == name and (definition[D_KIND] not in _FIELD_KINDS or definition[D_CONTAINER] is None)
            for definition in snapshot.files[path].definitions
        )
    ]


def directory_signals(snapshot: Snapshot, targets: frozenset[str], evidence: Evidence) -> None:
    """Same directory, and modules named as a target. (Nearness in the tree beyond the directory was a feature too;
    every fit gave it no weight, and it made every file a candidate.)"""
    tables = path_tables(snapshot)
    target_dirs = {posixpath.dirname(target): target for target in sorted(targets)}
    target_names = {bare_name(target): target for target in sorted(targets) if not is_test_file(target)}
    # `index.ts`, `mod.rs`, `utils.py`: a name many modules have pairs nothing.
    target_names = {name: target for name, target in target_names.items()
                    if len(tables.by_bare_name.get(name, ())) <= MAX_SAME_NAME}
    same_directory = {path: target for directory, target in target_dirs.items()
                      for path in tables.by_directory.get(directory, ())}
    same_name = {path: target for name, target in target_names.items() for path in tables.by_bare_name.get(name, ())}
    for path in sorted(same_directory.keys() | same_name.keys()):
        if path in targets:
            continue
        same = same_directory.get(path)
        if same is not None:
            evidence.add(path, "same_directory", 1.0, f"same directory as target {same}")
        twin = same_name.get(path)
        if twin is not None and not is_test_file(path) and posixpath.basename(path) != "__init__.py":
            evidence.add(path, "same_name", 1.0, f"same name as target {twin}")


def name_overlap(snapshot: Snapshot, targets: frozenset[str], evidence: Evidence) -> None:
    """Files that reference names a target defines, and files defining names a target references (names defined
    in few files only, common names left out)."""
    tables = name_tables(snapshot)
    users: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))  # path -> target -> names
    defined: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for target in sorted(targets):
        record = snapshot.files[target]
        for name in record.defined_names():
            if name in COMMON_NAMES or len(tables.definers.get(name, ())) > MAX_DEFINERS:
                continue
            for path in tables.referencers.get(name, ()):
                if path not in targets:
                    users[path][target].add(name)
        for name in record.reference_uses():
            definers = tables.definers.get(name, ())
            if name in COMMON_NAMES or len(definers) > MAX_DEFINERS or target in definers:
                continue
            for path in definers:
                if path not in targets:
                    defined[path][target].add(name)
    for feature, found, verb in (("uses_target_names", users, "uses"), ("used_by_target", defined, "defines")):
        for path, by_target in found.items():
            target, names = max(by_target.items(), key=lambda item: (len(item[1]), item[0]))
            value = min(1.0, len(names) / NAMES_FOR_FULL_OVERLAP)
            shown = ", ".join(sorted(names)[:MAX_NAMES_IN_REASON]) + (
                ", ..." if len(names) > MAX_NAMES_IN_REASON else ""
            )
            relation = (
                f"{verb} {shown} that target {target} defines"
                if verb == "uses"
                else f"defines {shown} that target {target} uses"
            )
            evidence.add(path, feature, value, relation)


def co_changes(
    snapshot: Snapshot, history: history_module.History, targets: Set[str], described: Set[str], evidence: Evidence
) -> None:
    """Files that changed together with the targets, and (a feature of its own) with the files the description
    points at, in the repository's recent commits."""
    if history.state != history_module.STATE_GIT or not (targets or described):
        return
    found: dict[tuple[str, bool], list[history_module.CoChange]] = defaultdict(list)
    for change in history_module.co_changes(history, {*targets, *described}, snapshot.files):
        found[change.path, change.anchor in targets].append(change)
    for (path, of_target), changes in found.items():
        changes.sort(key=lambda change: (-change.strength, change.anchor))
        strength = sum(change.strength for change in changes)
        reasons = [
            _co_change_reason(change)
            for change in changes[:MAX_CO_CHANGE_REASONS]
            if change.strength >= MIN_CO_CHANGE_REASON
        ]
        if not reasons:
            evidence.weak_reasons.setdefault(path, _co_change_reason(changes[0]))
        if not of_target:
            features: tuple[str, ...] = ("co_change_described",)
        elif is_test_file(path):
            features = ("co_change", "co_change_test")
        else:
            features = ("co_change",)
        for feature in features:
            evidence.add(path, feature, strength, reasons[0] if reasons else None)
            for reason in reasons[1:]:
                evidence.note(path, feature, reason)
        if of_target:
            share = max(change.together / change.anchor_commits for change in changes)
            evidence.add(path, "co_change_share", share, None)


def _co_change_reason(change: history_module.CoChange) -> str:
    if change.anchor_commits == 1:
        return f"changed together with {change.anchor} in its last commit"
    return f"changed together with {change.anchor} in {change.together} of its last {change.anchor_commits} commits"


def busy_files(snapshot: Snapshot, history: history_module.History, targets: Set[str], evidence: Evidence) -> None:
    """A prior for the files the project keeps changing (its main test suites above all): the busiest tests and
    modules, in proportion to the busiest of each kind."""
    if history.state != history_module.STATE_GIT or not targets:
        return
    rates = {
        path: rate
        for path, rate in history.change_rates().items()
        if path in snapshot.files and path not in targets and not is_generated(path, snapshot.files[path].generated_by)
    }
    count = len(history.commits)
    for feature, is_test in (("busy_test", True), ("busy_module", False)):
        ranked = sorted(((rate, path) for path, rate in rates.items() if is_test_file(path) == is_test), reverse=True)
        if not ranked:
            continue
        top = ranked[0][0]
        for rate, path in ranked[:BUSY_FILES]:
            changed = len(history.commits_of(path))
            evidence.add(
                path,
                feature,
                rate / top,
                f"one of the files the project changes most ({changed} of its last {count} commits)",
            )
