// The hub's `workspace/executeCommand` commands: the arguments the extension sends and the result shapes it
// accepts (issue 2 for lspHub.status, issue 3 for the index commands). No `vscode` import: the integration
// test drives a real hub with exactly these functions.

/** Commands the hub answers itself (its own table, beside the forwarded servers' commands). */
export const HubCommand = {
  status: "lspHub.status",
  repoMap: "lspHub.repoMap",
  relevantFiles: "lspHub.relevantFiles",
  syntaxCheck: "lspHub.syntaxCheck",
  callers: "lspHub.callers",
  restartServer: "lspHub.restartServer",
} as const;

export type HubCommandName = (typeof HubCommand)[keyof typeof HubCommand];

/** The index commands, each wired into the hub separately from the proxy core. */
export const INDEX_COMMANDS: readonly HubCommandName[] = [
  HubCommand.repoMap,
  HubCommand.relevantFiles,
  HubCommand.syntaxCheck,
  HubCommand.callers,
];

// ------------------------------------------------------------------------------------------ LSP basics
export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface Location {
  uri: string;
  range: Range;
}

export interface ExecuteCommandParams {
  command: string;
  arguments: unknown[];
}

/** Every hub command takes at most one JSON object argument. */
export function executeCommandParams(command: string, argument?: object): ExecuteCommandParams {
  return { command, arguments: argument === undefined ? [] : [argument] };
}

/** The commands the hub advertised in its initialize result (empty when it advertised none). */
export function advertisedCommands(initializeResult: unknown): string[] {
  const capabilities = isObject(initializeResult) ? initializeResult["capabilities"] : undefined;
  const provider = isObject(capabilities) ? capabilities["executeCommandProvider"] : undefined;
  const commands = isObject(provider) ? provider["commands"] : undefined;
  return Array.isArray(commands) ? commands.filter((name): name is string => typeof name === "string") : [];
}

// ------------------------------------------------------------------------------------------ arguments
export interface RepoMapArguments {
  focusFiles?: string[];
  mentionedIdents?: string[];
  tokenBudget?: number;
}

export function repoMapArguments(options: {
  focusUris?: readonly string[];
  mentionedIdents?: readonly string[];
  tokenBudget?: number;
}): RepoMapArguments {
  const argument: RepoMapArguments = {};
  if (options.focusUris && options.focusUris.length > 0) {
    argument.focusFiles = [...options.focusUris];
  }
  if (options.mentionedIdents && options.mentionedIdents.length > 0) {
    argument.mentionedIdents = [...options.mentionedIdents];
  }
  if (options.tokenBudget !== undefined) {
    if (!Number.isInteger(options.tokenBudget) || options.tokenBudget <= 0) {
      throw new RangeError(`tokenBudget must be a positive integer, got ${options.tokenBudget}`);
    }
    argument.tokenBudget = options.tokenBudget;
  }
  return argument;
}

export interface RelevantFilesArguments {
  description: string;
  targets?: string[];
  topN?: number;
}

export function relevantFilesArguments(
  description: string,
  targetUris: readonly string[] = [],
  topN?: number,
): RelevantFilesArguments {
  const trimmed = description.trim();
  if (trimmed === "") {
    throw new RangeError("a task description is required");
  }
  const argument: RelevantFilesArguments = { description: trimmed };
  if (targetUris.length > 0) {
    argument.targets = [...targetUris];
  }
  if (topN !== undefined) {
    argument.topN = topN;
  }
  return argument;
}

export interface SyntaxCheckArguments {
  uri: string;
  text?: string;
}

/** `text` lets the hub check a buffer it does not have open (a language the hub routes nowhere). */
export function syntaxCheckArguments(uri: string, text?: string): SyntaxCheckArguments {
  return text === undefined ? { uri } : { uri, text };
}

export type CallersArguments = { uri: string; position: Position; depth?: number } | { symbol: string; depth?: number };

export function callersAtPositionArguments(uri: string, position: Position, depth?: number): CallersArguments {
  return depth === undefined ? { uri, position: { ...position } } : { uri, position: { ...position }, depth };
}

export function callersOfSymbolArguments(symbol: string, depth?: number): CallersArguments {
  return depth === undefined ? { symbol } : { symbol, depth };
}

export interface RestartServerArguments {
  name: string;
  root: string;
}

export function restartServerArguments(name: string, root: string): RestartServerArguments {
  return { name, root };
}

// ------------------------------------------------------------------------------------------ results
export interface SkippedFile {
  path: string;
  reason: string;
}

/** What an index result says about its own completeness. */
export interface Completeness {
  complete: boolean;
  skippedFiles?: SkippedFile[];
  pendingFiles?: unknown;
}

export interface ServerStatus {
  name: string;
  root: string | null;
  state: string;
  pid: number | null;
  languages: string[];
  restarts: number;
  openDocuments?: number;
  error?: string;
}

export interface IndexStatus {
  state: string;
  files?: number;
  symbols?: number;
  languages?: Record<string, number>;
  lastBuildSeconds?: number | null;
}

export interface StatusResult {
  servers: ServerStatus[];
  index?: IndexStatus;
  documents?: number;
  workspaceFolders?: string[];
  configProblems?: string[];
  hub?: { version?: string; pid?: number };
}

export interface RepoMapFile {
  path: string;
  score: number;
  symbols: string[];
}

export interface RepoMapResult extends Completeness {
  text: string;
  files: RepoMapFile[];
  tokens: number;
}

export interface RelevantFile {
  path: string;
  score: number;
  reasons: string[];
}

export interface RelevantFilesResult extends Completeness {
  files: RelevantFile[];
}

export interface SyntaxError {
  range: Range;
  message: string;
}

export interface SyntaxCheckResult {
  ok: boolean;
  checked: boolean;
  language: string | null;
  errors: SyntaxError[];
  reason?: string;
}

export interface CallSite {
  location: Location;
  caller: string | null;
  depth: number;
}

export interface CallersResult extends Completeness {
  symbol: string | null;
  definitions: Location[];
  callers: CallSite[];
}

/** A hub answer that does not have the documented shape; `where` names the offending field. */
export class ResultShapeError extends Error {
  constructor(
    readonly command: string,
    readonly where: string,
    readonly expected: string,
    readonly actual: unknown,
  ) {
    super(`${command} result: ${where || "(root)"}: expected ${expected}, got ${describe(actual)}`);
    this.name = "ResultShapeError";
  }
}

export function parseStatus(value: unknown): StatusResult {
  const check = new ShapeChecker(HubCommand.status);
  const root = check.object(value, "");
  const servers = check.array(root["servers"], "servers", (server, where) => {
    const fields = check.object(server, where);
    const parsed: ServerStatus = {
      name: check.string(fields["name"], `${where}.name`),
      root: check.nullable(fields["root"], `${where}.root`, check.string),
      state: check.string(fields["state"], `${where}.state`),
      pid: check.nullable(fields["pid"], `${where}.pid`, check.number),
      languages: check.array(fields["languages"] ?? [], `${where}.languages`, check.string),
      restarts: check.number(fields["restarts"] ?? 0, `${where}.restarts`),
    };
    if (fields["openDocuments"] !== undefined) {
      parsed.openDocuments = check.number(fields["openDocuments"], `${where}.openDocuments`);
    }
    if (fields["error"] !== undefined && fields["error"] !== null) {
      parsed.error = check.string(fields["error"], `${where}.error`);
    }
    return parsed;
  });
  const result: StatusResult = { servers };
  if (root["index"] !== undefined && root["index"] !== null) {
    const index = check.object(root["index"], "index");
    result.index = { state: check.string(index["state"], "index.state") };
    if (index["files"] !== undefined) {
      result.index.files = check.number(index["files"], "index.files");
    }
    if (index["symbols"] !== undefined) {
      result.index.symbols = check.number(index["symbols"], "index.symbols");
    }
    if (index["languages"] !== undefined) {
      const languages = check.object(index["languages"], "index.languages");
      result.index.languages = Object.fromEntries(
        Object.entries(languages).map(([name, count]) => [name, check.number(count, `index.languages.${name}`)]),
      );
    }
    if (index["lastBuildSeconds"] !== undefined) {
      result.index.lastBuildSeconds = check.nullable(index["lastBuildSeconds"], "index.lastBuildSeconds", check.number);
    }
  }
  if (root["documents"] !== undefined) {
    result.documents = check.number(root["documents"], "documents");
  }
  if (root["workspaceFolders"] !== undefined) {
    result.workspaceFolders = check.array(root["workspaceFolders"], "workspaceFolders", check.string);
  }
  if (root["configProblems"] !== undefined) {
    result.configProblems = check.array(root["configProblems"], "configProblems", check.string);
  }
  if (isObject(root["hub"])) {
    const hub = root["hub"];
    result.hub = {};
    if (typeof hub["version"] === "string") {
      result.hub.version = hub["version"];
    }
    if (typeof hub["pid"] === "number") {
      result.hub.pid = hub["pid"];
    }
  }
  return result;
}

export function parseRepoMap(value: unknown): RepoMapResult {
  const check = new ShapeChecker(HubCommand.repoMap);
  const root = check.object(value, "");
  return {
    text: check.string(root["text"], "text"),
    files: check.array(root["files"], "files", (file, where) => {
      const fields = check.object(file, where);
      return {
        path: check.string(fields["path"], `${where}.path`),
        score: check.number(fields["score"], `${where}.score`),
        symbols: check.array(fields["symbols"], `${where}.symbols`, check.string),
      };
    }),
    tokens: check.number(root["tokens"], "tokens"),
    ...check.completeness(root),
  };
}

export function parseRelevantFiles(value: unknown): RelevantFilesResult {
  const check = new ShapeChecker(HubCommand.relevantFiles);
  const root = check.object(value, "");
  return {
    files: check.array(root["files"], "files", (file, where) => {
      const fields = check.object(file, where);
      return {
        path: check.string(fields["path"], `${where}.path`),
        score: check.number(fields["score"], `${where}.score`),
        reasons: check.array(fields["reasons"], `${where}.reasons`, check.string),
      };
    }),
    ...check.completeness(root),
  };
}

export function parseSyntaxCheck(value: unknown): SyntaxCheckResult {
  const check = new ShapeChecker(HubCommand.syntaxCheck);
  const root = check.object(value, "");
  const result: SyntaxCheckResult = {
    ok: check.boolean(root["ok"], "ok"),
    checked: check.boolean(root["checked"], "checked"),
    language: check.nullable(root["language"] ?? null, "language", check.string),
    errors: check.array(root["errors"] ?? [], "errors", (error, where) => {
      const fields = check.object(error, where);
      return {
        range: check.range(fields["range"], `${where}.range`),
        message: check.string(fields["message"], `${where}.message`),
      };
    }),
  };
  if (root["reason"] !== undefined && root["reason"] !== null) {
    result.reason = check.string(root["reason"], "reason");
  }
  if (result.ok !== (result.errors.length === 0)) {
    throw new ResultShapeError(HubCommand.syntaxCheck, "ok", `${result.errors.length === 0} (errors has ${result.errors.length})`, result.ok);
  }
  return result;
}

export function parseCallers(value: unknown): CallersResult {
  const check = new ShapeChecker(HubCommand.callers);
  const root = check.object(value, "");
  return {
    symbol: check.nullable(root["symbol"] ?? null, "symbol", check.string),
    definitions: check.array(root["definitions"], "definitions", check.location),
    callers: check.array(root["callers"], "callers", (site, where) => {
      const fields = check.object(site, where);
      return {
        location: check.location(fields["location"], `${where}.location`),
        caller: check.nullable(fields["caller"] ?? null, `${where}.caller`, check.string),
        depth: check.number(fields["depth"] ?? 1, `${where}.depth`),
      };
    }),
    ...check.completeness(root),
  };
}

// ------------------------------------------------------------------------------------------ shape checking
function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === undefined) {
    return "nothing";
  }
  const text = JSON.stringify(value);
  const kind = value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
  return text !== undefined && text.length <= 60 ? `${kind} ${text}` : kind;
}

class ShapeChecker {
  constructor(private readonly command: string) {}

  private fail(where: string, expected: string, actual: unknown): never {
    throw new ResultShapeError(this.command, where, expected, actual);
  }

  object = (value: unknown, where: string): Record<string, unknown> =>
    isObject(value) ? value : this.fail(where, "an object", value);

  string = (value: unknown, where: string): string => (typeof value === "string" ? value : this.fail(where, "a string", value));

  number = (value: unknown, where: string): number =>
    typeof value === "number" && Number.isFinite(value) ? value : this.fail(where, "a number", value);

  boolean = (value: unknown, where: string): boolean =>
    typeof value === "boolean" ? value : this.fail(where, "true or false", value);

  nullable = <T>(value: unknown, where: string, inner: (value: unknown, where: string) => T): T | null =>
    value === null ? null : inner(value, where);

  array = <T>(value: unknown, where: string, item: (value: unknown, where: string) => T): T[] => {
    if (!Array.isArray(value)) {
      return this.fail(where, "an array", value);
    }
    return value.map((entry, index) => item(entry, `${where}[${index}]`));
  };

  position = (value: unknown, where: string): Position => {
    const fields = this.object(value, where);
    const line = this.number(fields["line"], `${where}.line`);
    const character = this.number(fields["character"], `${where}.character`);
    if (!Number.isInteger(line) || line < 0 || !Number.isInteger(character) || character < 0) {
      this.fail(where, "a 0-based line/character position", value);
    }
    return { line, character };
  };

  range = (value: unknown, where: string): Range => {
    const fields = this.object(value, where);
    return { start: this.position(fields["start"], `${where}.start`), end: this.position(fields["end"], `${where}.end`) };
  };

  location = (value: unknown, where: string): Location => {
    const fields = this.object(value, where);
    return { uri: this.string(fields["uri"], `${where}.uri`), range: this.range(fields["range"], `${where}.range`) };
  };

  completeness = (root: Record<string, unknown>): Completeness => {
    const result: Completeness = { complete: this.boolean(root["complete"], "complete") };
    if (root["skippedFiles"] !== undefined) {
      result.skippedFiles = this.array(root["skippedFiles"], "skippedFiles", (entry, where) => {
        const fields = this.object(entry, where);
        return { path: this.string(fields["path"], `${where}.path`), reason: this.string(fields["reason"], `${where}.reason`) };
      });
    }
    if (root["pendingFiles"] !== undefined) {
      result.pendingFiles = root["pendingFiles"];
    }
    return result;
  };
}
