// How the extension starts lsp-hub: which program, which arguments, which initialization options.
// Deliberately free of `vscode` imports so it can be unit-tested and reused by the integration test.

import * as fs from "node:fs";
import * as path from "node:path";

/** VS Code language ids that lsp-hub's built-in configuration serves (lsp_hub/config/defaults.toml). */
export const SERVED_LANGUAGE_IDS: readonly string[] = [
  "python",
  "typescript",
  "javascript",
  "typescriptreact",
  "javascriptreact",
  "c",
  "cpp",
  "go",
  "rust",
  "shellscript",
  "yaml",
  "json",
  "html",
  "css",
];

/** The client's document selector: every served language, files on disk only. */
export function documentSelector(): { scheme: string; language: string }[] {
  return SERVED_LANGUAGE_IDS.map((language) => ({ scheme: "file", language }));
}

/** The extension's `lspHub.*` settings that decide how the hub is launched. */
export interface LaunchSettings {
  /** Empty or undefined means: `lsp-hub` on PATH, else `<workspace>/.venv/bin/lsp-hub` (trusted workspaces only). */
  serverPath?: string;
  serverArgs?: readonly string[];
  configPath?: string;
  initializationOptions?: Record<string, unknown>;
}

export interface LaunchContext {
  /** Filesystem paths of the workspace folders, first one first. */
  workspaceFolders: readonly string[];
  /** vscode.workspace.isTrusted */
  trusted: boolean;
  /** Defaults to process.env.PATH. */
  pathVariable?: string;
  platform?: NodeJS.Platform;
  /** Defaults to a real "is an executable file" check. */
  isExecutable?: (candidate: string) => boolean;
}

export interface HubLaunch {
  command: string;
  args: string[];
  /** Where the command came from, for the output channel and error messages. */
  origin: "setting" | "path" | "workspace-venv" | "fallback";
}

export const DEFAULT_SERVER_NAME = "lsp-hub";

export function isExecutableFile(candidate: string): boolean {
  try {
    const stat = fs.statSync(candidate);
    if (!stat.isFile()) {
      return false;
    }
    fs.accessSync(candidate, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first `name` found on a PATH-style variable, or undefined (a minimal `which`). */
export function findOnPath(
  name: string,
  pathVariable: string = process.env.PATH ?? "",
  platform: NodeJS.Platform = process.platform,
  isExecutable: (candidate: string) => boolean = isExecutableFile,
): string | undefined {
  const separator = platform === "win32" ? ";" : ":";
  const suffixes = platform === "win32" ? ["", ".exe", ".cmd", ".bat"] : [""];
  for (const directory of pathVariable.split(separator)) {
    if (directory === "") {
      continue;
    }
    for (const suffix of suffixes) {
      const candidate = path.join(directory, name + suffix);
      if (isExecutable(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

/** `<folder>/.venv/bin/lsp-hub` (Scripts\lsp-hub.exe on Windows) for each workspace folder. */
export function workspaceVenvCandidates(folders: readonly string[], platform: NodeJS.Platform): string[] {
  return folders.map((folder) =>
    platform === "win32"
      ? path.join(folder, ".venv", "Scripts", `${DEFAULT_SERVER_NAME}.exe`)
      : path.join(folder, ".venv", "bin", DEFAULT_SERVER_NAME),
  );
}

/**
 * Decide the hub's command line. An explicit `serverPath` wins; otherwise `lsp-hub` on PATH; otherwise the
 * workspace's `.venv` copy, but only in a trusted workspace: an untrusted repository must not choose the
 * program the editor runs. When nothing is found, the bare name is returned so the spawn error names it.
 */
export function resolveHubLaunch(settings: LaunchSettings, context: LaunchContext): HubLaunch {
  const platform = context.platform ?? process.platform;
  const isExecutable = context.isExecutable ?? isExecutableFile;
  const args = [...(settings.serverArgs ?? [])];
  const configPath = settings.configPath?.trim();
  if (configPath) {
    args.push("--config", expandConfigPath(configPath, context.workspaceFolders));
  }
  const explicit = settings.serverPath?.trim();
  if (explicit) {
    return { command: explicit, args, origin: "setting" };
  }
  const onPath = findOnPath(DEFAULT_SERVER_NAME, context.pathVariable ?? process.env.PATH ?? "", platform, isExecutable);
  if (onPath !== undefined) {
    return { command: onPath, args, origin: "path" };
  }
  if (context.trusted) {
    const local = workspaceVenvCandidates(context.workspaceFolders, platform).find(isExecutable);
    if (local !== undefined) {
      return { command: local, args, origin: "workspace-venv" };
    }
  }
  return { command: DEFAULT_SERVER_NAME, args, origin: "fallback" };
}

/** `${workspaceFolder}` and relative paths resolve against the first workspace folder. */
export function expandConfigPath(configPath: string, folders: readonly string[]): string {
  const firstFolder = folders[0];
  let expanded = configPath;
  if (firstFolder !== undefined) {
    expanded = expanded.replace(/\$\{workspaceFolder\}/g, firstFolder);
  }
  if (!path.isAbsolute(expanded) && firstFolder !== undefined) {
    expanded = path.join(firstFolder, expanded);
  }
  return expanded;
}

/** Keys the hub reads as "the editor trusts this workspace" (lsp_hub/config/loader.py CLIENT_TRUST_KEYS). */
export const TRUST_KEYS: readonly string[] = ["trustWorkspace", "trust_workspace"];

/**
 * `initializationOptions` for the hub: the user's `lspHub.initializationOptions` under `lspHub`, with the
 * trust flag set from VS Code's own workspace trust. Any trust flag inside the user's options is removed
 * first: a repository's .vscode/settings.json must not be able to declare itself trusted.
 */
export function buildInitializationOptions(
  userOptions: Record<string, unknown> | undefined,
  trusted: boolean,
): { lspHub: Record<string, unknown> } {
  const options: Record<string, unknown> = isPlainObject(userOptions) ? { ...userOptions } : {};
  for (const key of TRUST_KEYS) {
    delete options[key];
  }
  const hubSection = options["hub"];
  if (isPlainObject(hubSection)) {
    const cleaned = { ...hubSection };
    for (const key of TRUST_KEYS) {
      delete cleaned[key];
    }
    options["hub"] = cleaned;
  }
  options["trustWorkspace"] = trusted;
  return { lspHub: options };
}

/** Settings whose change requires a new hub process. */
export const RESTART_SETTINGS: readonly string[] = [
  "lspHub.serverPath",
  "lspHub.serverArgs",
  "lspHub.configPath",
  "lspHub.initializationOptions",
];

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
