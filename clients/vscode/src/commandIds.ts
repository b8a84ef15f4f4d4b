// The extension's own command ids (package.json `contributes.commands`). No `vscode` import.
//
// They must differ from every command the hub advertises: vscode-languageclient registers each advertised
// `executeCommandProvider` command as a VS Code command, and a second registration of the same id fails.
// Hence `lspHub.showStatus` beside the hub's `lspHub.status`, `lspHub.restartHub` rather than `lspHub.restart`.

export const ExtensionCommand = {
  showRepoMap: "lspHub.showRepoMap",
  findRelevantFiles: "lspHub.findRelevantFiles",
  showCallers: "lspHub.showCallers",
  checkSyntax: "lspHub.checkSyntax",
  showStatus: "lspHub.showStatus",
  restartHub: "lspHub.restartHub",
} as const;

export type ExtensionCommandId = (typeof ExtensionCommand)[keyof typeof ExtensionCommand];

export const EXTENSION_COMMAND_IDS: readonly ExtensionCommandId[] = Object.values(ExtensionCommand);

/** The client id: vscode-languageclient reads `<id>.trace.server` for the trace setting. */
export const CLIENT_ID = "lspHub";
export const CLIENT_NAME = "LSP Hub";
