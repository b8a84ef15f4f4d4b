// The one language client that runs lsp-hub, and the narrow interface the commands and status bar use.

import * as vscode from "vscode";
import { LanguageClient, type Executable, type LanguageClientOptions } from "vscode-languageclient/node";
import { CLIENT_ID, CLIENT_NAME } from "./commandIds";
import {
  buildInitializationOptions,
  documentSelector,
  isPlainObject,
  resolveHubLaunch,
  type HubLaunch,
  type LaunchSettings,
} from "./launch";
import { advertisedCommands, executeCommandParams } from "./requests";

/** What commands and the status bar need from the hub; tests provide their own. */
export interface HubConnection {
  isRunning(): boolean;
  /** Settles when a start in progress has finished (successfully or not). */
  whenReady(): Promise<void>;
  /** Commands the hub advertised in `initialize` (plus the ones registered later). */
  advertisedCommands(): string[];
  /** `workspace/executeCommand` with the hub's one-object argument convention. */
  executeCommand(command: string, argument?: object): Promise<unknown>;
  restart(): Promise<void>;
  showOutput(): void;
}

export function readLaunchSettings(configuration: vscode.WorkspaceConfiguration): LaunchSettings {
  const serverArgs = configuration.get<unknown>("serverArgs");
  const initializationOptions = configuration.get<unknown>("initializationOptions");
  return {
    serverPath: stringOrUndefined(configuration.get<unknown>("serverPath")),
    serverArgs: Array.isArray(serverArgs) ? serverArgs.filter((arg): arg is string => typeof arg === "string") : [],
    configPath: stringOrUndefined(configuration.get<unknown>("configPath")),
    initializationOptions: isPlainObject(initializationOptions) ? initializationOptions : {},
  };
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

function workspaceFolderPaths(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((folder) => folder.uri.scheme === "file").map((folder) => folder.uri.fsPath);
}

/** Everything the LanguageClient constructor gets, computed from settings and workspace state. */
export function clientConfiguration(outputChannel: vscode.LogOutputChannel): {
  launch: HubLaunch;
  serverOptions: Executable;
  clientOptions: LanguageClientOptions;
} {
  const settings = readLaunchSettings(vscode.workspace.getConfiguration("lspHub"));
  const folders = workspaceFolderPaths();
  const trusted = vscode.workspace.isTrusted;
  const launch = resolveHubLaunch(settings, { workspaceFolders: folders, trusted });
  const serverOptions: Executable = { command: launch.command, args: launch.args };
  if (folders[0] !== undefined) {
    serverOptions.options = { cwd: folders[0] };
  }
  const clientOptions: LanguageClientOptions = {
    documentSelector: documentSelector(),
    initializationOptions: buildInitializationOptions(settings.initializationOptions, trusted),
    outputChannel,
  };
  return { launch, serverOptions, clientOptions };
}

export class HubClient implements HubConnection, vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;

  constructor(private readonly outputChannel: vscode.LogOutputChannel) {}

  isRunning(): boolean {
    return this.client?.isRunning() ?? false;
  }

  async whenReady(): Promise<void> {
    await this.starting?.catch(() => undefined);
  }

  advertisedCommands(): string[] {
    return advertisedCommands(this.client?.initializeResult);
  }

  async start(): Promise<void> {
    if (this.starting === undefined) {
      this.starting = this.startNewClient().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  private async startNewClient(): Promise<void> {
    const { launch, serverOptions, clientOptions } = clientConfiguration(this.outputChannel);
    this.outputChannel.appendLine(
      `Starting ${[launch.command, ...launch.args].join(" ")} (from ${launch.origin}; workspace ${vscode.workspace.isTrusted ? "trusted" : "not trusted"})`,
    );
    const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      const hint =
        launch.origin === "fallback"
          ? " Install it (pip install lsp-hub) or set lspHub.serverPath."
          : "";
      throw new Error(`Could not start ${launch.command}: ${errorMessage(error)}.${hint}`);
    }
  }

  async executeCommand(command: string, argument?: object): Promise<unknown> {
    await this.whenReady();
    const client = this.client;
    if (client === undefined || !client.isRunning()) {
      throw new Error("LSP Hub is not running; use “LSP Hub: Restart”.");
    }
    return client.sendRequest("workspace/executeCommand", executeCommandParams(command, argument));
  }

  /** A fresh process with freshly read settings (a plain client restart would keep the old command line). */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async stop(): Promise<void> {
    await this.whenReady();
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) {
      try {
        await client.dispose(5000);
      } catch (error) {
        this.outputChannel.appendLine(`Stopping the hub: ${errorMessage(error)}`);
      }
    }
  }

  showOutput(): void {
    this.outputChannel.show(true);
  }

  dispose(): void {
    void this.stop();
  }
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
