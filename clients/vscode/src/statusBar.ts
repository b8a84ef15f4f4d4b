// The status bar item: how many servers run and whether the index builds; a click opens the status.

import * as vscode from "vscode";
import { ExtensionCommand } from "./commandIds";
import { errorMessage, type HubConnection } from "./hub";
import { HubCommand, parseStatus } from "./requests";
import { statusBarView } from "./views";

export const POLL_INTERVAL_MS = 5000;

/**
 * Polls `lspHub.status` every few seconds, but only while the window has focus and no poll is in flight:
 * one small request per interval at most, none while the user is elsewhere.
 */
export class HubStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private timer: ReturnType<typeof setInterval> | undefined;
  private inFlight = false;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly hub: HubConnection,
    private readonly intervalMs: number = POLL_INTERVAL_MS,
  ) {
    this.item = vscode.window.createStatusBarItem("lspHub.status", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "LSP Hub";
    this.item.command = ExtensionCommand.showStatus;
    this.item.text = "$(loading~spin) LSP Hub";
    this.item.tooltip = "LSP Hub is starting";
    this.item.show();
    this.subscriptions.push(
      vscode.window.onDidChangeWindowState((state) => (state.focused ? this.resume() : this.pause())),
    );
  }

  /** Starts polling (when the window has focus) and refreshes at once. */
  resume(): void {
    if (this.timer === undefined && vscode.window.state.focused) {
      this.timer = setInterval(() => void this.refresh(), this.intervalMs);
    }
    void this.refresh();
  }

  pause(): void {
    if (this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  get polling(): boolean {
    return this.timer !== undefined;
  }

  async refresh(): Promise<void> {
    if (this.inFlight) {
      return;
    }
    this.inFlight = true;
    try {
      if (!this.hub.isRunning()) {
        this.show(statusBarView(undefined));
        return;
      }
      const status = parseStatus(await this.hub.executeCommand(HubCommand.status));
      this.show(statusBarView(status));
    } catch (error) {
      this.show(statusBarView(undefined, errorMessage(error)));
    } finally {
      this.inFlight = false;
    }
  }

  private show(view: { text: string; tooltip: string }): void {
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
  }

  dispose(): void {
    this.pause();
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
    this.item.dispose();
  }
}
