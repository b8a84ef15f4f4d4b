import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  HubCommand,
  INDEX_COMMANDS,
  ResultShapeError,
  advertisedCommands,
  callersAtPositionArguments,
  callersOfSymbolArguments,
  executeCommandParams,
  parseCallers,
  parseRelevantFiles,
  parseRepoMap,
  parseStatus,
  parseSyntaxCheck,
  relevantFilesArguments,
  repoMapArguments,
  restartServerArguments,
  syntaxCheckArguments,
} from "../../src/requests";
import { callersResult, fileUri, relevantFilesResult, repoMapResult, statusResult, syntaxCheckResult } from "../support/samples";

function withField(value: object, path: string[], replacement: unknown): unknown {
  const copy = structuredClone(value) as Record<string, unknown>;
  let target = copy as Record<string, unknown>;
  for (const key of path.slice(0, -1)) {
    target = target[key] as Record<string, unknown>;
  }
  const last = path[path.length - 1]!;
  if (replacement === undefined) {
    delete target[last];
  } else {
    target[last] = replacement;
  }
  return copy;
}

function assertShapeError(action: () => unknown, command: string, where: string): void {
  assert.throws(action, (error: unknown) => {
    assert.ok(error instanceof ResultShapeError, String(error));
    assert.equal(error.command, command);
    assert.equal(error.where, where);
    assert.match(error.message, new RegExp(`^${command.replace(".", "\\.")} result: `));
    return true;
  });
}

describe("executeCommandParams", () => {
  it("sends one object argument, or none", () => {
    assert.deepEqual(executeCommandParams("lspHub.status"), { command: "lspHub.status", arguments: [] });
    assert.deepEqual(executeCommandParams("lspHub.repoMap", { tokenBudget: 5 }), { command: "lspHub.repoMap", arguments: [{ tokenBudget: 5 }] });
  });
});

describe("advertisedCommands", () => {
  it("reads executeCommandProvider.commands and tolerates absence", () => {
    const result = { capabilities: { executeCommandProvider: { commands: ["lspHub.status", 7, "ruff.applyAutofix"] } } };
    assert.deepEqual(advertisedCommands(result), ["lspHub.status", "ruff.applyAutofix"]);
    assert.deepEqual(advertisedCommands(undefined), []);
    assert.deepEqual(advertisedCommands({ capabilities: {} }), []);
  });

  it("knows the index commands apart from status", () => {
    assert.deepEqual([...INDEX_COMMANDS].sort(), ["lspHub.callers", "lspHub.relevantFiles", "lspHub.repoMap", "lspHub.syntaxCheck"]);
  });
});

describe("argument builders", () => {
  it("repoMap omits what is not given and rejects a bad budget", () => {
    assert.deepEqual(repoMapArguments({}), {});
    assert.deepEqual(repoMapArguments({ focusUris: [fileUri("a.py")], tokenBudget: 2048, mentionedIdents: ["Inventory"] }), {
      focusFiles: [fileUri("a.py")],
      mentionedIdents: ["Inventory"],
      tokenBudget: 2048,
    });
    assert.throws(() => repoMapArguments({ tokenBudget: 0 }), RangeError);
    assert.throws(() => repoMapArguments({ tokenBudget: 1.5 }), RangeError);
  });

  it("relevantFiles trims the description, requires one, and passes targets", () => {
    assert.deepEqual(relevantFilesArguments("  fix caching  "), { description: "fix caching" });
    assert.deepEqual(relevantFilesArguments("x", [fileUri("a.py")], 5), { description: "x", targets: [fileUri("a.py")], topN: 5 });
    assert.throws(() => relevantFilesArguments("   "), RangeError);
  });

  it("syntaxCheck carries the buffer text when given", () => {
    assert.deepEqual(syntaxCheckArguments(fileUri("a.py")), { uri: fileUri("a.py") });
    assert.deepEqual(syntaxCheckArguments(fileUri("a.py"), ""), { uri: fileUri("a.py"), text: "" });
  });

  it("callers by position or by symbol, depth optional", () => {
    const position = { line: 3, character: 7 };
    const built = callersAtPositionArguments(fileUri("a.py"), position);
    assert.deepEqual(built, { uri: fileUri("a.py"), position: { line: 3, character: 7 } });
    assert.notEqual((built as { position: object }).position, position, "the position is copied");
    assert.deepEqual(callersAtPositionArguments(fileUri("a.py"), position, 2), { uri: fileUri("a.py"), position, depth: 2 });
    assert.deepEqual(callersOfSymbolArguments("report", 3), { symbol: "report", depth: 3 });
  });

  it("restartServer names server and root", () => {
    assert.deepEqual(restartServerArguments("ruff", "/w"), { name: "ruff", root: "/w" });
    assert.equal(HubCommand.restartServer, "lspHub.restartServer");
  });
});

describe("parseStatus", () => {
  it("accepts the documented shape with the index part", () => {
    const status = parseStatus(statusResult());
    assert.equal(status.servers.length, 4);
    assert.equal(status.servers[2]!.error, "exited with code 1");
    assert.equal(status.servers[2]!.pid, null);
    assert.deepEqual(status.index, { state: "ready", files: 12, symbols: 340, languages: { python: 10, c: 2 }, lastBuildSeconds: 0.42 });
    assert.equal(status.hub?.version, "0.1.0");
  });

  it("accepts a hub without an index and with no servers yet", () => {
    const status = parseStatus({ servers: [], documents: 0, workspaceFolders: [], configProblems: ["bad key"] });
    assert.deepEqual(status.servers, []);
    assert.equal(status.index, undefined);
    assert.deepEqual(status.configProblems, ["bad key"]);
  });

  it("names the offending field", () => {
    assertShapeError(() => parseStatus(null), "lspHub.status", "");
    assertShapeError(() => parseStatus({}), "lspHub.status", "servers");
    assertShapeError(() => parseStatus(withField(statusResult(), ["servers", "1", "state"], 3)), "lspHub.status", "servers[1].state");
    assertShapeError(() => parseStatus(withField(statusResult(), ["index", "state"], undefined)), "lspHub.status", "index.state");
  });
});

describe("parseRepoMap", () => {
  it("accepts the documented shape", () => {
    const map = parseRepoMap(repoMapResult());
    assert.equal(map.files[0]!.path, "app/models.py");
    assert.equal(map.tokens, 17);
    assert.equal(map.complete, true);
  });

  it("keeps skippedFiles of an incomplete map", () => {
    const map = parseRepoMap({ ...repoMapResult(), complete: false, skippedFiles: [{ path: "big.py", reason: "too_large" }] });
    assert.deepEqual(map.skippedFiles, [{ path: "big.py", reason: "too_large" }]);
  });

  it("rejects wrong shapes", () => {
    assertShapeError(() => parseRepoMap(withField(repoMapResult(), ["text"], ["a"])), "lspHub.repoMap", "text");
    assertShapeError(() => parseRepoMap(withField(repoMapResult(), ["complete"], undefined)), "lspHub.repoMap", "complete");
    assertShapeError(() => parseRepoMap(withField(repoMapResult(), ["files", "0", "symbols"], "Inventory")), "lspHub.repoMap", "files[0].symbols");
    assertShapeError(() => parseRepoMap(withField(repoMapResult(), ["tokens"], "17")), "lspHub.repoMap", "tokens");
  });
});

describe("parseRelevantFiles", () => {
  it("accepts the documented shape", () => {
    assert.deepEqual(parseRelevantFiles(relevantFilesResult()).files[1]!.reasons, ["test file of target app/service.py"]);
  });

  it("rejects wrong shapes", () => {
    assertShapeError(() => parseRelevantFiles({ files: [{ path: "a", score: 1 }], complete: true }), "lspHub.relevantFiles", "files[0].reasons");
    assertShapeError(() => parseRelevantFiles({ files: {}, complete: true }), "lspHub.relevantFiles", "files");
  });
});

describe("parseSyntaxCheck", () => {
  it("accepts errors with ranges", () => {
    const result = parseSyntaxCheck(syntaxCheckResult());
    assert.equal(result.errors.length, 2);
    assert.deepEqual(result.errors[0]!.range.start, { line: 2, character: 11 });
  });

  it("accepts an unsupported language", () => {
    assert.deepEqual(parseSyntaxCheck({ ok: true, checked: false, language: null, errors: [], reason: "unsupported_language" }), {
      ok: true,
      checked: false,
      language: null,
      errors: [],
      reason: "unsupported_language",
    });
  });

  it("rejects ok contradicting the errors and malformed ranges", () => {
    assertShapeError(() => parseSyntaxCheck({ ...syntaxCheckResult(), ok: true }), "lspHub.syntaxCheck", "ok");
    assertShapeError(() => parseSyntaxCheck(withField(syntaxCheckResult(), ["errors", "1", "range", "end", "line"], -1)), "lspHub.syntaxCheck", "errors[1].range.end");
    assertShapeError(() => parseSyntaxCheck(withField(syntaxCheckResult(), ["checked"], "yes")), "lspHub.syntaxCheck", "checked");
  });
});

describe("parseCallers", () => {
  it("accepts call sites with and without a caller name", () => {
    const result = parseCallers(callersResult());
    assert.equal(result.symbol, "total_value");
    assert.equal(result.callers[1]!.caller, null);
    assert.equal(result.definitions[0]!.uri, fileUri("app/models.py"));
  });

  it("rejects wrong shapes", () => {
    assertShapeError(() => parseCallers(withField(callersResult(), ["callers", "0", "location", "uri"], 5)), "lspHub.callers", "callers[0].location.uri");
    assertShapeError(() => parseCallers(withField(callersResult(), ["definitions"], null)), "lspHub.callers", "definitions");
  });
});
