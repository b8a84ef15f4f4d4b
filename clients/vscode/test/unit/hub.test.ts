import { fakeLanguageClient, fakeVscode as vscode } from "../support/installFakes";

import assert from "node:assert/strict";
import * as path from "node:path";
import { beforeEach, describe, it } from "node:test";
import { HubClient, clientConfiguration, readLaunchSettings } from "../../src/hub";
import { SERVED_LANGUAGE_IDS } from "../../src/launch";

const { LanguageClient } = fakeLanguageClient;
const channel = () => vscode.window.createOutputChannel("LSP Hub", { log: true }) as never;

beforeEach(() => {
  vscode.reset();
  LanguageClient.reset();
  vscode.setWorkspaceFolders("/work/project");
});

describe("readLaunchSettings", () => {
  it("reads the lspHub settings and drops values of the wrong type", () => {
    vscode.state.settings = {
      "lspHub.serverPath": "/opt/lsp-hub",
      "lspHub.serverArgs": ["-v", 3, "--log-file", "/tmp/h.log"],
      "lspHub.configPath": "",
      "lspHub.initializationOptions": ["not", "an", "object"],
    };
    assert.deepEqual(readLaunchSettings(vscode.workspace.getConfiguration("lspHub") as never), {
      serverPath: "/opt/lsp-hub",
      serverArgs: ["-v", "--log-file", "/tmp/h.log"],
      configPath: undefined,
      initializationOptions: {},
    });
  });
});

describe("clientConfiguration", () => {
  it("builds server and client options from settings and trust", () => {
    vscode.state.settings = {
      "lspHub.serverPath": "/opt/lsp-hub",
      "lspHub.serverArgs": ["-v"],
      "lspHub.configPath": "${workspaceFolder}/hub.toml",
      "lspHub.initializationOptions": { server: { ruff: { disabled: true } }, trustWorkspace: true },
    };
    vscode.workspace.isTrusted = false;
    const output = channel();
    const { launch, serverOptions, clientOptions } = clientConfiguration(output);
    assert.equal(launch.origin, "setting");
    assert.deepEqual(serverOptions, {
      command: "/opt/lsp-hub",
      args: ["-v", "--config", path.join("/work/project", "hub.toml")],
      options: { cwd: "/work/project" },
    });
    assert.deepEqual(clientOptions.initializationOptions, { lspHub: { server: { ruff: { disabled: true } }, trustWorkspace: false } });
    const selector = clientOptions.documentSelector as { scheme: string; language: string }[];
    assert.deepEqual(
      selector.map((entry) => entry.language),
      [...SERVED_LANGUAGE_IDS],
    );
    assert.equal(clientOptions.outputChannel, output);
  });
});

describe("HubClient", () => {
  it("starts a language client with id lspHub and sends executeCommand", async () => {
    vscode.state.settings = { "lspHub.serverPath": "/opt/lsp-hub" };
    LanguageClient.initializeResult = { capabilities: { executeCommandProvider: { commands: ["lspHub.status", "lspHub.repoMap"] } } };
    LanguageClient.handler = (method, params) => ({ method, params });
    const client = new HubClient(channel());
    assert.equal(client.isRunning(), false);
    assert.deepEqual(client.advertisedCommands(), []);
    await client.start();
    const instance = LanguageClient.instances[0]!;
    assert.equal(instance.id, "lspHub");
    assert.equal(instance.name, "LSP Hub");
    assert.equal(client.isRunning(), true);
    assert.deepEqual(client.advertisedCommands(), ["lspHub.status", "lspHub.repoMap"]);
    assert.deepEqual(await client.executeCommand("lspHub.repoMap", { tokenBudget: 9 }), {
      method: "workspace/executeCommand",
      params: { command: "lspHub.repoMap", arguments: [{ tokenBudget: 9 }] },
    });
    await client.stop();
    assert.equal(instance.disposed, true);
    await assert.rejects(client.executeCommand("lspHub.status"), /not running/);
  });

  it("restart builds a new client from the current settings", async () => {
    vscode.state.settings = { "lspHub.serverPath": "/old/lsp-hub" };
    const client = new HubClient(channel());
    await client.start();
    vscode.state.settings = { "lspHub.serverPath": "/new/lsp-hub" };
    await client.restart();
    assert.equal(LanguageClient.instances.length, 2);
    assert.equal(LanguageClient.instances[0]!.disposed, true);
    assert.equal(LanguageClient.instances[1]!.serverOptions.command, "/new/lsp-hub");
    assert.equal(client.isRunning(), true);
  });

  it("a request during start waits for it; concurrent starts make one client", async () => {
    vscode.state.settings = { "lspHub.serverPath": "/opt/lsp-hub" };
    LanguageClient.handler = () => "answer";
    const client = new HubClient(channel());
    const starting = Promise.all([client.start(), client.start()]);
    assert.equal(await client.executeCommand("lspHub.status"), "answer");
    await starting;
    assert.equal(LanguageClient.instances.length, 1);
  });

  it("explains a failed start and where the command came from", async () => {
    vscode.state.settings = {};
    vscode.workspace.isTrusted = false;
    LanguageClient.startError = new Error("spawn lsp-hub ENOENT");
    const output = channel();
    const client = new HubClient(output);
    const previousPath = process.env.PATH;
    process.env.PATH = "/nonexistent";
    try {
      await assert.rejects(client.start(), /Could not start lsp-hub: spawn lsp-hub ENOENT\. Install it \(pip install lsp-hub\) or set lspHub\.serverPath\./);
    } finally {
      process.env.PATH = previousPath;
    }
    assert.match((output as unknown as { lines: string[] }).lines[0]!, /^Starting lsp-hub \(from fallback; workspace not trusted\)$/);
    assert.equal(client.isRunning(), false);
  });
});
