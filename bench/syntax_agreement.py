"""How often `lspHub.syntaxCheck` agrees with the languages' compilers: tree-sitter alone against the new checkers.

    python bench/syntax_agreement.py [--python-files N] [--typescript-files N] [--seed S]

Corpora (sampled with a fixed seed, the sample sizes printed):
- Python: the standard library's .py files (site-packages left out), each as it is and four seeded mutants (one
  deleted colon, bracket, quote, keyword). The judge is `compile(source, path, "exec")`.
- TypeScript/JavaScript: the .ts/.d.ts/.tsx/.js/.mjs/.cjs/.jsx files under .tools/npm/node_modules (duplicates by
  content dropped, files over the hub's 1 MB cap left out), each as it is and four mutants likewise. The judge is
  TypeScript's parser (`ts.createSourceFile` then its parseDiagnostics, what `tsc` reports as syntax errors), run
  by this script in a node process of its own, apart from the hub's helper.

Printed per corpus and checker: agreement (broken/valid verdict equal to the judge's), valid texts flagged (false
positives), broken texts whose first reported error is on the judge's first error line (±1), and the warm time of
a check of a 2,000-line file through `syntax_check_result` (median and fastest of 30 after 10 warm-up checks, with
the load average: on a shared machine the median moves with the neighbours' work).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_hub.index.syntax import check_syntax, lsp_range
from lsp_hub.index.syntax_checkers import (
    NO_EXTERNAL_CHECKERS,
    SyntaxCheckers,
    syntax_check_result,
    syntax_language_for_path,
)
from lsp_hub.proxy.syntax_parsers import syntax_checkers_for

STDLIB = Path("/root/.pyenv/versions/3.11.7/lib/python3.11")
REPO = Path(__file__).resolve().parent.parent
NODE_MODULES_CANDIDATES = (REPO / ".tools/npm/node_modules", Path("/work/main/.tools/npm/node_modules"))
MAX_FILE_BYTES = 1_048_576  # the hub's max_document_bytes: larger documents are not checked
TYPESCRIPT_SUFFIXES = (".ts", ".tsx", ".mts", ".cts", ".js", ".mjs", ".cjs", ".jsx")

PYTHON_KEYWORDS = ("def", "class", "if", "for", "while", "return", "import", "from", "in", "else", "elif", "try",
                   "except", "with", "lambda", "not", "and", "yield", "pass", "raise")
TYPESCRIPT_KEYWORDS = ("function", "const", "let", "var", "return", "class", "if", "else", "for", "while", "import",
                       "export", "from", "new", "interface", "type", "extends", "case", "of", "in")
MUTATIONS: dict[str, dict[str, str]] = {
    "python": {"colon": r":", "bracket": r"[()\[\]{}]", "quote": r"['\"]",
               "keyword": r"\b(?:" + "|".join(PYTHON_KEYWORDS) + r")\b"},
    "typescript": {"colon": r":", "bracket": r"[()\[\]{}]", "quote": r"['\"`]",
                   "keyword": r"\b(?:" + "|".join(TYPESCRIPT_KEYWORDS) + r")\b"},
}

# The judge for TypeScript: its own parser, in a node process separate from the hub's helper.
TYPESCRIPT_JUDGE = r"""
const ts = require(process.argv[1]);
const kinds = {ts: ts.ScriptKind.TS, tsx: ts.ScriptKind.TSX, js: ts.ScriptKind.JS, jsx: ts.ScriptKind.JSX};
require("readline").createInterface({input: process.stdin}).on("line", (line) => {
  const r = JSON.parse(line);
  const file = ts.createSourceFile(r.name, r.text, ts.ScriptTarget.Latest, false, kinds[r.kind]);
  const diagnostics = file.parseDiagnostics;
  let firstLine = null;
  if (diagnostics.length) {
    const start = Math.min(...diagnostics.map((d) => d.start));
    firstLine = 0;
    for (let i = 0; i < start; i++) if (r.text.charCodeAt(i) === 10) firstLine++;
  }
  process.stdout.write(JSON.stringify({broken: diagnostics.length > 0, firstLine}) + "\n");
});
"""


@dataclass(frozen=True, slots=True)
class Sample:
    name: str  # path, and the mutation when it is a mutant
    path: str
    language: str
    source: bytes


@dataclass(slots=True)
class Tally:
    texts: int = 0
    agree: int = 0
    valid: int = 0
    flagged_valid: int = 0
    broken: int = 0
    line_right: int = 0
    fallbacks: int = 0
    checkers: set[str] = field(default_factory=set)
    disagreements: list[str] = field(default_factory=list)

    def add(self, sample: Sample, judge_broken: bool, judge_line: int | None, result: dict[str, object]) -> None:
        self.texts += 1
        self.checkers.add(str(result.get("checker")))
        if result.get("fallbackReason"):
            self.fallbacks += 1
        errors = result.get("errors") or []
        assert isinstance(errors, list)
        said_broken = bool(errors)
        if said_broken == judge_broken:
            self.agree += 1
        elif len(self.disagreements) < 5:
            verdict = "broken" if said_broken else "valid"
            self.disagreements.append(f"{sample.name}: said {verdict}"
                                      + (f" ({errors[0]['message']})" if errors else ""))
        if judge_broken:
            self.broken += 1
            if said_broken and judge_line is not None and abs(errors[0]["range"]["start"]["line"] - judge_line) <= 1:
                self.line_right += 1
        else:
            self.valid += 1
            self.flagged_valid += said_broken

    def row(self, label: str) -> str:
        agreement = 100 * self.agree / max(self.texts, 1)
        false_positives = 100 * self.flagged_valid / max(self.valid, 1)
        lines = 100 * self.line_right / max(self.broken, 1)
        met = agreement >= 99.5 and false_positives <= 0.2 and lines >= 90
        return (f"  {label:<22} agreement {agreement:6.2f}% ({self.agree}/{self.texts})   valid flagged "
                f"{false_positives:5.2f}% ({self.flagged_valid}/{self.valid})   first error line ±1 {lines:6.2f}% "
                f"({self.line_right}/{self.broken})   fallbacks {self.fallbacks}   "
                f"[{', '.join(sorted(self.checkers))}]  {'targets met' if met else 'targets NOT met'}")


def mutants(sample: Sample, family: str, seed: int) -> Iterator[Sample]:
    """One mutant per kind: a single occurrence, chosen by a seeded generator, deleted."""
    text = sample.source.decode("utf-8", "surrogateescape")
    for kind, pattern in MUTATIONS[family].items():
        matches = list(re.finditer(pattern, text))
        if not matches:
            continue
        chosen = random.Random(f"{seed}:{sample.path}:{kind}").choice(matches)
        mutated = text[: chosen.start()] + text[chosen.end() :]
        line = text.count("\n", 0, chosen.start()) + 1
        yield Sample(f"{sample.name} (-{kind} '{chosen.group()}' line {line})", sample.path, sample.language,
                     mutated.encode("utf-8", "surrogateescape"))


def python_judge(source: bytes, path: str) -> tuple[bool, int | None]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        if error.lineno is None:  # null bytes
            return True, source.count(b"\n", 0, max(source.find(b"\0"), 0))
        return True, error.lineno - 1
    except ValueError:
        return True, source.count(b"\n", 0, max(source.find(b"\0"), 0))
    except (RecursionError, MemoryError):
        return True, None
    return False, None


class TypeScriptJudge:
    def __init__(self, node: str, typescript: str) -> None:
        self.process = subprocess.Popen([node, "-e", TYPESCRIPT_JUDGE, typescript], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, encoding="utf-8")

    def __call__(self, sample: Sample) -> tuple[bool, int | None]:
        kind = {"typescript": "ts", "tsx": "tsx", "javascript": "jsx" if sample.path.endswith(".jsx") else "js"}
        assert self.process.stdin is not None and self.process.stdout is not None
        request = {"name": os.path.basename(sample.path), "kind": kind[sample.language],
                   "text": sample.source.decode("utf-8", "replace")}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        return bool(answer["broken"]), answer["firstLine"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(5)


def python_corpus(count: int, seed: int) -> tuple[list[Sample], int]:
    paths = sorted(p for p in STDLIB.rglob("*.py") if "site-packages" not in p.parts and p.is_file())
    chosen = sorted(random.Random(seed).sample(paths, min(count, len(paths))))
    return [Sample(str(p.relative_to(STDLIB)), str(p), "python", p.read_bytes()) for p in chosen], len(paths)


def typescript_corpus(root: Path, count: int, seed: int) -> tuple[list[Sample], int]:
    unique: dict[bytes, Path] = {}
    for directory, _subdirectories, files in os.walk(root):
        for name in files:
            if not name.endswith(TYPESCRIPT_SUFFIXES):
                continue
            path = Path(directory, name)
            try:
                if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
                    continue
                digest = hashlib.blake2b(path.read_bytes(), digest_size=16).digest()
            except OSError:
                continue
            unique.setdefault(digest, path)
    paths = sorted(unique.values())
    chosen = sorted(random.Random(seed).sample(paths, min(count, len(paths))))
    samples = []
    for path in chosen:
        language = syntax_language_for_path(str(path))
        if language is not None:
            samples.append(Sample(str(path.relative_to(root)), str(path), language, path.read_bytes()))
    return samples, len(paths)


def warm_time(check: Callable[[], object]) -> tuple[float, float]:
    """Median and fastest of 30 checks after 10 warm-up ones, in ms (the fastest is what a calm machine gives)."""
    for _ in range(10):
        check()
    times = []
    for _ in range(30):
        started = time.perf_counter()
        check()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000, min(times) * 1000


def python_timing_text() -> tuple[bytes, str]:
    """The first 2,000 lines of argparse.py, or the longest prefix under that which compiles (cut between
    top-level statements)."""
    lines = (STDLIB / "argparse.py").read_bytes().split(b"\n")
    for cut in range(2000, 0, -1):
        text = b"\n".join(lines[:cut]) + b"\n"
        if python_judge(text, "argparse.py") == (False, None):
            return text, f"argparse.py lines 1-{cut}"
    raise AssertionError("no prefix of argparse.py compiles")


def run_corpus(title: str, samples: list[Sample], family: str, seed: int,
               judge: Callable[[Sample], tuple[bool, int | None]], checkers: SyntaxCheckers, new_label: str) -> None:
    tree_sitter, new = Tally(), Tally()
    started = time.perf_counter()
    texts = 0
    for original in samples:
        for sample in (original, *mutants(original, family, seed)):
            texts += 1
            judge_broken, judge_line = judge(sample)
            new.add(sample, judge_broken, judge_line,
                    syntax_check_result(sample.source, sample.language, sample.path, checkers))
            tree_sitter.add(sample, judge_broken, judge_line, tree_sitter_result(sample.source, sample.language))
    print(f"{title}: {len(samples)} files + their mutants = {texts} texts "
          f"({tree_sitter.broken} broken by the judge), {time.perf_counter() - started:.0f} s")
    print(tree_sitter.row("tree-sitter"))
    print(new.row(new_label))
    for label, tally in (("tree-sitter", tree_sitter), (new_label, new)):
        for line in tally.disagreements:
            print(f"    {label} disagrees: {line}")


def tree_sitter_result(source: bytes, language: str) -> dict[str, object]:
    """What syntaxCheck answered before the languages' own parsers: tree-sitter's problems, in the same shape."""
    problems = check_syntax(source, language)
    return {"checker": "tree-sitter", "errors": [{"range": lsp_range(p.span), "message": p.message} for p in problems]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python-files", type=int, default=1000)
    parser.add_argument("--typescript-files", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=11)
    options = parser.parse_args()

    node_modules = next((path for path in NODE_MODULES_CANDIDATES if path.is_dir()), None)
    node = shutil.which("node")
    # As the hub finds TypeScript for an untrusted workspace with nothing of its own (an empty directory).
    with tempfile.TemporaryDirectory() as empty:
        checkers = syntax_checkers_for(Path(empty), trusted=False)
    if checkers.typescript is None or node_modules is None or node is None:
        print(f"TypeScript not found ({checkers.typescript_missing}): run `. scripts/env.sh` after `make setup`")
        return 1
    node_version = subprocess.run([node, "-v"], capture_output=True, text=True).stdout.strip()
    print(f"seed {options.seed}; Python {sys.version.split()[0]}; TypeScript {checkers.typescript.version} "
          f"({checkers.typescript.typescript}); node {node_version}")

    python_samples, python_total = python_corpus(options.python_files, options.seed)
    print(f"Python corpus: a sample of {len(python_samples)} of the {python_total} .py files of {STDLIB}")
    run_corpus("Python", python_samples, "python", options.seed,
               lambda sample: python_judge(sample.source, sample.path), NO_EXTERNAL_CHECKERS, "cpython")

    typescript_samples, typescript_total = typescript_corpus(node_modules, options.typescript_files, options.seed)
    print(f"TypeScript corpus: a sample of {len(typescript_samples)} of the {typescript_total} distinct "
          f"TS/JS files (<= 1 MB) under {node_modules}")
    judge = TypeScriptJudge(node, checkers.typescript.typescript)
    try:
        run_corpus("TypeScript/JavaScript", typescript_samples, "typescript", options.seed, judge, checkers,
                   checkers.typescript.checker_name)
    finally:
        judge.close()

    python_text, python_what = python_timing_text()
    typescript_path = node_modules / "zod/src/v4/classic/schemas.ts"
    typescript_text = typescript_path.read_bytes()
    typescript_lines = typescript_text.count(b"\n")
    print("Warm check of a ~2,000-line file through syntax_check_result (median of 30, after 10 warm-up checks; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):")
    for label, text, language, path, with_checkers in (
            (f"Python, {python_what}", python_text, "python", "argparse.py", NO_EXTERNAL_CHECKERS),
            (f"TypeScript, {typescript_path.relative_to(node_modules)} ({typescript_lines} lines)",
             typescript_text, "typescript", str(typescript_path), checkers)):
        new_ms, new_fastest = warm_time(lambda: syntax_check_result(text, language, path, with_checkers))  # noqa: B023
        tree_ms, tree_fastest = warm_time(lambda: tree_sitter_result(text, language))  # noqa: B023
        verdict = syntax_check_result(text, language, path, with_checkers)
        print(f"  {label}: {verdict['checker']} median {new_ms:.1f} ms, fastest {new_fastest:.1f} ms "
              f"(ok={verdict['ok']}); tree-sitter median {tree_ms:.1f} ms, fastest {tree_fastest:.1f} ms; "
              f"target <= 20 ms (median): {'met' if new_ms <= 20 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
