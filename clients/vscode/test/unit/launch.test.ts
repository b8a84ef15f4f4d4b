import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import {
  SERVED_LANGUAGE_IDS,
  buildInitializationOptions,
  documentSelector,
  expandConfigPath,
  findOnPath,
  isExecutableFile,
  resolveHubLaunch,
} from "../../src/launch";

const executables = (...paths: string[]) => (candidate: string) => paths.includes(candidate);

describe("documentSelector", () => {
  it("selects every served language, on disk only", () => {
    const selector = documentSelector();
    assert.deepEqual(
      selector.map((entry) => entry.language),
      [...SERVED_LANGUAGE_IDS],
    );
    assert.ok(selector.every((entry) => entry.scheme === "file"));
    for (const language of ["python", "typescriptreact", "shellscript", "cpp", "css"]) {
      assert.ok(SERVED_LANGUAGE_IDS.includes(language), language);
    }
  });
});

describe("findOnPath", () => {
  it("returns the first executable along PATH", () => {
    const found = findOnPath("lsp-hub", "/a:/b:/c", "linux", executables("/b/lsp-hub", "/c/lsp-hub"));
    assert.equal(found, path.join("/b", "lsp-hub"));
  });

  it("skips empty entries and reports absence", () => {
    assert.equal(findOnPath("lsp-hub", "::/x", "linux", executables()), undefined);
  });

  it("tries Windows suffixes", () => {
    const expected = path.join("C:\\tools", "lsp-hub.exe");
    assert.equal(findOnPath("lsp-hub", "C:\\tools", "win32", executables(expected)), expected);
  });

  it("checks real files for the executable bit", () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), "lsp-hub-launch-"));
    const script = path.join(directory, "lsp-hub");
    fs.writeFileSync(script, "#!/bin/sh\n");
    fs.chmodSync(script, 0o644);
    assert.equal(isExecutableFile(script), false);
    fs.chmodSync(script, 0o755);
    assert.equal(isExecutableFile(script), true);
    assert.equal(isExecutableFile(directory), false);
    assert.equal(findOnPath("lsp-hub", directory), script);
    fs.rmSync(directory, { recursive: true });
  });
});

describe("resolveHubLaunch", () => {
  const folders = ["/work/project"];
  const venvHub = path.join("/work/project", ".venv", "bin", "lsp-hub");

  it("uses an explicit serverPath as given, with args and --config", () => {
    const launch = resolveHubLaunch(
      { serverPath: " /opt/hub/bin/lsp-hub ", serverArgs: ["-v"], configPath: "hub.toml" },
      { workspaceFolders: folders, trusted: false, pathVariable: "", isExecutable: executables() },
    );
    assert.deepEqual(launch, {
      command: "/opt/hub/bin/lsp-hub",
      args: ["-v", "--config", path.join("/work/project", "hub.toml")],
      origin: "setting",
    });
  });

  it("prefers lsp-hub on PATH over the workspace .venv", () => {
    const launch = resolveHubLaunch(
      {},
      { workspaceFolders: folders, trusted: true, pathVariable: "/usr/bin", platform: "linux", isExecutable: executables("/usr/bin/lsp-hub", venvHub) },
    );
    assert.equal(launch.command, "/usr/bin/lsp-hub");
    assert.equal(launch.origin, "path");
  });

  it("falls back to the workspace .venv only in a trusted workspace", () => {
    const context = { workspaceFolders: folders, pathVariable: "/usr/bin", platform: "linux" as const, isExecutable: executables(venvHub) };
    assert.deepEqual(resolveHubLaunch({}, { ...context, trusted: true }), { command: venvHub, args: [], origin: "workspace-venv" });
    assert.deepEqual(resolveHubLaunch({}, { ...context, trusted: false }), { command: "lsp-hub", args: [], origin: "fallback" });
  });

  it("treats a blank serverPath as unset", () => {
    const launch = resolveHubLaunch({ serverPath: "  " }, { workspaceFolders: [], trusted: true, pathVariable: "/bin", platform: "linux", isExecutable: executables("/bin/lsp-hub") });
    assert.equal(launch.origin, "path");
  });
});

describe("expandConfigPath", () => {
  it("expands ${workspaceFolder} and relative paths against the first folder", () => {
    assert.equal(expandConfigPath("${workspaceFolder}/cfg/hub.toml", ["/w", "/v"]), path.join("/w", "cfg", "hub.toml"));
    assert.equal(expandConfigPath("cfg.toml", ["/w"]), path.join("/w", "cfg.toml"));
    assert.equal(expandConfigPath("/etc/hub.toml", ["/w"]), "/etc/hub.toml");
    assert.equal(expandConfigPath("cfg.toml", []), "cfg.toml");
  });
});

describe("buildInitializationOptions", () => {
  it("wraps the user's options under lspHub and adds VS Code's trust", () => {
    const options = buildInitializationOptions({ server: { ruff: { disabled: true } } }, true);
    assert.deepEqual(options, { lspHub: { server: { ruff: { disabled: true } }, trustWorkspace: true } });
    assert.deepEqual(buildInitializationOptions(undefined, false), { lspHub: { trustWorkspace: false } });
  });

  it("drops trust flags a repository's settings tried to smuggle in, top level and under hub", () => {
    const user = { trustWorkspace: true, trust_workspace: true, hub: { trust_workspace: true, request_timeout: 3 } };
    const options = buildInitializationOptions(user, false);
    assert.deepEqual(options, { lspHub: { hub: { request_timeout: 3 }, trustWorkspace: false } });
    assert.equal(user.trustWorkspace, true, "the user's object is not modified");
  });

  it("ignores options that are not an object", () => {
    assert.deepEqual(buildInitializationOptions([1, 2] as unknown as Record<string, unknown>, true), { lspHub: { trustWorkspace: true } });
  });
});
