import assert from "node:assert/strict";
import * as path from "node:path";
import { describe, it } from "node:test";
import { parseCallers, parseRelevantFiles, parseRepoMap, parseStatus, parseSyntaxCheck } from "../../src/requests";
import {
  callersView,
  formatScore,
  incompleteNote,
  relevantFilePicks,
  repoMapMarkdown,
  resolveResultPath,
  statusBarView,
  statusView,
  syntaxSummary,
} from "../../src/views";
import { callersResult, fileUri, relevantFilesResult, repoMapResult, statusResult, syntaxCheckResult } from "../support/samples";

describe("incompleteNote", () => {
  it("is empty when complete and counts what was left out otherwise", () => {
    assert.equal(incompleteNote({ complete: true }), "");
    assert.equal(incompleteNote({ complete: false }), "incomplete: the index is still building");
    assert.equal(
      incompleteNote({ complete: false, skippedFiles: [{ path: "a", reason: "too_large" }], pendingFiles: ["b", "c"] }),
      "incomplete: 1 file skipped, 2 files not indexed yet",
    );
    assert.equal(incompleteNote({ complete: false, pendingFiles: 7 }), "incomplete: 7 files not indexed yet");
  });
});

describe("repoMapMarkdown", () => {
  it("puts the map in a fence under a header naming the focus", () => {
    const markdown = repoMapMarkdown(parseRepoMap(repoMapResult()), "app/service.py");
    const lines = markdown.split("\n");
    assert.equal(lines[0], "# Repository map");
    assert.equal(lines[2], "focused on `app/service.py` · 1 file · about 17 tokens");
    assert.equal(lines[4], "```");
    assert.ok(markdown.includes("  class Inventory:\n    def add(self, item: Item) -> None:\n```\n"));
  });

  it("uses a longer fence when the map itself holds backticks, and flags incompleteness", () => {
    const result = parseRepoMap({ ...repoMapResult(), text: "doc.md:\n  ```py\n", complete: false });
    const markdown = repoMapMarkdown(result);
    assert.ok(markdown.includes("\n````\ndoc.md:\n  ```py\n````\n"), markdown);
    assert.ok(markdown.includes("**incomplete: the index is still building**"));
  });

  it("says so when the map is empty", () => {
    assert.match(repoMapMarkdown(parseRepoMap({ text: "", files: [], tokens: 0, complete: true })), /The map is empty/);
  });
});

describe("relevantFilePicks", () => {
  it("one item per file with score and reasons", () => {
    const picks = relevantFilePicks(parseRelevantFiles(relevantFilesResult()));
    assert.deepEqual(picks[0], {
      label: "app/models.py",
      description: "score 3.50",
      detail: "imported by target app/service.py · defines Inventory named in description",
      path: "app/models.py",
    });
    assert.equal(relevantFilePicks(parseRelevantFiles({ files: [{ path: "x", score: 0.001234, reasons: [] }], complete: true }))[0]!.detail, "no reason given");
  });

  it("formats scores compactly", () => {
    assert.equal(formatScore(0.001234), "0.0012");
    assert.equal(formatScore(2), "2.00");
    assert.equal(formatScore(250.4), "250");
  });
});

describe("resolveResultPath", () => {
  const folders = ["/w/one", "/w/two"];
  it("resolves workspace-relative paths in the folder that has the file", () => {
    assert.equal(resolveResultPath("src/a.ts", folders, (candidate) => candidate === path.join("/w/two", "src", "a.ts")), path.join("/w/two", "src", "a.ts"));
    assert.equal(resolveResultPath("src/a.ts", folders, () => false), path.join("/w/one", "src", "a.ts"));
    assert.equal(resolveResultPath("src/a.ts", [], () => true), undefined);
  });

  it("accepts file URIs and absolute paths", () => {
    assert.equal(resolveResultPath("file:///w/one/a%20b.py", folders, () => false), "/w/one/a b.py");
    assert.equal(resolveResultPath("/abs/x.py", folders, () => false), "/abs/x.py");
  });
});

describe("syntaxSummary", () => {
  it("counts errors and lists them 1-based", () => {
    const summary = syntaxSummary(parseSyntaxCheck(syntaxCheckResult()), "broken.py");
    assert.equal(summary.level, "warning");
    assert.equal(summary.message, "2 syntax errors in broken.py (python).");
    assert.deepEqual(
      summary.errors.map((error) => [error.label, error.detail]),
      [
        ["Ln 3, Col 12", "expected ')'"],
        ["Ln 6, Col 1", "unexpected 'else'"],
      ],
    );
  });

  it("reports a clean file and an unchecked one differently", () => {
    assert.deepEqual(syntaxSummary(parseSyntaxCheck({ ok: true, checked: true, language: "go", errors: [] }), "m.go"), {
      level: "info",
      message: "No syntax errors in m.go (go).",
      errors: [],
    });
    const unchecked = syntaxSummary(parseSyntaxCheck({ ok: true, checked: false, language: null, errors: [], reason: "unsupported_language" }), "x.zig");
    assert.equal(unchecked.message, "Syntax of x.zig was not checked: its language is not supported.");
  });
});

describe("callersView", () => {
  it("lists each call site once", () => {
    const result = callersResult();
    result.callers.push(structuredClone(result.callers[0]!));
    const view = callersView(parseCallers(result));
    assert.equal(view.symbol, "total_value");
    assert.deepEqual(
      view.locations.map((location) => location.uri),
      [fileUri("app/service.py"), fileUri("app/cli.py")],
    );
    assert.equal(view.message, undefined);
  });

  it("explains an empty or incomplete answer", () => {
    assert.equal(callersView(parseCallers({ ...callersResult(), callers: [] })).message, "No callers of total_value found.");
    assert.equal(
      callersView(parseCallers({ ...callersResult(), callers: [], complete: false })).message,
      "No callers of total_value found (incomplete: the index is still building).",
    );
    assert.equal(callersView(parseCallers({ ...callersResult(), complete: false })).message, "Callers of total_value: incomplete: the index is still building.");
    assert.equal(callersView(parseCallers({ symbol: null, definitions: [], callers: [], complete: true })).message, "No symbol found at the cursor.");
  });
});

describe("statusView", () => {
  it("counts running servers and describes each", () => {
    const view = statusView(parseStatus(statusResult()));
    assert.equal(view.running, 2);
    assert.equal(view.total, 4);
    assert.equal(view.indexState, "ready");
    assert.equal(view.indexLine, "Index ready · 12 files · 340 symbols · built in 0.4 s");
    assert.deepEqual(view.servers[1], {
      label: "ruff",
      description: "running · 2 restarts · pid 102",
      detail: "/work/project — python",
      server: view.servers[1]!.server,
    });
    assert.equal(view.servers[2]!.detail, "/work/project/native — c, cpp — exited with code 1");
  });

  it("has no index line without an index", () => {
    assert.equal(statusView(parseStatus({ servers: [] })).indexLine, undefined);
  });
});

describe("statusBarView", () => {
  it("shows running servers, and indexing while the index builds", () => {
    const ready = statusBarView(parseStatus(statusResult()));
    assert.equal(ready.text, "$(server-process) LSP Hub: 2");
    assert.match(ready.tooltip, /^LSP Hub: 2 of 4 servers running\nbasedpyright \(running\) \/work\/project\n/);
    assert.match(ready.tooltip, /Index ready/);
    const building = statusBarView(parseStatus({ ...statusResult(), index: { state: "building", files: 3 } }));
    assert.equal(building.text, "$(sync~spin) LSP Hub: 2 · indexing");
  });

  it("warns when the hub is not there", () => {
    assert.deepEqual(statusBarView(undefined), { text: "$(warning) LSP Hub", tooltip: "LSP Hub is not running" });
    assert.equal(statusBarView(undefined, "spawn lsp-hub ENOENT").tooltip, "LSP Hub: spawn lsp-hub ENOENT");
  });
});
