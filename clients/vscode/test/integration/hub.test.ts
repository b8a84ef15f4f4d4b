// The extension's own request builders and result parsers against a real lsp-hub over stdio (no VS Code).
//
// The hub comes from LSP_HUB_COMMAND (a JSON array argv, e.g. ["python3", "-m", "lsp_hub"]), else `lsp-hub`
// on PATH. Without one the tests skip, or fail when CI=true. The index commands are exercised when the hub
// advertises them; once the hub reports an index in lspHub.status (or LSP_HUB_REQUIRE_INDEX_COMMANDS=1),
// all four must be advertised and answer in the documented shapes.

import assert from "node:assert/strict";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { after, before, describe, it, type TestContext } from "node:test";
import { StreamMessageReader, StreamMessageWriter, createMessageConnection, type MessageConnection } from "vscode-jsonrpc/node";
import { buildInitializationOptions, findOnPath } from "../../src/launch";
import {
  HubCommand,
  INDEX_COMMANDS,
  advertisedCommands,
  callersAtPositionArguments,
  executeCommandParams,
  parseCallers,
  parseRelevantFiles,
  parseRepoMap,
  parseStatus,
  parseSyntaxCheck,
  relevantFilesArguments,
  repoMapArguments,
  syntaxCheckArguments,
  type Position,
  type StatusResult,
} from "../../src/requests";
import { callersView, relevantFilePicks, repoMapMarkdown, statusBarView, statusView, syntaxSummary } from "../../src/views";

const EXTENSION_ROOT = path.resolve(__dirname, "..", "..", "..");
const SAMPLE_DIR = process.env.LSP_HUB_SAMPLE ?? path.resolve(EXTENSION_ROOT, "..", "..", "examples", "sample");
const UNDER_CI = ["1", "true", "yes"].includes((process.env.CI ?? "").trim().toLowerCase());
const REQUEST_TIMEOUT_MS = 30_000;

function hubArgv(): string[] | undefined {
  const configured = process.env.LSP_HUB_COMMAND;
  if (configured) {
    const argv: unknown = JSON.parse(configured);
    if (!Array.isArray(argv) || argv.length === 0 || !argv.every((part) => typeof part === "string")) {
      throw new Error(`LSP_HUB_COMMAND must be a JSON array of strings, got ${configured}`);
    }
    return argv;
  }
  const found = findOnPath("lsp-hub");
  return found === undefined ? undefined : [found];
}

const argv = hubArgv();
const unavailable =
  argv === undefined ? "lsp-hub not found: set LSP_HUB_COMMAND='[\"python3\", \"-m\", \"lsp_hub\"]' or put lsp-hub on PATH" : undefined;
if (unavailable !== undefined && UNDER_CI) {
  throw new Error(`${unavailable} (CI=true: a missing hub is a broken setup)`);
}

function positionOf(text: string, needle: string, offsetInNeedle = 0): Position {
  const index = text.indexOf(needle);
  assert.notEqual(index, -1, `${needle} not found`);
  const before = text.slice(0, index + offsetInNeedle);
  const lines = before.split("\n");
  return { line: lines.length - 1, character: lines[lines.length - 1]!.length };
}

function withTimeout<T>(promise: Promise<T>, what: string, ms = REQUEST_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function samePath(uri: string, fsPath: string): boolean {
  return fs.realpathSync(fileURLToPath(uri)) === fs.realpathSync(fsPath);
}

describe("lsp-hub over stdio, driven by the extension's request code", { skip: unavailable }, () => {
  let workspace = "";
  let hub: ChildProcessWithoutNullStreams;
  let connection: MessageConnection;
  let stderr = "";
  let advertised: string[] = [];
  let status: StatusResult;
  const uriOf = (relative: string) => pathToFileURL(path.join(workspace, relative)).href;
  const textOf = (relative: string) => fs.readFileSync(path.join(workspace, relative), "utf8");

  const execute = async (command: string, argument?: object): Promise<unknown> =>
    withTimeout(connection.sendRequest("workspace/executeCommand", executeCommandParams(command, argument)), command);

  const open = async (relative: string): Promise<void> =>
    connection.sendNotification("textDocument/didOpen", {
      textDocument: { uri: uriOf(relative), languageId: "python", version: 1, text: textOf(relative) },
    });

  /** The index commands are required once the hub shows it has an index. */
  const indexRequired = (): boolean => process.env.LSP_HUB_REQUIRE_INDEX_COMMANDS === "1" || status?.index !== undefined;

  function requireAdvertised(t: TestContext, command: string): boolean {
    if (advertised.includes(command)) {
      return true;
    }
    if (indexRequired()) {
      assert.fail(`${command} is not advertised, although the hub has an index (advertised: ${advertised.join(", ")})`);
    }
    t.skip(`this lsp-hub does not advertise ${command} yet`);
    return false;
  }

  before(async () => {
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), "lsp-hub-vscode-"));
    fs.cpSync(SAMPLE_DIR, workspace, { recursive: true, filter: (source) => !/[\\/](\.ruff_cache|node_modules|__pycache__)$/.test(source) });
    hub = spawn(argv![0]!, argv!.slice(1), { cwd: workspace, stdio: ["pipe", "pipe", "pipe"] });
    hub.stderr.setEncoding("utf8");
    hub.stderr.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-20_000);
    });
    connection = createMessageConnection(new StreamMessageReader(hub.stdout), new StreamMessageWriter(hub.stdin));
    // What VS Code answers for the server-to-client requests the hub forwards.
    connection.onRequest((method: string, params: unknown) => {
      if (method === "workspace/configuration") {
        return ((params as { items?: unknown[] }).items ?? []).map(() => null);
      }
      if (method === "workspace/applyEdit") {
        return { applied: false };
      }
      return null;
    });
    connection.onNotification(() => undefined);
    connection.listen();
    const result = await withTimeout(
      connection.sendRequest("initialize", {
        processId: process.pid,
        clientInfo: { name: "lsp-hub-vscode-integration-test" },
        rootUri: pathToFileURL(workspace).href,
        workspaceFolders: [{ uri: pathToFileURL(workspace).href, name: "sample" }],
        capabilities: {
          workspace: {
            configuration: true,
            workspaceFolders: true,
            executeCommand: { dynamicRegistration: true },
            didChangeWatchedFiles: { dynamicRegistration: true },
          },
          textDocument: {
            synchronization: { dynamicRegistration: true, didSave: true },
            hover: { dynamicRegistration: true, contentFormat: ["markdown", "plaintext"] },
            publishDiagnostics: { relatedInformation: true },
          },
          window: { workDoneProgress: true },
          general: { positionEncodings: ["utf-16"] },
        },
        initializationOptions: buildInitializationOptions({}, true),
      }),
      "initialize",
    );
    assert.equal((result as { serverInfo?: { name?: string } }).serverInfo?.name, "lsp-hub");
    advertised = advertisedCommands(result);
    await connection.sendNotification("initialized", {});
  });

  after(async () => {
    if (connection !== undefined) {
      try {
        await withTimeout(connection.sendRequest("shutdown"), "shutdown", 10_000);
        await connection.sendNotification("exit");
      } catch {
        // The hub is killed below either way.
      }
    }
    if (hub !== undefined && hub.exitCode === null) {
      const exited = new Promise((resolve) => hub.once("exit", resolve));
      await Promise.race([exited, sleep(5000, undefined, { ref: false })]);
      if (hub.exitCode === null) {
        hub.kill("SIGKILL");
      }
    }
    connection?.dispose();
    if (workspace) {
      fs.rmSync(workspace, { recursive: true, force: true });
    }
  });

  it("advertises lspHub.status and takes VS Code's trust flag without complaint", async () => {
    assert.ok(advertised.includes(HubCommand.status), `advertised: ${advertised.join(", ")}`);
    status = parseStatus(await execute(HubCommand.status));
    assert.deepEqual(status.configProblems ?? [], [], "initializationOptions.lspHub built by the extension is valid");
  });

  it("answers hover on an opened Python file of the sample", async () => {
    await open("app/service.py");
    const position = positionOf(textOf("app/service.py"), "Inventory()", 2);
    let hover: { contents?: unknown } | null = null;
    // The first request waits for basedpyright to start; give the hub a few tries while it warms up.
    for (let attempt = 0; attempt < 10 && hover === null; attempt += 1) {
      hover = await withTimeout(
        connection.sendRequest("textDocument/hover", { textDocument: { uri: uriOf("app/service.py") }, position }),
        "hover",
      );
      if (hover === null) {
        await sleep(500);
      }
    }
    assert.ok(hover !== null, `no hover; hub stderr:\n${stderr.slice(-3000)}`);
    assert.match(JSON.stringify(hover.contents), /Inventory/);
  });

  it("lspHub.status lists the running Python servers in the shape the status bar expects", async () => {
    status = parseStatus(await execute(HubCommand.status));
    const names = status.servers.filter((server) => server.state === "running").map((server) => server.name);
    assert.ok(names.includes("basedpyright"), `running: ${names.join(", ")}; hub stderr:\n${stderr.slice(-3000)}`);
    const basedpyright = status.servers.find((server) => server.name === "basedpyright")!;
    assert.ok(basedpyright.root !== null && fs.realpathSync(basedpyright.root) === fs.realpathSync(workspace), `root ${basedpyright.root}`);
    assert.ok(basedpyright.languages.includes("python"));
    const view = statusView(status);
    assert.equal(view.running, names.length);
    assert.match(statusBarView(status).text, new RegExp(`LSP Hub: ${names.length}\\b`));
  });

  it("waits for the index, when there is one", async () => {
    const deadline = Date.now() + 60_000;
    while (status.index !== undefined && status.index.state !== "ready" && Date.now() < deadline) {
      await sleep(250);
      status = parseStatus(await execute(HubCommand.status));
    }
    if (status.index !== undefined) {
      assert.equal(status.index.state, "ready");
      assert.ok((status.index.files ?? 0) >= 4, `index files: ${status.index.files}`);
      assert.match(statusView(status).indexLine ?? "", /^Index ready/);
    }
  });

  it("lspHub.repoMap answers the extension's arguments within the budget, without the focus file", async (t) => {
    if (!requireAdvertised(t, HubCommand.repoMap)) {
      return;
    }
    const budget = 256;
    const argument = repoMapArguments({ focusUris: [uriOf("app/service.py")], tokenBudget: budget });
    const map = parseRepoMap(await execute(HubCommand.repoMap, argument));
    assert.ok(map.tokens <= budget, `tokens ${map.tokens} > budget ${budget}`);
    const paths = map.files.map((file) => file.path);
    assert.ok(!paths.includes("app/service.py"), `focus file listed: ${paths.join(", ")}`);
    assert.ok(paths.includes("app/models.py"), `app/models.py missing: ${paths.join(", ")}`);
    assert.ok(paths.every((file) => !file.startsWith("/") && !file.startsWith("file:")), "paths are workspace-relative");
    assert.match(map.text, /models\.py/);
    assert.match(repoMapMarkdown(map, "app/service.py"), /^# Repository map\n/);
  });

  it("lspHub.relevantFiles ranks the file the target imports, with reasons", async (t) => {
    if (!requireAdvertised(t, HubCommand.relevantFiles)) {
      return;
    }
    const argument = relevantFilesArguments("change how total_value sums the Inventory items", [uriOf("app/service.py")]);
    const result = parseRelevantFiles(await execute(HubCommand.relevantFiles, argument));
    const picks = relevantFilePicks(result);
    const models = picks.find((pick) => pick.path === "app/models.py");
    assert.ok(models !== undefined, `app/models.py missing: ${picks.map((pick) => pick.path).join(", ")}`);
    assert.ok(result.files.find((file) => file.path === "app/models.py")!.reasons.length > 0);
    assert.ok(!picks.some((pick) => pick.path === "app/service.py"), "the target itself is excluded");
    assert.ok(fs.existsSync(path.join(workspace, ...models.path.split("/"))), "the path resolves in the workspace");
  });

  it("lspHub.syntaxCheck reports a clean file, an edited broken buffer, and an unsupported language", async (t) => {
    if (!requireAdvertised(t, HubCommand.syntaxCheck)) {
      return;
    }
    const uri = uriOf("app/service.py");
    const clean = parseSyntaxCheck(await execute(HubCommand.syntaxCheck, syntaxCheckArguments(uri, textOf("app/service.py"))));
    assert.deepEqual([clean.ok, clean.checked, clean.language, clean.errors.length], [true, true, "python", 0]);

    const broken = textOf("app/service.py").replace("def report(inventory: Inventory) -> str:", "def report(inventory: Inventory -> str:");
    await connection.sendNotification("textDocument/didChange", { textDocument: { uri, version: 2 }, contentChanges: [{ text: broken }] });
    const result = parseSyntaxCheck(await execute(HubCommand.syntaxCheck, syntaxCheckArguments(uri, broken)));
    assert.equal(result.ok, false);
    assert.ok(result.errors.length >= 1);
    const brokenLine = positionOf(broken, "def report(").line;
    assert.ok(
      result.errors.some((error) => error.range.start.line >= brokenLine && error.range.start.line <= brokenLine + 3),
      `errors: ${JSON.stringify(result.errors)}`,
    );
    assert.match(syntaxSummary(result, "service.py").message, /^\d+ syntax errors? in service\.py \(python\)\.$/);
    // Put the buffer back for the callers test.
    await connection.sendNotification("textDocument/didChange", {
      textDocument: { uri, version: 3 },
      contentChanges: [{ text: textOf("app/service.py") }],
    });

    const unsupported = parseSyntaxCheck(await execute(HubCommand.syntaxCheck, syntaxCheckArguments(uriOf("notes.txt"), "just words\n")));
    assert.deepEqual([unsupported.ok, unsupported.checked, unsupported.reason], [true, false, "unsupported_language"]);
  });

  it("lspHub.callers at the cursor finds the call in another file", async (t) => {
    if (!requireAdvertised(t, HubCommand.callers)) {
      return;
    }
    await open("app/models.py");
    const position = positionOf(textOf("app/models.py"), "def total_value", "def ".length + 2);
    const argument = callersAtPositionArguments(uriOf("app/models.py"), position);
    const result = parseCallers(await execute(HubCommand.callers, argument));
    // Names may come qualified (app.models.total_value); the extension shows them as given.
    assert.match(result.symbol ?? "", /\btotal_value$/);
    assert.ok(result.definitions.some((definition) => samePath(definition.uri, path.join(workspace, "app", "models.py"))));
    const view = callersView(result);
    const inService = view.locations.filter((location) => samePath(location.uri, path.join(workspace, "app", "service.py")));
    assert.equal(inService.length, 1, `callers: ${JSON.stringify(result.callers)}`);
    assert.equal(inService[0]!.range.start.line, positionOf(textOf("app/service.py"), "total_value(inventory)").line);
    assert.match(result.callers.find((site) => site.location === inService[0])?.caller ?? "", /\breport\b/);
  });

  it("advertises every index command once the hub has an index", () => {
    const missing = INDEX_COMMANDS.filter((command) => !advertised.includes(command));
    if (indexRequired()) {
      assert.deepEqual(missing, []);
    } else {
      assert.equal(status.index, undefined);
    }
  });
});
