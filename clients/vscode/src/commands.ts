// The palette commands: collect input from the editor, ask the hub, show the answer.
// Request building and result shaping live in requests.ts and views.ts; this file only talks to VS Code.

import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { ExtensionCommand } from "./commandIds";
import { errorMessage, type HubConnection } from "./hub";
import {
  HubCommand,
  ResultShapeError,
  callersAtPositionArguments,
  parseCallers,
  parseRelevantFiles,
  parseRepoMap,
  parseStatus,
  parseSyntaxCheck,
  relevantFilesArguments,
  repoMapArguments,
  restartServerArguments,
  syntaxCheckArguments,
  type Location,
  type Range,
  type ServerStatus,
} from "./requests";
import {
  callersView,
  incompleteNote,
  relevantFilePicks,
  repoMapMarkdown,
  resolveResultPath,
  statusView,
  syntaxSummary,
} from "./views";

/** Thrown for a problem the user can act on; shown as a warning rather than an error. */
export class UserFacingProblem extends Error {}

/** Fails early, with an explanation, when this lsp-hub does not offer a command. */
export async function requireHubCommand(hub: HubConnection, command: string): Promise<void> {
  await hub.whenReady();
  if (!hub.isRunning()) {
    throw new UserFacingProblem("LSP Hub is not running. Check the “LSP Hub” output, then run “LSP Hub: Restart”.");
  }
  if (!hub.advertisedCommands().includes(command)) {
    throw new UserFacingProblem(`This lsp-hub does not offer ${command}; update lsp-hub to use this command.`);
  }
}

function activeFileEditor(): vscode.TextEditor {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined) {
    throw new UserFacingProblem("Open a file first.");
  }
  return editor;
}

function workspaceFolderPaths(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((folder) => folder.uri.scheme === "file").map((folder) => folder.uri.fsPath);
}

function displayName(uri: vscode.Uri): string {
  return vscode.workspace.asRelativePath(uri, false);
}

export function toVscodeRange(range: Range): vscode.Range {
  return new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
}

export function toVscodeLocation(location: Location): vscode.Location {
  return new vscode.Location(vscode.Uri.parse(location.uri), toVscodeRange(location.range));
}

// ------------------------------------------------------------------------------------------ commands
export async function showRepoMap(hub: HubConnection): Promise<void> {
  await requireHubCommand(hub, HubCommand.repoMap);
  const active = vscode.window.activeTextEditor?.document;
  const focus = active !== undefined && active.uri.scheme === "file" ? active.uri : undefined;
  const budget = vscode.workspace.getConfiguration("lspHub").get<number>("repoMap.tokenBudget");
  const argument = repoMapArguments({
    focusUris: focus ? [focus.toString()] : [],
    tokenBudget: typeof budget === "number" && budget > 0 ? Math.floor(budget) : undefined,
  });
  const result = parseRepoMap(await hub.executeCommand(HubCommand.repoMap, argument));
  const content = repoMapMarkdown(result, focus ? displayName(focus) : undefined);
  const document = await vscode.workspace.openTextDocument({ language: "markdown", content });
  await vscode.window.showTextDocument(document, { preview: true });
}

export async function findRelevantFiles(hub: HubConnection): Promise<void> {
  await requireHubCommand(hub, HubCommand.relevantFiles);
  const description = await vscode.window.showInputBox({
    title: "LSP Hub: Find Files Relevant to a Task",
    prompt: "Describe the task; files named, imported or defining what it mentions rank first",
    placeHolder: "e.g. add a discount to Inventory.total_value",
    ignoreFocusOut: true,
    validateInput: (value) => (value.trim() === "" ? "Describe the task in a few words" : undefined),
  });
  if (description === undefined || description.trim() === "") {
    return;
  }
  const active = vscode.window.activeTextEditor?.document;
  const targets = active !== undefined && active.uri.scheme === "file" ? [active.uri.toString()] : [];
  const result = parseRelevantFiles(
    await hub.executeCommand(HubCommand.relevantFiles, relevantFilesArguments(description, targets)),
  );
  const picks = relevantFilePicks(result);
  const note = incompleteNote(result);
  if (picks.length === 0) {
    void vscode.window.showInformationMessage(`No relevant files found${note ? ` (${note})` : ""}.`);
    return;
  }
  const chosen = await vscode.window.showQuickPick(picks, {
    title: `Files relevant to: ${description.trim()}`,
    placeHolder: note ? `Pick a file to open (${note})` : "Pick a file to open",
    matchOnDescription: true,
    matchOnDetail: true,
  });
  if (chosen === undefined) {
    return;
  }
  const file = resolveResultPath(chosen.path, workspaceFolderPaths(), fs.existsSync);
  if (file === undefined) {
    throw new UserFacingProblem(`Cannot open ${chosen.path}: no workspace folder is open.`);
  }
  await vscode.window.showTextDocument(vscode.Uri.file(file));
}

export async function showCallers(hub: HubConnection): Promise<void> {
  await requireHubCommand(hub, HubCommand.callers);
  const editor = activeFileEditor();
  const uri = editor.document.uri;
  const position = editor.selection.active;
  const result = parseCallers(
    await hub.executeCommand(
      HubCommand.callers,
      callersAtPositionArguments(uri.toString(), { line: position.line, character: position.character }),
    ),
  );
  const view = callersView(result);
  if (view.locations.length === 0) {
    void vscode.window.showInformationMessage(view.message ?? `No callers of ${view.symbol} found.`);
    return;
  }
  await vscode.commands.executeCommand(
    "editor.action.showReferences",
    uri,
    new vscode.Position(position.line, position.character),
    view.locations.map(toVscodeLocation),
  );
  if (view.message) {
    void vscode.window.showInformationMessage(view.message);
  }
}

export async function checkSyntax(hub: HubConnection): Promise<void> {
  await requireHubCommand(hub, HubCommand.syntaxCheck);
  const editor = activeFileEditor();
  const document = editor.document;
  const result = parseSyntaxCheck(
    await hub.executeCommand(HubCommand.syntaxCheck, syntaxCheckArguments(document.uri.toString(), document.getText())),
  );
  const summary = syntaxSummary(result, path.basename(document.uri.fsPath || document.uri.path));
  if (summary.errors.length === 0) {
    void vscode.window.showInformationMessage(summary.message);
    return;
  }
  const chosen = await vscode.window.showQuickPick(summary.errors, {
    title: summary.message,
    placeHolder: "Pick an error to go to it",
    matchOnDetail: true,
  });
  if (chosen !== undefined) {
    const range = toVscodeRange(chosen.range);
    editor.selection = new vscode.Selection(range.start, range.end);
    editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }
}

interface ServerAction extends vscode.QuickPickItem {
  run: () => Promise<void>;
}

export async function showStatus(hub: HubConnection, onChange: () => void = () => undefined): Promise<void> {
  await requireHubCommand(hub, HubCommand.status);
  const view = statusView(parseStatus(await hub.executeCommand(HubCommand.status)));
  const items = view.servers.length > 0 ? view.servers : [];
  const title = `LSP Hub: ${view.running} of ${view.total} server${view.total === 1 ? "" : "s"} running`;
  if (items.length === 0) {
    const answer = await vscode.window.showInformationMessage(
      `${title}. Servers start when a file of their language is opened.${view.indexLine ? ` ${view.indexLine}.` : ""}`,
      "Restart LSP Hub",
    );
    if (answer === "Restart LSP Hub") {
      await restartHub(hub, onChange);
    }
    return;
  }
  const chosen = await vscode.window.showQuickPick(items, {
    title,
    placeHolder: view.indexLine ?? "Pick a server to restart it",
    matchOnDetail: true,
  });
  if (chosen === undefined) {
    return;
  }
  const action = await vscode.window.showQuickPick(serverActions(hub, chosen.server, onChange), {
    title: `${chosen.server.name} — ${chosen.server.root ?? "(no root)"}`,
  });
  if (action !== undefined) {
    await action.run();
  }
}

/** Per-server restart only when the hub offers it; restarting the whole hub always works. */
export function serverActions(hub: HubConnection, server: ServerStatus, onChange: () => void): ServerAction[] {
  const actions: ServerAction[] = [];
  if (server.root !== null && hub.advertisedCommands().includes(HubCommand.restartServer)) {
    const root = server.root;
    actions.push({
      label: `$(debug-restart) Restart ${server.name}`,
      description: root,
      run: async () => {
        await hub.executeCommand(HubCommand.restartServer, restartServerArguments(server.name, root));
        onChange();
        void vscode.window.showInformationMessage(`Restarted ${server.name} for ${root}.`);
      },
    });
  }
  actions.push({
    label: "$(refresh) Restart LSP Hub",
    description: "all servers",
    run: () => restartHub(hub, onChange),
  });
  actions.push({ label: "$(output) Show LSP Hub Output", run: async () => hub.showOutput() });
  return actions;
}

export async function restartHub(hub: HubConnection, onChange: () => void = () => undefined): Promise<void> {
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: "Restarting LSP Hub" },
    () => hub.restart(),
  );
  onChange();
}

// ------------------------------------------------------------------------------------------ registration
/** Runs a command, turning failures into messages instead of unhandled rejections. */
export async function runReportingErrors(action: () => Promise<void>, hub?: HubConnection): Promise<void> {
  try {
    await action();
  } catch (error) {
    if (error instanceof UserFacingProblem) {
      void vscode.window.showWarningMessage(error.message);
    } else if (error instanceof ResultShapeError) {
      void vscode.window.showErrorMessage(`LSP Hub answered in an unexpected shape (${error.message}). Is lsp-hub up to date?`);
    } else {
      const choice = await vscode.window.showErrorMessage(`LSP Hub: ${errorMessage(error)}`, "Show Output");
      if (choice === "Show Output") {
        hub?.showOutput();
      }
    }
  }
}

export function registerCommands(hub: HubConnection, onChange: () => void): vscode.Disposable[] {
  const handlers: Record<string, () => Promise<void>> = {
    [ExtensionCommand.showRepoMap]: () => showRepoMap(hub),
    [ExtensionCommand.findRelevantFiles]: () => findRelevantFiles(hub),
    [ExtensionCommand.showCallers]: () => showCallers(hub),
    [ExtensionCommand.checkSyntax]: () => checkSyntax(hub),
    [ExtensionCommand.showStatus]: () => showStatus(hub, onChange),
    [ExtensionCommand.restartHub]: () => restartHub(hub, onChange),
  };
  return Object.entries(handlers).map(([id, handler]) =>
    vscode.commands.registerCommand(id, () => runReportingErrors(handler, hub)),
  );
}
