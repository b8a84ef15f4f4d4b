"""The tallies of bench/callers_accuracy.py: call sites found against the truth's, and the figures they give."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Site = tuple[str, int, int, int]  # uri, line, start character, end character (the end on the same line)


@dataclass
class Tally:
    truth: int = 0
    found: int = 0
    right: int = 0  # found sites that are in the truth
    recalled: int = 0  # truth sites that were found
    missed_reads: int = 0  # missed truth sites not written as a call: property reads basedpyright lists as calls
    # Found sites not in the truth, in files where the server lists no call of the definition: mostly calls it
    # cannot type (a pytest fixture's `app.route()`, a file outside every tsconfig), where the index is often right.
    unseen_extras: int = 0
    misses: list[str] = field(default_factory=list)
    extras: list[str] = field(default_factory=list)

    def add(self, truth: list[Site], found: list[Site], describe: Any, written_as_call: Any) -> None:
        self.truth += len(truth)
        self.found += len(found)
        files_with_truth = {site[0] for site in truth}
        for site in found:
            if any(same_site(site, other) for other in truth):
                self.right += 1
            else:
                self.extras.append(describe(site))
                self.unseen_extras += site[0] not in files_with_truth
        for site in truth:
            if any(same_site(site, other) for other in found):
                self.recalled += 1
            else:
                self.misses.append(describe(site))
                self.missed_reads += not written_as_call(site)

    def line(self, label: str) -> str:
        recall = self.recalled / self.truth if self.truth else 1.0
        precision = self.right / self.found if self.found else 1.0
        return (
            f"{label:<24} recall {recall:7.2%} ({self.recalled}/{self.truth})   "
            f"precision {precision:7.2%} ({self.right}/{self.found})   "
            f"missed property reads {self.missed_reads}   "
            f"not in the truth where the server lists no call {self.unseen_extras}"
        )


def same_site(a: Site, b: Site) -> bool:
    return a[0] == b[0] and a[1] == b[1] and (a[2] == b[2] or (a[2] < b[3] and b[2] < a[3]))


def site_of(location: dict[str, Any]) -> Site:
    start, end = location["range"]["start"], location["range"]["end"]
    end_character = end["character"] if end["line"] == start["line"] else 1 << 30
    return (location["uri"], start["line"], start["character"], end_character)


def unique_sites(sites: list[Site]) -> list[Site]:
    kept: list[Site] = []
    for site in sites:
        if not any(same_site(site, other) for other in kept):
            kept.append(site)
    return kept


def add_tally(total: Tally, tally: Tally) -> None:
    for name in ("truth", "found", "right", "recalled", "missed_reads", "unseen_extras"):
        setattr(total, name, getattr(total, name) + getattr(tally, name))
    total.misses.extend(tally.misses)
    total.extras.extend(tally.extras)


def figures(tally: Tally) -> str:
    recall = tally.recalled / tally.truth if tally.truth else 1.0
    precision = tally.right / tally.found if tally.found else 1.0
    seen = tally.found - tally.unseen_extras
    precision_seen = tally.right / seen if seen else 1.0
    return f"{recall:6.3f} / {precision:5.3f} / {precision_seen:5.3f} ({tally.truth:4})"
