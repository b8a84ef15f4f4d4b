// What `npm run package` put into lsp-hub.vsix: the bundle, the manifest, README and LICENSE, nothing else.
// Run `npm run package` first (vsce needs Node.js >= 22; tools/package-vsix.js finds one).

import assert from "node:assert/strict";
import * as fs from "node:fs";
import Module = require("node:module");
import * as os from "node:os";
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
    const builtins = new Set(Module.builtinModules);
    const foreign = [...required].filter((name) => name !== "vscode" && !name.startsWith("node:") && !builtins.has(name));
    assert.deepEqual(foreign, []);
    assert.ok(required.has("vscode"));
    for (const command of EXTENSION_COMMAND_IDS) {
      assert.ok(bundle.includes(`"${command}"`), `${command} missing from the bundle`);
    }
    assert.ok(bundle.length < 1_000_000, `bundle is ${bundle.length} bytes`);
  });

  it("loads from the package and exports activate and deactivate", () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), "lsp-hub-vsix-"));
    const bundlePath = path.join(directory, "extension.js");
    fs.writeFileSync(bundlePath, read("extension/dist/extension.js"));
    type Loader = (request: string, parent: unknown, isMain: boolean) => unknown;
    const loader = Module as unknown as { _load: Loader };
    const originalLoad = loader._load;
    loader._load = function (request: string, parent: unknown, isMain: boolean): unknown {
      return request === "vscode" ? anyApi("vscode") : originalLoad.call(this, request, parent, isMain);
    };
    try {
      const extension = require(bundlePath) as Record<string, unknown>;
      assert.equal(typeof extension["activate"], "function");
      assert.equal(typeof extension["deactivate"], "function");
    } finally {
      loader._load = originalLoad;
      fs.rmSync(directory, { recursive: true, force: true });
    }
  });

  it("includes the README with the manual steps", () => {
    const readme = read(entries.find((entry) => entry.name.toLowerCase() === "extension/readme.md")!.name);
    assert.match(readme, /^# LSP Hub for VS Code/m);
    assert.match(readme, /Install from VSIX/);
  });
});

/** A stand-in where every property is again a constructible stand-in: enough for the bundle's top level. */
function anyApi(name: string): unknown {
  const cache = new Map<PropertyKey, unknown>();
  const target = function () {} as unknown as object;
  return new Proxy(target, {
    get(base, property) {
      if (property === "prototype") {
        return (base as { prototype: object }).prototype;
      }
      if (property === "then" || typeof property === "symbol") {
        return undefined;
      }
      if (property === "version") {
        return "1.91.0";
      }
      if (!cache.has(property)) {
        cache.set(property, anyApi(`${name}.${String(property)}`));
      }
      return cache.get(property);
    },
    construct: () => anyApi(`new ${name}`) as object,
    apply: () => anyApi(`${name}()`),
  });
}
