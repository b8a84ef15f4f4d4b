import { fakeVscode as vscode } from "../support/installFakes";

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { beforeEach, describe, it } from "node:test";
import {
  checkSyntax,
  findRelevantFiles,
  registerCommands,
  restartHub,
  runReportingErrors,
  serverActions,
  showCallers,
  showRepoMap,
  showStatus,
} from "../../src/commands";
import { EXTENSION_COMMAND_IDS } from "../../src/commandIds";
import { parseStatus } from "../../src/requests";
import { FakeHub } from "../support/fakeHub";
import type { Location, Position, Uri } from "../support/fakeVscode";
import { callersResult, fileUri, relevantFilesResult, repoMapResult, statusResult, syntaxCheckResult } from "../support/samples";

const state = vscode.state;
let hub: FakeHub;

beforeEach(() => {
  vscode.reset();
  vscode.setWorkspaceFolders("/work/project");
  hub = new FakeHub();
});

const pickFirst = (items: { label: string }[]) => items[0];
const pickLabel = (pattern: RegExp) => (items: { label: string }[]) => items.find((item) => pattern.test(item.label));

describe("showRepoMap", () => {
  it("focuses on the active file, uses the budget setting, opens markdown", async () => {
    vscode.window.activeTextEditor = vscode.fakeEditor("/work/project/app/service.py", "x = 1\n");
    state.settings["lspHub.repoMap.tokenBudget"] = 2048;
    hub.answers.set("lspHub.repoMap", repoMapResult());
    await showRepoMap(hub);
    assert.deepEqual(hub.calls, [{ command: "lspHub.repoMap", argument: { focusFiles: [fileUri("app/service.py")], tokenBudget: 2048 } }]);
    assert.equal(state.openedDocuments.length, 1);
    assert.equal(state.openedDocuments[0]!.language, "markdown");
    assert.match(state.openedDocuments[0]!.content!, /focused on `app\/service.py`/);
    assert.equal(state.shownDocuments.length, 1);
  });

  it("works without an active file and without a budget", async () => {
    hub.answers.set("lspHub.repoMap", repoMapResult());
    await showRepoMap(hub);
    assert.deepEqual(hub.calls[0]!.argument, {});
  });

  it("refuses when the hub does not advertise the command", async () => {
    hub.commands = ["lspHub.status"];
    await assert.rejects(showRepoMap(hub), /does not offer lspHub\.repoMap/);
    assert.equal(hub.calls.length, 0);
  });

  it("refuses when the hub is not running", async () => {
    hub.running = false;
    await assert.rejects(showRepoMap(hub), /not running/);
  });
});

describe("findRelevantFiles", () => {
  it("asks, sends description and the active file as target, opens the chosen file", async () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), "lsp-hub-relevant-"));
    vscode.setWorkspaceFolders(folder);
    vscode.window.activeTextEditor = vscode.fakeEditor(path.join(folder, "app", "service.py"), "");
    state.inputBoxAnswers.push("  add a discount to Inventory ");
    state.quickPickChoices.push(pickFirst);
    hub.answers.set("lspHub.relevantFiles", relevantFilesResult());
    await findRelevantFiles(hub);
    assert.deepEqual(hub.calls[0]!.argument, {
      description: "add a discount to Inventory",
      targets: [vscode.Uri.file(path.join(folder, "app", "service.py")).toString()],
    });
    const pick = state.quickPicks[0]!;
    assert.deepEqual(
      pick.items.map((item) => item.label),
      ["app/models.py", "tests/test_service.py"],
    );
    assert.equal(pick.items[0]!.detail, "imported by target app/service.py · defines Inventory named in description");
    const shown = state.shownDocuments[0]!.target as Uri;
    assert.equal(shown.fsPath, path.join(folder, "app", "models.py"));
    fs.rmSync(folder, { recursive: true });
  });

  it("does nothing when the input box is cancelled", async () => {
    state.inputBoxAnswers.push(undefined);
    await findRelevantFiles(hub);
    assert.equal(hub.calls.length, 0);
    const validate = state.inputBoxes[0]!["validateInput"] as (value: string) => string | undefined;
    assert.equal(validate("  "), "Describe the task in a few words");
    assert.equal(validate("x"), undefined);
  });

  it("says when nothing was found, and why it may be incomplete", async () => {
    state.inputBoxAnswers.push("something");
    hub.answers.set("lspHub.relevantFiles", { files: [], complete: false });
    await findRelevantFiles(hub);
    assert.deepEqual(state.messages, [{ level: "info", text: "No relevant files found (incomplete: the index is still building).", actions: [] }]);
    assert.equal(state.quickPicks.length, 0);
  });
});

describe("showCallers", () => {
  it("sends the cursor position and shows the call sites in the references view", async () => {
    vscode.window.activeTextEditor = vscode.fakeEditor("/work/project/app/models.py", "", 30, 6);
    hub.answers.set("lspHub.callers", callersResult());
    await showCallers(hub);
    assert.deepEqual(hub.calls[0]!.argument, { uri: fileUri("app/models.py"), position: { line: 30, character: 6 } });
    const shown = state.executedCommands.find((call) => call.id === "editor.action.showReferences")!;
    const [uri, position, locations] = shown.args as [Uri, Position, Location[]];
    assert.equal(uri.toString(), fileUri("app/models.py"));
    assert.deepEqual([position.line, position.character], [30, 6]);
    assert.deepEqual(
      locations.map((location) => [location.uri.toString(), location.range.start.line, location.range.start.character]),
      [
        [fileUri("app/service.py"), 15, 59],
        [fileUri("app/cli.py"), 3, 10],
      ],
    );
    assert.equal(state.messages.length, 0);
  });

  it("tells the user when there are no callers", async () => {
    vscode.window.activeTextEditor = vscode.fakeEditor("/work/project/app/models.py", "");
    hub.answers.set("lspHub.callers", { ...callersResult(), callers: [] });
    await showCallers(hub);
    assert.equal(state.executedCommands.length, 0);
    assert.equal(state.messages[0]!.text, "No callers of total_value found.");
  });

  it("needs an editor", async () => {
    await assert.rejects(showCallers(hub), /Open a file first/);
  });
});

describe("checkSyntax", () => {
  it("sends the buffer text, lists the errors and moves to the chosen one", async () => {
    const editor = vscode.fakeEditor("/work/project/app/broken.py", "def f(:\n");
    vscode.window.activeTextEditor = editor;
    hub.answers.set("lspHub.syntaxCheck", syntaxCheckResult());
    state.quickPickChoices.push(pickLabel(/^Ln 6/));
    await checkSyntax(hub);
    assert.deepEqual(hub.calls[0]!.argument, { uri: fileUri("app/broken.py"), text: "def f(:\n" });
    assert.equal(state.quickPicks[0]!.options!["title"], "2 syntax errors in broken.py (python).");
    assert.deepEqual([editor.selection.start.line, editor.selection.start.character, editor.selection.end.character], [5, 0, 4]);
    assert.equal(editor.revealed.length, 1);
  });

  it("reports a clean file in a message", async () => {
    vscode.window.activeTextEditor = vscode.fakeEditor("/work/project/app/ok.py", "x = 1\n");
    hub.answers.set("lspHub.syntaxCheck", { ok: true, checked: true, language: "python", errors: [] });
    await checkSyntax(hub);
    assert.deepEqual(state.messages, [{ level: "info", text: "No syntax errors in ok.py (python).", actions: [] }]);
  });
});

describe("showStatus", () => {
  it("lists servers and offers the hub restart when per-server restart is not advertised", async () => {
    hub.answers.set("lspHub.status", statusResult());
    state.quickPickChoices.push(pickLabel(/^ruff$/), pickLabel(/Restart LSP Hub/));
    let changes = 0;
    await showStatus(hub, () => (changes += 1));
    const servers = state.quickPicks[0]!;
    assert.deepEqual(
      servers.items.map((item) => item.label),
      ["basedpyright", "ruff", "clangd", "gopls"],
    );
    assert.equal(servers.options!["title"], "LSP Hub: 2 of 4 servers running");
    assert.equal(servers.options!["placeHolder"], "Index ready · 12 files · 340 symbols · built in 0.4 s");
    assert.deepEqual(
      state.quickPicks[1]!.items.map((item) => item.label),
      ["$(refresh) Restart LSP Hub", "$(output) Show LSP Hub Output"],
    );
    assert.equal(hub.restarts, 1);
    assert.equal(changes, 1);
  });

  it("restarts one server through lspHub.restartServer when the hub advertises it", async () => {
    hub.commands.push("lspHub.restartServer");
    hub.answers.set("lspHub.status", statusResult());
    hub.answers.set("lspHub.restartServer", null);
    state.quickPickChoices.push(pickLabel(/^clangd$/), pickFirst);
    await showStatus(hub);
    assert.deepEqual(hub.calls[1], { command: "lspHub.restartServer", argument: { name: "clangd", root: "/work/project/native" } });
    assert.equal(hub.restarts, 0);
  });

  it("offers a restart when no server runs yet", async () => {
    hub.answers.set("lspHub.status", { servers: [] });
    state.messageAnswers.push("Restart LSP Hub");
    await showStatus(hub);
    assert.match(state.messages[0]!.text, /^LSP Hub: 0 of 0 servers running\. Servers start when/);
    assert.equal(hub.restarts, 1);
  });

  it("serverActions offers no per-server restart for a server without root", () => {
    hub.commands.push("lspHub.restartServer");
    const server = parseStatus({ servers: [{ name: "x", root: null, state: "failed", pid: null, languages: [], restarts: 0 }] }).servers[0]!;
    assert.equal(serverActions(hub, server, () => undefined).length, 2);
  });
});

describe("restartHub", () => {
  it("restarts with a progress indicator", async () => {
    await restartHub(hub);
    assert.equal(hub.restarts, 1);
    assert.equal(state.progress.length, 1);
  });
});

describe("runReportingErrors", () => {
  it("shows user problems as warnings, shape errors and failures as errors", async () => {
    hub.commands = [];
    await runReportingErrors(() => showRepoMap(hub), hub);
    hub.commands = ["lspHub.repoMap"];
    hub.answers.set("lspHub.repoMap", { text: 3 });
    await runReportingErrors(() => showRepoMap(hub), hub);
    hub.failWith = new Error("request timed out");
    state.messageAnswers.push("Show Output");
    await runReportingErrors(() => showRepoMap(hub), hub);
    assert.deepEqual(
      state.messages.map((message) => [message.level, message.text]),
      [
        ["warning", "This lsp-hub does not offer lspHub.repoMap; update lsp-hub to use this command."],
        ["error", "LSP Hub answered in an unexpected shape (lspHub.repoMap result: text: expected a string, got number 3). Is lsp-hub up to date?"],
        ["error", "LSP Hub: request timed out"],
      ],
    );
    assert.equal(hub.outputShown, 1);
  });
});

describe("registerCommands", () => {
  it("registers every palette command, each reporting its errors", async () => {
    const disposables = registerCommands(hub, () => undefined);
    assert.deepEqual([...state.registeredCommands.keys()].sort(), [...EXTENSION_COMMAND_IDS].sort());
    hub.running = false;
    await vscode.commands.executeCommand("lspHub.showRepoMap");
    assert.equal(state.messages[0]!.level, "warning");
    for (const disposable of disposables) {
      disposable.dispose();
    }
    assert.equal(state.registeredCommands.size, 0);
  });
});
