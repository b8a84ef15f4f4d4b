// Import this first in a unit test: `require("vscode")` and `require("vscode-languageclient/node")` then
// return the stand-ins, as VS Code's extension host would return the real ones.

import Module = require("node:module");
import * as fakeLanguageClient from "./fakeLanguageClient";
import * as fakeVscode from "./fakeVscode";

const replacements: Record<string, unknown> = {
  vscode: fakeVscode,
  "vscode-languageclient/node": fakeLanguageClient,
};

type Loader = (request: string, parent: unknown, isMain: boolean) => unknown;
const moduleWithLoader = Module as unknown as { _load: Loader };
const originalLoad = moduleWithLoader._load;
moduleWithLoader._load = function (request: string, parent: unknown, isMain: boolean): unknown {
  if (Object.prototype.hasOwnProperty.call(replacements, request)) {
    return replacements[request];
  }
  return originalLoad.call(this, request, parent, isMain);
};

export { fakeLanguageClient, fakeVscode };
