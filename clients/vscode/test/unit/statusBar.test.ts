import { fakeVscode as vscode } from "../support/installFakes";

import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { beforeEach, describe, it } from "node:test";
import { HubStatusBar } from "../../src/statusBar";
import { FakeHub } from "../support/fakeHub";
import { statusResult } from "../support/samples";

let hub: FakeHub;

beforeEach(() => {
  vscode.reset();
  hub = new FakeHub();
  hub.answers.set("lspHub.status", statusResult());
});

describe("HubStatusBar", () => {
  it("is visible at once and opens the status on click", () => {
    const bar = new HubStatusBar(hub);
    const item = vscode.state.statusBarItems[0]!;
    assert.equal(item.visible, true);
    assert.equal(item.command, "lspHub.showStatus");
    assert.equal(item.text, "$(loading~spin) LSP Hub");
    bar.dispose();
    assert.equal(item.disposed, true);
  });

  it("shows the server count and the index state", async () => {
    const bar = new HubStatusBar(hub);
    await bar.refresh();
    assert.equal(bar.item.text, "$(server-process) LSP Hub: 2");
    hub.answers.set("lspHub.status", { ...statusResult(), index: { state: "building" } });
    await bar.refresh();
    assert.equal(bar.item.text, "$(sync~spin) LSP Hub: 2 · indexing");
    bar.dispose();
  });

  it("warns without asking a hub that is not running, and shows request failures", async () => {
    const bar = new HubStatusBar(hub);
    hub.running = false;
    await bar.refresh();
    assert.equal(bar.item.text, "$(warning) LSP Hub");
    assert.equal(hub.calls.length, 0);
    hub.running = true;
    hub.failWith = new Error("connection closed");
    await bar.refresh();
    assert.equal(bar.item.tooltip, "LSP Hub: connection closed");
    bar.dispose();
  });

  it("sends one request at a time", async () => {
    let release: (value: unknown) => void = () => undefined;
    const slow = new FakeHub();
    slow.executeCommand = async (command, argument) => {
      slow.calls.push({ command, argument });
      return new Promise((resolve) => (release = resolve));
    };
    const bar = new HubStatusBar(slow);
    const first = bar.refresh();
    await bar.refresh();
    assert.equal(slow.calls.length, 1);
    release(statusResult());
    await first;
    assert.equal(bar.item.text, "$(server-process) LSP Hub: 2");
    bar.dispose();
  });

  it("polls only while the window has focus", async () => {
    const bar = new HubStatusBar(hub, 10);
    bar.resume();
    assert.equal(bar.polling, true);
    await sleep(60);
    const whileFocused = hub.calls.length;
    assert.ok(whileFocused >= 3, `polled ${whileFocused} times`);
    vscode.state.windowState.fire({ focused: false });
    assert.equal(bar.polling, false);
    await sleep(40);
    assert.equal(hub.calls.length, whileFocused);
    vscode.state.windowState.fire({ focused: true });
    assert.equal(bar.polling, true);
    bar.dispose();
    assert.equal(bar.polling, false);
    assert.equal(vscode.state.windowState.listenerCount, 0);
  });

  it("does not start polling in an unfocused window", () => {
    vscode.window.state = { focused: false };
    const bar = new HubStatusBar(hub, 10);
    bar.resume();
    assert.equal(bar.polling, false);
    bar.dispose();
  });
});
