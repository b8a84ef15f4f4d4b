// Entry point: start lsp-hub, register the palette commands, keep the status bar current.

import * as vscode from "vscode";
import { CLIENT_NAME } from "./commandIds";
import { registerCommands } from "./commands";
import { HubClient, errorMessage } from "./hub";
import { RESTART_SETTINGS } from "./launch";
import { HubStatusBar } from "./statusBar";

let hub: HubClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const outputChannel = vscode.window.createOutputChannel(CLIENT_NAME, { log: true });
  const client = new HubClient(outputChannel);
  hub = client;
  const statusBar = new HubStatusBar(client);
  const refresh = (): void => void statusBar.refresh();
  context.subscriptions.push(outputChannel, client, statusBar, ...registerCommands(client, refresh));

  const restart = async (reason: string): Promise<void> => {
    outputChannel.appendLine(`Restarting: ${reason}`);
    try {
      await client.restart();
    } catch (error) {
      void vscode.window.showErrorMessage(`LSP Hub: ${errorMessage(error)}`);
    }
    refresh();
  };
  context.subscriptions.push(
    // The hub only learns about trust in `initialize`, so a newly trusted workspace needs a new hub.
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restart("the workspace is now trusted")),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (!RESTART_SETTINGS.some((setting) => event.affectsConfiguration(setting))) {
        return;
      }
      const answer = await vscode.window.showInformationMessage("LSP Hub settings changed. Restart the hub to apply them?", "Restart");
      if (answer === "Restart") {
        await restart("settings changed");
      }
    }),
  );

  try {
    await client.start();
  } catch (error) {
    outputChannel.appendLine(errorMessage(error));
    void vscode.window.showErrorMessage(`LSP Hub: ${errorMessage(error)}`, "Show Output").then((choice) => {
      if (choice === "Show Output") {
        outputChannel.show(true);
      }
    });
  }
  statusBar.resume();
}

export async function deactivate(): Promise<void> {
  const running = hub;
  hub = undefined;
  await running?.stop();
}
