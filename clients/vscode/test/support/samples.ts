// Results in the documented shapes (issues 2 and 3), for unit tests.

export const fileUri = (relative: string): string => `file:///work/project/${relative}`;

export const range = (line: number, character: number, endLine = line, endCharacter = character + 1) => ({
  start: { line, character },
  end: { line: endLine, character: endCharacter },
});

export const statusResult = () => ({
  servers: [
    { name: "basedpyright", root: "/work/project", state: "running", pid: 101, languages: ["python"], restarts: 0, openDocuments: 2 },
    { name: "ruff", root: "/work/project", state: "running", pid: 102, languages: ["python"], restarts: 2, openDocuments: 2 },
    { name: "clangd", root: "/work/project/native", state: "crashed", pid: null, languages: ["c", "cpp"], restarts: 5, error: "exited with code 1" },
    { name: "gopls", root: "/work/project", state: "missing", pid: null, languages: ["go"], restarts: 0, error: "gopls not found" },
  ],
  documents: 2,
  workspaceFolders: ["/work/project"],
  hub: { version: "0.1.0", pid: 100 },
  configProblems: [],
  index: { state: "ready", files: 12, symbols: 340, languages: { python: 10, c: 2 }, lastBuildSeconds: 0.42 },
});

export const repoMapResult = () => ({
  text: "app/models.py:\n  class Inventory:\n    def add(self, item: Item) -> None:\n",
  files: [{ path: "app/models.py", score: 0.31, symbols: ["Inventory", "Inventory.add"] }],
  tokens: 17,
  complete: true,
});

export const relevantFilesResult = () => ({
  files: [
    { path: "app/models.py", score: 3.5, reasons: ["imported by target app/service.py", "defines Inventory named in description"] },
    { path: "tests/test_service.py", score: 0.8, reasons: ["test file of target app/service.py"] },
  ],
  complete: true,
});

export const syntaxCheckResult = () => ({
  ok: false,
  checked: true,
  language: "python",
  errors: [
    { range: range(2, 11, 2, 12), message: "expected ')'" },
    { range: range(5, 0, 5, 4), message: "unexpected 'else'" },
  ],
});

export const callersResult = () => ({
  symbol: "total_value",
  definitions: [{ uri: fileUri("app/models.py"), range: range(30, 4, 30, 15) }],
  callers: [
    { location: { uri: fileUri("app/service.py"), range: range(15, 59, 15, 70) }, caller: "report", depth: 1 },
    { location: { uri: fileUri("app/cli.py"), range: range(3, 10, 3, 21) }, caller: null, depth: 1 },
  ],
  complete: true,
});
