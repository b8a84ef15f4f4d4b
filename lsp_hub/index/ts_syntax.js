// lsp-hub's TypeScript syntax helper: TypeScript's own parser, kept warm in one node process.
//
//   node ts_syntax.js /path/to/typescript/lib/typescript.js
//
// Speaks line-delimited JSON on stdin/stdout. The first line out is {"ready": true, "version": "5.9.3"} (or
// {"fatal": "..."} before exiting when TypeScript cannot be loaded). Then, per request line
//   {"id": 7, "fileName": "a.ts", "kind": "ts" | "tsx" | "js" | "jsx", "text": "..."}
// one answer line
//   {"id": 7, "diagnostics": [{"start": 12, "length": 1, "code": 1005, "message": "';' expected."}]}
// with offsets in UTF-16 code units of `text` (the hub turns them into lines and columns itself, counting only
// "\n" as a line break, as the index does; TypeScript would count U+2028 too), or {"id": 7, "error": "..."}.
//
// It ends when its stdin closes (the hub exited, even by SIGKILL: the kernel closes the hub's end of the pipe) and,
// in case another process somehow holds that pipe open, when its parent changes (it was re-parented).
"use strict";

const readline = require("readline");

function send(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

let ts;
try {
  ts = require(process.argv[2]);
} catch (error) {
  send({ fatal: `cannot load TypeScript from ${process.argv[2]}: ${error && error.message}` });
  process.exit(1);
}
if (typeof ts.createSourceFile !== "function") {
  send({ fatal: `${process.argv[2]} is not TypeScript's library (no createSourceFile)` });
  process.exit(1);
}

const SCRIPT_KINDS = { ts: ts.ScriptKind.TS, tsx: ts.ScriptKind.TSX, js: ts.ScriptKind.JS, jsx: ts.ScriptKind.JSX };

function parseDiagnostics(fileName, text, kind) {
  // setParentNodes=false: the diagnostics do not need parent links, and setting them costs a walk of the tree.
  const sourceFile = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, SCRIPT_KINDS[kind]);
  // parseDiagnostics is not in the public typings, but it is what `tsc` reports as syntactic diagnostics.
  return (sourceFile.parseDiagnostics || []).map((diagnostic) => ({
    start: diagnostic.start,
    length: diagnostic.length,
    code: diagnostic.code,
    message: ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"),
  }));
}

function answer(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch (error) {
    send({ id: null, error: `not JSON: ${error.message}` });
    return;
  }
  try {
    if (!(request.kind in SCRIPT_KINDS)) throw new Error(`unknown kind ${JSON.stringify(request.kind)}`);
    send({ id: request.id, diagnostics: parseDiagnostics(String(request.fileName), String(request.text), request.kind) });
  } catch (error) {
    send({ id: request.id, error: String((error && error.stack) || error) });
  }
}

const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on("line", answer);
input.on("close", () => process.exit(0));

const parentAtStart = process.ppid;
setInterval(() => {
  if (process.ppid !== parentAtStart) process.exit(0);
}, 1000).unref();

send({ ready: true, version: ts.version });

// Warm the parser's JIT on a file TypeScript ships, so the hub's first real checks are as fast as later ones.
// One parse per turn of the event loop: a request that arrives meanwhile waits for one parse at most.
try {
  const path = require("path");
  const fs = require("fs");
  // About 1,500 lines: long enough for the JIT to optimize the scanner and parser, short enough (tens of
  // milliseconds per parse once warm) not to hold up a real request for long.
  const sample = fs.readFileSync(path.join(path.dirname(process.argv[2]), "lib.es5.d.ts"), "utf8").slice(0, 60000);
  let rounds = 12;
  const warm = () => {
    parseDiagnostics("warm.ts", sample, "ts");
    if (--rounds > 0) setImmediate(warm);
  };
  setImmediate(warm);
} catch (error) {
  // No sample to warm on: the first checks are merely slower.
}
