// package.json must agree with the code: activation, commands, settings, trust.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { EXTENSION_COMMAND_IDS } from "../../src/commandIds";
import { RESTART_SETTINGS, SERVED_LANGUAGE_IDS } from "../../src/launch";
import { HubCommand } from "../../src/requests";

const extensionRoot = path.resolve(__dirname, "..", "..", "..");
const manifest = JSON.parse(fs.readFileSync(path.join(extensionRoot, "package.json"), "utf8"));

describe("package.json", () => {
  it("activates on every served language and every command", () => {
    const events: string[] = manifest.activationEvents;
    for (const language of SERVED_LANGUAGE_IDS) {
      assert.ok(events.includes(`onLanguage:${language}`), language);
    }
    for (const command of EXTENSION_COMMAND_IDS) {
      assert.ok(events.includes(`onCommand:${command}`), command);
    }
  });

  it("contributes exactly the registered commands, titled for the palette", () => {
    const contributed: { command: string; title: string; category: string }[] = manifest.contributes.commands;
    assert.deepEqual(contributed.map((entry) => entry.command).sort(), [...EXTENSION_COMMAND_IDS].sort());
    assert.deepEqual(
      contributed.map((entry) => `${entry.category}: ${entry.title}`),
      [
        "LSP Hub: Show Repo Map",
        "LSP Hub: Find Files Relevant to a Task…",
        "LSP Hub: Show Callers",
        "LSP Hub: Check Syntax of This File",
        "LSP Hub: Show Status",
        "LSP Hub: Restart",
      ],
    );
  });

  it("uses no command id the hub advertises (vscode-languageclient registers those)", () => {
    const hubIds = new Set<string>([...Object.values(HubCommand), "lspHub.restart"]);
    for (const command of EXTENSION_COMMAND_IDS) {
      assert.ok(!hubIds.has(command), command);
    }
  });

  it("declares every setting the code reads", () => {
    const properties = Object.keys(manifest.contributes.configuration.properties);
    assert.deepEqual(properties.sort(), [
      "lspHub.configPath",
      "lspHub.initializationOptions",
      "lspHub.repoMap.tokenBudget",
      "lspHub.serverArgs",
      "lspHub.serverPath",
      "lspHub.trace.server",
    ]);
    assert.deepEqual(manifest.contributes.configuration.properties["lspHub.trace.server"].enum, ["off", "messages", "compact", "verbose"]);
  });

  it("supports untrusted workspaces in a limited way, restricting the launch settings", () => {
    const trust = manifest.capabilities.untrustedWorkspaces;
    assert.equal(trust.supported, "limited");
    assert.deepEqual([...trust.restrictedConfigurations].sort(), [...RESTART_SETTINGS].sort());
  });

  it("points main at the bundle and pins the client library", () => {
    assert.equal(manifest.main, "./dist/extension.js");
    assert.match(manifest.dependencies["vscode-languageclient"], /^\^(9|1\d)\./);
    assert.match(manifest.engines.vscode, /^\^1\.\d+\.0$/);
  });
});
