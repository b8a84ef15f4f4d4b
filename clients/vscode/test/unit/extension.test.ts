import { fakeLanguageClient, fakeVscode as vscode } from "../support/installFakes";

import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { beforeEach, describe, it } from "node:test";
import { EXTENSION_COMMAND_IDS } from "../../src/commandIds";
import { activate, deactivate } from "../../src/extension";
import { statusResult } from "../support/samples";

const { LanguageClient } = fakeLanguageClient;

function fakeContext(): { subscriptions: { dispose(): unknown }[] } {
  return { subscriptions: [] };
}

function disposeAll(context: { subscriptions: { dispose(): unknown }[] }): void {
  for (const subscription of context.subscriptions) {
    subscription.dispose();
  }
}

beforeEach(() => {
  vscode.reset();
  LanguageClient.reset();
  vscode.setWorkspaceFolders("/work/project");
  vscode.state.settings = { "lspHub.serverPath": "/opt/lsp-hub" };
  LanguageClient.handler = (method, params) =>
    method === "workspace/executeCommand" && (params as { command: string }).command === "lspHub.status" ? statusResult() : null;
});

describe("activate", () => {
  it("starts the hub, registers the commands and fills the status bar", async () => {
    const context = fakeContext();
    await activate(context as never);
    assert.equal(LanguageClient.instances.length, 1);
    assert.equal(LanguageClient.instances[0]!.isRunning(), true);
    assert.deepEqual([...vscode.state.registeredCommands.keys()].sort(), [...EXTENSION_COMMAND_IDS].sort());
    assert.equal(vscode.state.outputChannels[0]!.name, "LSP Hub");
    await sleep(10);
    assert.equal(vscode.state.statusBarItems[0]!.text, "$(server-process) LSP Hub: 2");
    disposeAll(context);
    await deactivate();
    assert.equal(vscode.state.registeredCommands.size, 0);
    assert.equal(vscode.state.statusBarItems[0]!.disposed, true);
  });

  it("reports a hub that cannot start, and still registers commands", async () => {
    LanguageClient.startError = new Error("spawn /opt/lsp-hub ENOENT");
    vscode.state.messageAnswers.push("Show Output");
    const context = fakeContext();
    await activate(context as never);
    assert.equal(vscode.state.messages[0]!.level, "error");
    assert.match(vscode.state.messages[0]!.text, /Could not start \/opt\/lsp-hub: spawn \/opt\/lsp-hub ENOENT/);
    assert.equal(vscode.state.registeredCommands.size, EXTENSION_COMMAND_IDS.length);
    await sleep(10);
    assert.equal(vscode.state.outputChannels[0]!.shown, 1);
    assert.equal(vscode.state.statusBarItems[0]!.text, "$(warning) LSP Hub");
    disposeAll(context);
    await deactivate();
  });

  it("restarts the hub with trust when the workspace becomes trusted", async () => {
    vscode.workspace.isTrusted = false;
    const context = fakeContext();
    await activate(context as never);
    assert.deepEqual(LanguageClient.instances[0]!.clientOptions.initializationOptions, { lspHub: { trustWorkspace: false } });
    vscode.workspace.isTrusted = true;
    vscode.state.trustGranted.fire();
    await sleep(10);
    assert.equal(LanguageClient.instances.length, 2);
    assert.equal(LanguageClient.instances[0]!.disposed, true);
    assert.deepEqual(LanguageClient.instances[1]!.clientOptions.initializationOptions, { lspHub: { trustWorkspace: true } });
    disposeAll(context);
    await deactivate();
  });

  it("offers a restart when launch settings change, and ignores other settings", async () => {
    const context = fakeContext();
    await activate(context as never);
    vscode.state.configurationChanged.fire({ affectsConfiguration: (section) => section === "editor.fontSize" });
    await sleep(5);
    assert.equal(vscode.state.messages.length, 0);
    vscode.state.messageAnswers.push("Restart");
    vscode.state.configurationChanged.fire({ affectsConfiguration: (section) => section === "lspHub.serverArgs" });
    await sleep(10);
    assert.deepEqual(vscode.state.messages[0]!.actions, ["Restart"]);
    assert.equal(LanguageClient.instances.length, 2);
    disposeAll(context);
    await deactivate();
  });
});
