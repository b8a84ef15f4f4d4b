"""The repository's own history: which files changed together in its recent commits.

`read_history(root, max_commits)` runs `git log` once per (root, HEAD, max_commits) and keeps the answer, so a
second query on the same HEAD costs a few file reads (HEAD is read from `.git` directly, without git) and a query
after a commit, checkout or reset reads the log again. Without git, outside a repository, on a repository git
refuses, on an empty history or when git does not answer within the time cap, the history is `state == "none"`
with a one-word `reason`, and relevance simply goes without it.

Paths are what `git log --relative` prints from the workspace root: relative to it, limited to it. Renames are not
followed (`--no-renames`): a renamed file's history starts at the rename, and its old name, like any path that no
longer exists, matches no indexed file and is ignored. Following renames would need git's rename detection, which
reads file contents (and in a partial clone would fetch them); the co-change statistics do not need it.

`co_changes` turns the commits into evidence for a set of anchor files: for each other file, in how many of an
anchor's commits it changed too, and a strength in [0, 1] that weights each commit by recency (half-life
RECENCY_HALF_LIFE commits) and by its size (a commit of k files counts 1/sqrt(k - 1) for each pair in it; commits of
more than MAX_COMMIT_FILES files, such as reformatting or vendoring, are left out entirely).

Running git on a repository we did not write (the workspace may be hostile):
- fixed argv, no shell; `git log` runs no hooks, and a git builtin cannot be replaced by an alias;
- no program the repository's config names is run: `--no-ext-diff` (diff.external, GIT_EXTERNAL_DIFF),
  `--no-textconv` and `--name-only` (no diff drivers: contents are never compared), `--no-show-signature` and
  `-c log.showSignature=false` (gpg.program), no pager (not a terminal, and `--no-pager`), `-c core.fsmonitor=`
  (the fsmonitor hook, should anything touch the index), `-c protocol.allow=never` and GIT_NO_LAZY_FETCH=1 (a
  partial clone never fetches missing objects, which would run core.sshCommand or a remote helper);
- the environment's GIT_* variables are dropped, so nothing outside the repository redirects or configures it;
- git itself is found on PATH without its relative entries and without entries inside the workspace (it runs
  there: `.` on PATH would run a `git` the repository ships), and runs with that PATH;
- `-z` output (paths are never quoted or split) with `-c core.quotepath=off`, explicit `--relative`, `--no-renames`
  and a fixed `--format`, so the repository's log/diff settings cannot change what we parse;
- a time cap: git runs in a session of its own and the whole group is killed when the cap passes; the files read
  without git (`.git`, HEAD, refs) are read only when they are regular files, and only their first bytes.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_HISTORY_COMMITS = 300
MAX_HISTORY_COMMITS = 5000
GIT_TIMEOUT_SECONDS = 2.0
MAX_COMMIT_FILES = 50  # a commit touching more files (a reformat, a vendored library) says nothing about a pair
RECENCY_HALF_LIFE = 100  # commits: a commit this many commits ago counts half as much as the newest
COMMIT_SIZE_EXPONENT = 0.5  # a pair in a commit of k files counts 1 / (k - 1) ** this
PRIOR_COMMITS = 1.0  # a strength needs several commits: one co-change in an anchor's only commit is 1/2, not 1
FAILED_READ_RETRY_SECONDS = 60.0  # a timeout or a git failure is remembered this long (per HEAD), then retried
CACHE_ENTRIES = 16
SMALL_FILE_BYTES = 4096
PACKED_REFS_BYTES = 4 << 20

STATE_GIT = "git"
STATE_NONE = "none"
# Why there is no history (`History.reason`).
REASON_DISABLED = "disabled"  # asked for 0 commits
REASON_NOT_A_REPOSITORY = "not-a-repository"
REASON_NO_GIT = "no-git"  # no git binary on PATH
REASON_TIMEOUT = "timeout"
REASON_GIT_FAILED = "git-failed"  # git refused (e.g. a repository owned by another user) or crashed
REASON_EMPTY = "empty"  # no commits yet
REASON_NO_COMMITS_HERE = "no-commits"  # no commit touched the workspace's files

GIT_CONFIG = (
    "-c", "core.quotepath=off",
    "-c", "core.fsmonitor=",
    "-c", "log.showSignature=false",
    "-c", "protocol.allow=never",
)
LOG_OPTIONS = (
    "--no-renames", "--name-only", "--no-ext-diff", "--no-textconv", "--no-show-signature", "--no-mailmap",
    "--relative", "-z", "--format=%x1e%H %ct",
)

_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_COMMIT_HEADER = re.compile(r"\n?\x1e([0-9a-f]{40}|[0-9a-f]{64}) (\d+)")


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    time: int
    files: tuple[str, ...]  # relative to the workspace root, as git printed them


@dataclass(frozen=True)
class History:
    """The last commits that touched the workspace, newest first, or why there are none."""

    state: str
    reason: str | None = None
    head: str | None = None
    commits: tuple[Commit, ...] = ()
    _by_file: dict[str, list[int]] = field(default_factory=dict, repr=False, compare=False)
    _rates: dict[str, float] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for position, commit in enumerate(self.commits):
            if len(commit.files) <= MAX_COMMIT_FILES:
                for path in commit.files:
                    self._by_file.setdefault(path, []).append(position)

    def summary(self) -> dict[str, object]:
        """The fields a relevance result carries about its history signal."""
        if self.state != STATE_GIT:
            return {"history": STATE_NONE, "historyReason": self.reason}
        return {"history": STATE_GIT, "historyCommits": len(self.commits)}

    def commits_of(self, path: str) -> list[int]:
        """Positions (0 = newest) of the commits of at most MAX_COMMIT_FILES files that changed `path`."""
        return self._by_file.get(path, [])

    def before(self, sha: str, count: int) -> History:
        """The history as it was before commit `sha`: the `count` commits older than it (none when `sha` is not
        here). Replaying a commit with this history cannot see the commit itself or anything newer."""
        for position, commit in enumerate(self.commits):
            if commit.sha == sha:
                older = self.commits[position + 1 : position + 1 + count]
                if older:
                    return History(STATE_GIT, None, older[0].sha, older)
                break
        return History(STATE_NONE, REASON_NO_COMMITS_HERE)

    def change_rates(self) -> dict[str, float]:
        """How often each file changed, weighted by recency as co-changes are, as a share of all the commits' weight
        (commits of more than MAX_COMMIT_FILES files left out): the files a project keeps touching."""
        if self._rates or not self.commits:
            return self._rates  # computed once per history (a query per HEAD shares it)
        total = sum(0.5 ** (position / RECENCY_HALF_LIFE) for position in range(len(self.commits)))
        self._rates.update({path: sum(0.5 ** (position / RECENCY_HALF_LIFE) for position in positions) / total
                            for path, positions in self._by_file.items()})
        return self._rates


@dataclass(frozen=True, slots=True)
class CoChange:
    path: str
    anchor: str
    together: int  # commits that changed both
    anchor_commits: int  # commits that changed the anchor (huge ones left out, as in `together`)
    strength: float  # recency- and size-weighted share of the anchor's commits that changed `path`, in [0, 1]


def co_changes(history: History, anchors: Iterable[str], known: Container[str]) -> list[CoChange]:
    """What changed together with each anchor, limited to `known` paths (the indexed files) other than anchors."""
    anchor_set = set(anchors)
    found: list[CoChange] = []
    for anchor in sorted(anchor_set):
        positions = history.commits_of(anchor)
        if not positions:
            continue
        total_weight = 0.0
        weights: dict[str, float] = defaultdict(float)
        counts: dict[str, int] = defaultdict(int)
        for position in positions:
            commit = history.commits[position]
            recency = 0.5 ** (position / RECENCY_HALF_LIFE)
            total_weight += recency
            pair_weight = recency / max(1.0, len(commit.files) - 1) ** COMMIT_SIZE_EXPONENT
            for path in commit.files:
                if path != anchor and path not in anchor_set and path in known:
                    weights[path] += pair_weight
                    counts[path] += 1
        for path, weight in weights.items():
            strength = min(1.0, weight / (total_weight + PRIOR_COMMITS))
            found.append(CoChange(path, anchor, counts[path], len(positions), strength))
    return found


@dataclass(frozen=True, slots=True)
class ChangedCommit:
    """A non-merge commit with the lines it changed per file (added plus deleted; 0 for a binary file)."""

    sha: str
    subject: str
    lines: dict[str, int]


def read_changes(root: Path, max_commits: int, timeout: float | None = None) -> list[ChangedCommit]:
    """The last `max_commits` non-merge commits of HEAD that touched `root`, with their changed lines (newest first;
    empty when there is no history to read). Slower than `read_history` (git diffs each commit): for idle time."""
    git_dir = _find_git_dir(root)
    if git_dir is None or max_commits <= 0:
        return []
    deadline = time.monotonic() + (GIT_TIMEOUT_SECONDS if timeout is None else timeout)
    arguments = ["log", "--no-merges", "--no-renames", "--numstat", "--no-ext-diff", "--no-textconv",
                 "--no-show-signature", "--no-mailmap", "--relative", "-z", "--format=%x1e%H%x1f%s",
                 f"--max-count={max_commits}", "HEAD", "--", "."]
    output, _reason = _run_git(root, arguments, deadline)
    if output is None:
        return []
    commits = []
    for record in output.decode("utf-8", errors="surrogateescape").split("\x1e")[1:]:
        header, _, body = record.partition("\0")
        sha, _, subject = header.partition("\x1f")
        lines: dict[str, int] = {}
        for token in body.split("\0"):
            added, _, rest = token.removeprefix("\n").partition("\t")
            deleted, _, path = rest.partition("\t")
            if path:
                lines[path] = int(added) + int(deleted) if added.isdigit() and deleted.isdigit() else 0
        if _SHA.fullmatch(sha):
            commits.append(ChangedCommit(sha, subject, lines))
    return commits


# --- reading ----------------------------------------------------------------------------------------------------


@dataclass
class _Entry:
    history: History
    expires: float | None  # monotonic time; None: valid for as long as HEAD stays


_cache: OrderedDict[tuple[str, str, int], _Entry] = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def read_history(root: Path, max_commits: int = DEFAULT_HISTORY_COMMITS, timeout: float | None = None) -> History:
    """The last `max_commits` commits of HEAD that touched `root`, read once per HEAD; never slower than `timeout`
    (GIT_TIMEOUT_SECONDS unless given; plus the time to kill git) and never raises."""
    if timeout is None:
        timeout = GIT_TIMEOUT_SECONDS
    if max_commits <= 0:
        return History(STATE_NONE, REASON_DISABLED)
    git_dir = _find_git_dir(root)
    if git_dir is None:
        return History(STATE_NONE, REASON_NOT_A_REPOSITORY)
    deadline = time.monotonic() + timeout
    head = _read_head(git_dir)
    if head is None:  # an unborn branch, a reftable, a ref we could not follow: ask git
        head, reason = _git_head(root, deadline)
        if head is None:
            return History(STATE_NONE, reason)
    key = (str(root), head, max_commits)
    with _cache_lock:
        entry = _cache.get(key)
        if entry is not None and (entry.expires is None or entry.expires > time.monotonic()):
            _cache.move_to_end(key)
            return entry.history
    history = _read_log(root, head, max_commits, deadline)
    failed = history.state == STATE_NONE and history.reason in (REASON_TIMEOUT, REASON_GIT_FAILED)
    with _cache_lock:
        _cache[key] = _Entry(history, time.monotonic() + FAILED_READ_RETRY_SECONDS if failed else None)
        _cache.move_to_end(key)
        while len(_cache) > CACHE_ENTRIES:
            _cache.popitem(last=False)
    return history


def _read_log(root: Path, head: str, max_commits: int, deadline: float) -> History:
    output, reason = _run_git(root, ["log", *LOG_OPTIONS, f"--max-count={max_commits}", head, "--", "."], deadline)
    if output is None:
        return History(STATE_NONE, reason)
    commits = tuple(_parse_log(output))
    if not commits:
        return History(STATE_NONE, REASON_NO_COMMITS_HERE, head)
    return History(STATE_GIT, None, head, commits)


def _parse_log(output: bytes) -> Iterable[Commit]:
    """Records of `--format=%x1e%H %ct -z --name-only`: `\\x1e<sha> <time>\\0\\n<path>\\0<path>\\0...`."""
    text = output.decode("utf-8", errors="surrogateescape")
    sha: str | None = None
    when = 0
    files: list[str] = []
    for token in text.split("\0"):
        header = _COMMIT_HEADER.fullmatch(token)
        if header is not None:
            if sha is not None:
                yield Commit(sha, when, tuple(files))
            sha, when, files = header.group(1), int(header.group(2)), []
        elif token and sha is not None:
            files.append(token.removeprefix("\n"))
    if sha is not None:
        yield Commit(sha, when, tuple(files))


def _git_head(root: Path, deadline: float) -> tuple[str | None, str | None]:
    output, reason = _run_git(root, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], deadline)
    if output is None:
        # `rev-parse --verify --quiet` fails quietly on an unborn HEAD: a repository without commits.
        return None, REASON_EMPTY if reason == REASON_GIT_FAILED else reason
    sha = output.decode("ascii", errors="replace").strip()
    return (sha, None) if _SHA.fullmatch(sha) else (None, REASON_GIT_FAILED)


def _safe_path(root: Path) -> list[str]:
    """$PATH without relative entries and without entries inside the workspace: git runs with the workspace as its
    working directory, so `.` or `node_modules/.bin` on PATH would run a `git` the repository ships."""
    try:
        workspace = root.resolve()
    except OSError:
        workspace = root
    kept = []
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if not os.path.isabs(entry):
            continue
        real = Path(os.path.realpath(entry))
        if real == workspace or workspace in real.parents:
            continue
        kept.append(entry)
    return kept


def _git_binary(path: list[str]) -> str | None:
    for directory in path:
        candidate = os.path.join(directory, "git")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _git_environment(path: list[str]) -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    environment.update({"GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
                        "PATH": os.pathsep.join(path)})
    return environment


def _run_git(root: Path, arguments: list[str], deadline: float) -> tuple[bytes | None, str | None]:
    """git's stdout, or None and why. The process group is killed when the deadline passes."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None, REASON_TIMEOUT
    path = _safe_path(root)
    git = _git_binary(path)
    if git is None:
        return None, REASON_NO_GIT
    try:
        process = subprocess.Popen(
            [git, "--no-pager", *GIT_CONFIG, *arguments], cwd=root, env=_git_environment(path),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
        )
    except FileNotFoundError:
        return None, REASON_NO_GIT
    except OSError:
        return None, REASON_GIT_FAILED
    try:
        output, _ = process.communicate(timeout=remaining)
    except subprocess.TimeoutExpired:
        _kill(process)
        return None, REASON_TIMEOUT
    if process.returncode != 0:
        return None, REASON_GIT_FAILED
    return output, None


def _kill(process: subprocess.Popen[bytes]) -> None:
    # The whole session: a `git` that is a wrapper script leaves children holding our pipe, and reading it to the
    # end (what communicate() would do) would wait for them.
    if sys.platform == "win32":  # no process groups to signal; taskkill /T would be the way
        process.kill()
    else:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()
    if process.stdout is not None:
        process.stdout.close()
    process.wait()


# --- HEAD without git -------------------------------------------------------------------------------------------


def _read_small(path: Path, limit: int = SMALL_FILE_BYTES) -> str | None:
    """The start of a regular file (a FIFO or device named HEAD would block or never end), else None."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None
        with path.open("rb") as handle:
            return handle.read(limit).decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return None


def _find_git_dir(root: Path) -> Path | None:
    """The git directory of the repository holding `root` (`.git`, or where a `.git` file's `gitdir:` points)."""
    for directory in (root, *root.parents):
        dot_git = directory / ".git"
        try:
            mode = dot_git.stat().st_mode
        except (OSError, ValueError):
            continue
        if stat.S_ISDIR(mode):
            return dot_git
        text = _read_small(dot_git)
        if text is not None and text.startswith("gitdir:"):
            return directory / text[len("gitdir:"):].strip()
    return None


def _read_head(git_dir: Path) -> str | None:
    """HEAD's commit id read from the files (a detached sha, a loose ref, or packed-refs), else None."""
    head = _read_small(git_dir / "HEAD")
    if head is None:
        return None
    head = head.strip()
    if _SHA.fullmatch(head):
        return head
    if not head.startswith("ref: "):
        return None
    ref = head[len("ref: "):].strip()
    if not ref.startswith("refs/") or ".." in ref.split("/"):
        return None
    common = _read_small(git_dir / "commondir")  # a linked worktree keeps its branches in the main git directory
    common_dir = (git_dir / common.strip()) if common else git_dir
    for base in (git_dir, common_dir):
        value = _read_small(base / ref)
        if value is not None:
            value = value.strip()
            return value if _SHA.fullmatch(value) else None
    packed = _read_small(common_dir / "packed-refs", PACKED_REFS_BYTES)
    for line in (packed or "").splitlines():
        sha, _, name = line.partition(" ")
        if name == ref and _SHA.fullmatch(sha):
            return sha
    return None

