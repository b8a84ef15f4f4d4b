// A small stand-in for the `vscode` API: just the parts the extension uses, recording what it is asked to do.
// installFakes.ts puts it (and a fake vscode-languageclient) in place of the real modules.

import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
    private readonly text: string,
  ) {}

  static file(fsPath: string): Uri {
    const url = pathToFileURL(fsPath);
    return new Uri("file", decodeURIComponent(url.pathname), url.href);
  }

  static parse(value: string): Uri {
    const match = /^([a-zA-Z][\w+.-]*):(.*)$/.exec(value);
    if (match === null) {
      throw new Error(`not a URI: ${value}`);
    }
    const scheme = match[1]!;
    if (scheme === "file") {
      return Uri.file(fileURLToPath(value));
    }
    return new Uri(scheme, match[2]!.replace(/^\/\//, ""), value);
  }

  get fsPath(): string {
    return this.scheme === "file" ? fileURLToPath(this.text) : this.path;
  }

  toString(): string {
    return this.text;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(startLine: number | Position, startCharacter: number | Position, endLine?: number, endCharacter?: number) {
    if (startLine instanceof Position && startCharacter instanceof Position) {
      this.start = startLine;
      this.end = startCharacter;
    } else {
      this.start = new Position(startLine as number, startCharacter as number);
      this.end = new Position(endLine!, endCharacter!);
    }
  }
}

export class Selection extends Range {
  constructor(
    readonly anchor: Position,
    readonly active: Position,
  ) {
    super(anchor, active);
  }
}

export class Location {
  constructor(
    readonly uri: Uri,
    readonly range: Range,
  ) {}
}

export class Disposable {
  constructor(private readonly onDispose: () => void = () => undefined) {}
  dispose(): void {
    this.onDispose();
  }
}

type Listener<T> = (value: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((entry) => entry !== listener);
    });
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) {
      listener(value);
    }
  }
  get listenerCount(): number {
    return this.listeners.length;
  }
}

export const StatusBarAlignment = { Left: 1, Right: 2 } as const;
export const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 } as const;
export const TextEditorRevealType = { Default: 0, InCenter: 1, InCenterIfOutsideViewport: 2, AtTop: 3 } as const;

// ------------------------------------------------------------------------------------------ recorded state
export interface FakeDocument {
  uri: Uri;
  languageId: string;
  text: string;
  getText(): string;
}

export interface FakeEditor {
  document: FakeDocument;
  selection: Selection;
  revealed: Range[];
  revealRange(range: Range, revealType?: number): void;
}

export function fakeEditor(fsPath: string, text: string, line = 0, character = 0, languageId = "python"): FakeEditor {
  const position = new Position(line, character);
  const editor: FakeEditor = {
    document: { uri: Uri.file(fsPath), languageId, text, getText: () => text },
    selection: new Selection(position, position),
    revealed: [],
    revealRange(range: Range) {
      editor.revealed.push(range);
    },
  };
  return editor;
}

export interface Message {
  level: "info" | "warning" | "error";
  text: string;
  actions: string[];
}

export interface QuickPickCall {
  items: { label: string; description?: string; detail?: string }[];
  options: Record<string, unknown> | undefined;
}

export class FakeStatusBarItem {
  text = "";
  tooltip: string | undefined = "";
  command: string | undefined;
  name: string | undefined;
  visible = false;
  disposed = false;
  constructor(
    readonly id: string,
    readonly alignment: number,
    readonly priority: number,
  ) {}
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {
    this.disposed = true;
  }
}

export class FakeOutputChannel {
  lines: string[] = [];
  shown = 0;
  constructor(
    readonly name: string,
    readonly options: unknown,
  ) {}
  appendLine(line: string): void {
    this.lines.push(line);
  }
  info(line: string): void {
    this.lines.push(line);
  }
  show(): void {
    this.shown += 1;
  }
  dispose(): void {}
}

/** Everything a test may arrange or inspect; reset() before each test. */
export const state = {
  messages: [] as Message[],
  /** Answers for showInformation/Warning/ErrorMessage, consumed in order (undefined = dismissed). */
  messageAnswers: [] as (string | undefined)[],
  quickPicks: [] as QuickPickCall[],
  /** Chooses an item from each quick pick, in order; undefined = cancelled. */
  quickPickChoices: [] as ((items: QuickPickCall["items"]) => unknown)[],
  inputBoxes: [] as Record<string, unknown>[],
  inputBoxAnswers: [] as (string | undefined)[],
  shownDocuments: [] as { target: unknown; options: unknown }[],
  openedDocuments: [] as { language?: string; content?: string }[],
  executedCommands: [] as { id: string; args: unknown[] }[],
  registeredCommands: new Map<string, (...args: unknown[]) => unknown>(),
  statusBarItems: [] as FakeStatusBarItem[],
  outputChannels: [] as FakeOutputChannel[],
  progress: [] as Record<string, unknown>[],
  settings: {} as Record<string, unknown>,
  windowState: new EventEmitter<{ focused: boolean }>(),
  trustGranted: new EventEmitter<void>(),
  configurationChanged: new EventEmitter<{ affectsConfiguration(section: string): boolean }>(),
};

export function reset(): void {
  state.messages = [];
  state.messageAnswers = [];
  state.quickPicks = [];
  state.quickPickChoices = [];
  state.inputBoxes = [];
  state.inputBoxAnswers = [];
  state.shownDocuments = [];
  state.openedDocuments = [];
  state.executedCommands = [];
  state.registeredCommands = new Map();
  state.statusBarItems = [];
  state.outputChannels = [];
  state.progress = [];
  state.settings = {};
  state.windowState = new EventEmitter();
  state.trustGranted = new EventEmitter();
  state.configurationChanged = new EventEmitter();
  window.activeTextEditor = undefined;
  window.state = { focused: true };
  workspace.workspaceFolders = undefined;
  workspace.isTrusted = true;
}

function message(level: Message["level"]) {
  return async (text: string, ...actions: unknown[]): Promise<string | undefined> => {
    const labels = actions.filter((action): action is string => typeof action === "string");
    state.messages.push({ level, text, actions: labels });
    return state.messageAnswers.shift();
  };
}

// ------------------------------------------------------------------------------------------ namespaces
export const window = {
  activeTextEditor: undefined as FakeEditor | undefined,
  state: { focused: true },
  showInformationMessage: message("info"),
  showWarningMessage: message("warning"),
  showErrorMessage: message("error"),
  async showQuickPick(items: QuickPickCall["items"], options?: Record<string, unknown>): Promise<unknown> {
    state.quickPicks.push({ items, options });
    const choose = state.quickPickChoices.shift();
    return choose === undefined ? undefined : choose(items);
  },
  async showInputBox(options: Record<string, unknown>): Promise<string | undefined> {
    state.inputBoxes.push(options);
    return state.inputBoxAnswers.shift();
  },
  async showTextDocument(target: unknown, options?: unknown): Promise<unknown> {
    state.shownDocuments.push({ target, options });
    return undefined;
  },
  createStatusBarItem(id: string, alignment: number, priority: number): FakeStatusBarItem {
    const item = new FakeStatusBarItem(id, alignment, priority);
    state.statusBarItems.push(item);
    return item;
  },
  createOutputChannel(name: string, options?: unknown): FakeOutputChannel {
    const channel = new FakeOutputChannel(name, options);
    state.outputChannels.push(channel);
    return channel;
  },
  onDidChangeWindowState(listener: Listener<{ focused: boolean }>): Disposable {
    return state.windowState.event(listener);
  },
  async withProgress<T>(options: Record<string, unknown>, task: () => Promise<T>): Promise<T> {
    state.progress.push(options);
    return task();
  },
};

export const workspace = {
  workspaceFolders: undefined as { uri: Uri; name: string; index: number }[] | undefined,
  isTrusted: true,
  getConfiguration(section?: string) {
    const prefix = section ? `${section}.` : "";
    return {
      get<T>(key: string, defaultValue?: T): T | undefined {
        const value = state.settings[prefix + key];
        return value === undefined ? defaultValue : (value as T);
      },
    };
  },
  async openTextDocument(options: { language?: string; content?: string }): Promise<unknown> {
    state.openedDocuments.push(options);
    return { kind: "untitled", ...options };
  },
  asRelativePath(target: Uri | string): string {
    const fsPath = typeof target === "string" ? target : target.fsPath;
    const folder = workspace.workspaceFolders?.find((candidate) => fsPath.startsWith(candidate.uri.fsPath + path.sep));
    return folder ? path.relative(folder.uri.fsPath, fsPath).split(path.sep).join("/") : fsPath;
  },
  onDidGrantWorkspaceTrust(listener: Listener<void>): Disposable {
    return state.trustGranted.event(listener);
  },
  onDidChangeConfiguration(listener: Listener<{ affectsConfiguration(section: string): boolean }>): Disposable {
    return state.configurationChanged.event(listener);
  },
};

export function setWorkspaceFolders(...fsPaths: string[]): void {
  workspace.workspaceFolders = fsPaths.map((fsPath, index) => ({ uri: Uri.file(fsPath), name: path.basename(fsPath), index }));
}

export const commands = {
  registerCommand(id: string, handler: (...args: unknown[]) => unknown): Disposable {
    if (state.registeredCommands.has(id)) {
      throw new Error(`command '${id}' already exists`);
    }
    state.registeredCommands.set(id, handler);
    return new Disposable(() => state.registeredCommands.delete(id));
  },
  async executeCommand(id: string, ...args: unknown[]): Promise<unknown> {
    state.executedCommands.push({ id, args });
    const handler = state.registeredCommands.get(id);
    return handler ? handler(...args) : undefined;
  },
};
