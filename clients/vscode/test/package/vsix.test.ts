// What `npm run package` put into lsp-hub.vsix: the bundle, the manifest, README and LICENSE, nothing else.
// Run `npm run package` first (vsce needs Node.js >= 22; tools/package-vsix.js finds one).

import assert from "node:assert/strict";
import * as fs from "node:fs";
import { builtinModules } from "node:module";
import * as path from "node:path";
import { describe, it } from "node:test";
import { EXTENSION_COMMAND_IDS } from "../../src/commandIds";
import { listZip, readZipEntry } from "../support/zip";

const extensionRoot = path.resolve(__dirname, "..", "..", "..");
const vsixPath = process.env.LSP_HUB_VSIX ?? path.join(extensionRoot, "lsp-hub.vsix");

describe("lsp-hub.vsix", () => {
  assert.ok(fs.existsSync(vsixPath), `${vsixPath} does not exist: run \`npm run package\` first`);
  const archive = fs.readFileSync(vsixPath);
  const entries = listZip(archive);
  const byName = new Map(entries.map((entry) => [entry.name, entry]));
  const read = (name: string): string => {
    const entry = byName.get(name);
    assert.ok(entry, `${name} is not in the package`);
    return readZipEntry(archive, entry).toString("utf8");
  };

  it("holds exactly the bundle, package.json, README and LICENSE", () => {
    const files = entries
      .map((entry) => entry.name)
      .filter((name) => name.startsWith("extension/"))
      .map((name) => name.toLowerCase())
      .sort();
    assert.deepEqual(files, ["extension/dist/extension.js", "extension/license.txt", "extension/package.json", "extension/readme.md"]);
    assert.ok(byName.has("extension.vsixmanifest"));
    assert.ok(byName.has("[Content_Types].xml"));
  });

  it("carries no node_modules, sources, tests, maps or lock files", () => {
    for (const { name } of entries) {
      assert.doesNotMatch(name, /node_modules|\/src\/|\/out\/|\/test\/|\/tools\/|\.ts$|\.map$|tsconfig|package-lock|\.vsix$/, name);
    }
  });

  it("ships the package.json of this source tree, pointing at a packaged main", () => {
    const packaged = JSON.parse(read("extension/package.json"));
    const source = JSON.parse(fs.readFileSync(path.join(extensionRoot, "package.json"), "utf8"));
    assert.equal(packaged.version, source.version);
    assert.deepEqual(packaged.contributes, source.contributes);
    assert.deepEqual(packaged.activationEvents, source.activationEvents);
    assert.ok(byName.has(path.posix.join("extension", packaged.main)), packaged.main);
    const manifest = read("extension.vsixmanifest");
    assert.match(manifest, new RegExp(`Version="${source.version.replace(/\./g, "\\.")}"`));
    assert.match(manifest, /Microsoft\.VisualStudio\.Code\.Engine" Value="\^1\.\d+\.0"/);
  });

  it("bundles the language client: the extension only requires vscode and Node.js built-ins", () => {
    const bundle = read("extension/dist/extension.js");
    const required = new Set([...bundle.matchAll(/require\("([^"]+)"\)/g)].map((match) => match[1]!));
    const builtins = new Set(builtinModules);
    const foreign = [...required].filter((name) => name !== "vscode" && !name.startsWith("node:") && !builtins.has(name));
    assert.deepEqual(foreign, []);
    assert.ok(required.has("vscode"));
    for (const command of EXTENSION_COMMAND_IDS) {
      assert.ok(bundle.includes(`"${command}"`), `${command} missing from the bundle`);
    }
    assert.ok(bundle.length < 1_000_000, `bundle is ${bundle.length} bytes`);
  });

  it("includes the README with the manual steps", () => {
    const readme = read(entries.find((entry) => entry.name.toLowerCase() === "extension/readme.md")!.name);
    assert.match(readme, /^# LSP Hub for VS Code/m);
    assert.match(readme, /Install from VSIX/);
  });
});
