// Hub results turned into what the extension shows: markdown, quick pick items, status bar text.
// No `vscode` import: plain data in, plain data out, so every rule here is unit-tested.

import * as path from "node:path";
import { fileURLToPath } from "node:url";
import type {
  CallersResult,
  Completeness,
  Location,
  Range,
  RelevantFilesResult,
  RepoMapResult,
  ServerStatus,
  StatusResult,
  SyntaxCheckResult,
} from "./requests";

/** "" when complete, else a short note of what was left out, so "nothing found" is never mistaken. */
export function incompleteNote(result: Completeness): string {
  if (result.complete) {
    return "";
  }
  const parts: string[] = [];
  const skipped = result.skippedFiles?.length ?? 0;
  if (skipped > 0) {
    parts.push(`${skipped} file${skipped === 1 ? "" : "s"} skipped`);
  }
  const pending = countOf(result.pendingFiles);
  if (pending > 0) {
    parts.push(`${pending} file${pending === 1 ? "" : "s"} not indexed yet`);
  }
  return parts.length > 0 ? `incomplete: ${parts.join(", ")}` : "incomplete: the index is still building";
}

function countOf(value: unknown): number {
  if (Array.isArray(value)) {
    return value.length;
  }
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

// ------------------------------------------------------------------------------------------ repo map
/** The markdown document "Show Repo Map" opens. The map itself goes in a fence: its indentation matters. */
export function repoMapMarkdown(result: RepoMapResult, focusLabel?: string): string {
  const lines = ["# Repository map", ""];
  const facts = [`${result.files.length} file${result.files.length === 1 ? "" : "s"}`, `about ${result.tokens} tokens`];
  if (focusLabel) {
    facts.unshift(`focused on \`${focusLabel}\``);
  }
  const note = incompleteNote(result);
  if (note) {
    facts.push(`**${note}**`);
  }
  lines.push(facts.join(" · "), "");
  if (result.text.trim() === "") {
    lines.push("_The map is empty: the index found no other files with definitions._");
  } else {
    const fence = longestBacktickRun(result.text) >= 3 ? "`".repeat(longestBacktickRun(result.text) + 1) : "```";
    lines.push(fence, result.text.replace(/\n+$/, ""), fence);
  }
  return lines.join("\n") + "\n";
}

function longestBacktickRun(text: string): number {
  let longest = 0;
  for (const match of text.matchAll(/`+/g)) {
    longest = Math.max(longest, match[0].length);
  }
  return longest;
}

// ------------------------------------------------------------------------------------------ relevant files
export interface FilePick {
  label: string;
  description: string;
  detail: string;
  /** Workspace-relative POSIX path as the hub gave it. */
  path: string;
}

export function relevantFilePicks(result: RelevantFilesResult): FilePick[] {
  return result.files.map((file) => ({
    label: file.path,
    description: `score ${formatScore(file.score)}`,
    detail: file.reasons.length > 0 ? file.reasons.join(" · ") : "no reason given",
    path: file.path,
  }));
}

export function formatScore(score: number): string {
  return score >= 100 ? score.toFixed(0) : score >= 1 ? score.toFixed(2) : score.toPrecision(2);
}

/**
 * The file system path of a path the hub returned: a `file:` URI, an absolute path, or a workspace-relative
 * POSIX path. With several workspace folders the first folder holding the file wins.
 */
export function resolveResultPath(
  resultPath: string,
  workspaceFolders: readonly string[],
  exists: (candidate: string) => boolean,
): string | undefined {
  if (resultPath.startsWith("file:")) {
    return fileURLToPath(resultPath);
  }
  if (path.isAbsolute(resultPath)) {
    return resultPath;
  }
  const segments = resultPath.split("/");
  const candidates = workspaceFolders.map((folder) => path.join(folder, ...segments));
  return candidates.find(exists) ?? candidates[0];
}

// ------------------------------------------------------------------------------------------ syntax check
export interface SyntaxErrorPick {
  label: string;
  detail: string;
  range: Range;
}

export interface SyntaxSummary {
  level: "info" | "warning";
  message: string;
  errors: SyntaxErrorPick[];
}

export function syntaxSummary(result: SyntaxCheckResult, fileLabel: string): SyntaxSummary {
  if (!result.checked) {
    const why = result.reason === "unsupported_language" ? "its language is not supported" : result.reason ?? "no reason given";
    return { level: "info", message: `Syntax of ${fileLabel} was not checked: ${why}.`, errors: [] };
  }
  const language = result.language ? ` (${result.language})` : "";
  if (result.errors.length === 0) {
    return { level: "info", message: `No syntax errors in ${fileLabel}${language}.`, errors: [] };
  }
  const count = result.errors.length;
  return {
    level: "warning",
    message: `${count} syntax error${count === 1 ? "" : "s"} in ${fileLabel}${language}.`,
    errors: result.errors.map((error) => ({
      // Editors count lines and columns from 1, LSP from 0.
      label: `Ln ${error.range.start.line + 1}, Col ${error.range.start.character + 1}`,
      detail: error.message,
      range: error.range,
    })),
  };
}

// ------------------------------------------------------------------------------------------ callers
export interface CallersView {
  symbol: string;
  locations: Location[];
  /** Shown instead of the references view when there is nothing to show, or beside it when incomplete. */
  message?: string;
}

export function callersView(result: CallersResult): CallersView {
  const symbol = result.symbol ?? "the symbol at the cursor";
  const seen = new Set<string>();
  const locations: Location[] = [];
  for (const site of result.callers) {
    const key = `${site.location.uri}#${site.location.range.start.line}:${site.location.range.start.character}`;
    if (!seen.has(key)) {
      seen.add(key);
      locations.push(site.location);
    }
  }
  const note = incompleteNote(result);
  if (result.symbol === null) {
    return { symbol, locations, message: "No symbol found at the cursor." };
  }
  if (locations.length === 0) {
    return { symbol, locations, message: `No callers of ${symbol} found${note ? ` (${note})` : ""}.` };
  }
  return note ? { symbol, locations, message: `Callers of ${symbol}: ${note}.` } : { symbol, locations };
}

// ------------------------------------------------------------------------------------------ status
export interface ServerPick {
  label: string;
  description: string;
  detail: string;
  server: ServerStatus;
}

export interface StatusView {
  running: number;
  total: number;
  indexState: string | undefined;
  indexLine: string | undefined;
  servers: ServerPick[];
}

export const RUNNING_STATES: ReadonlySet<string> = new Set(["running"]);

export function statusView(result: StatusResult): StatusView {
  const servers = result.servers.map((server) => {
    const facts = [server.state];
    if (server.restarts > 0) {
      facts.push(`${server.restarts} restart${server.restarts === 1 ? "" : "s"}`);
    }
    if (server.pid !== null) {
      facts.push(`pid ${server.pid}`);
    }
    const detailParts = [server.root ?? "(no root)"];
    if (server.languages.length > 0) {
      detailParts.push(server.languages.join(", "));
    }
    if (server.error) {
      detailParts.push(server.error);
    }
    return { label: server.name, description: facts.join(" · "), detail: detailParts.join(" — "), server };
  });
  return {
    running: result.servers.filter((server) => RUNNING_STATES.has(server.state)).length,
    total: result.servers.length,
    indexState: result.index?.state,
    indexLine: result.index ? indexLine(result) : undefined,
    servers,
  };
}

function indexLine(result: StatusResult): string {
  const index = result.index!;
  const facts = [`Index ${index.state}`];
  if (index.files !== undefined) {
    facts.push(`${index.files} files`);
  }
  if (index.symbols !== undefined) {
    facts.push(`${index.symbols} symbols`);
  }
  if (index.lastBuildSeconds !== undefined && index.lastBuildSeconds !== null) {
    facts.push(`built in ${index.lastBuildSeconds.toFixed(1)} s`);
  }
  return facts.join(" · ");
}

export interface StatusBarView {
  text: string;
  tooltip: string;
}

/** `$(...)` are VS Code codicons; `~spin` animates while the index builds. */
export function statusBarView(result: StatusResult | undefined, problem?: string): StatusBarView {
  if (result === undefined) {
    return { text: "$(warning) LSP Hub", tooltip: problem ? `LSP Hub: ${problem}` : "LSP Hub is not running" };
  }
  const view = statusView(result);
  const building = view.indexState === "building";
  const text = `${building ? "$(sync~spin)" : "$(server-process)"} LSP Hub: ${view.running}${building ? " · indexing" : ""}`;
  const lines = [`LSP Hub: ${view.running} of ${view.total} server${view.total === 1 ? "" : "s"} running`];
  for (const pick of view.servers) {
    lines.push(`${pick.label} (${pick.server.state}) ${pick.server.root ?? ""}`.trimEnd());
  }
  if (view.indexLine) {
    lines.push(view.indexLine);
  }
  lines.push("Click for details");
  return { text, tooltip: lines.join("\n") };
}
