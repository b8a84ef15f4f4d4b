"""A configurable fake language server: the deterministic backend behind the hub's tests.

Run: `python tests/fakels.py --spec '<json>' [--record PATH]` (or `--spec-file PATH`). The spec (all optional):

- `name`: who answers; replaces "{name}" in every string of a result or diagnostic, and is the default
  diagnostic `source`.
- `capabilities`: the ServerCapabilities returned from initialize, verbatim (default: DEFAULT_CAPABILITIES).
- `responses`: {method: behaviour}. A behaviour combines: `"result": <json>` (strings templated with {name},
  {uri}, {line}, {character}); `"error": {"code", "message"}`; `"delay": seconds`; `"hang": true` (never answers;
  a `$/cancelRequest` for it gets -32800); `"crash": true` (the process exits with code 1 on receipt);
  `"echo": true` (result = {"server", "method", "params"}); `"generate_items": N` (a CompletionList of N items).
  Requests without a behaviour answer null if they are standard LSP requests, else MethodNotFound.
- `fake/getDocument` {"uri"} answers {"text", "version"} of the server's own copy (kept with the sync kind it
  advertised; a change of the wrong kind is recorded as {"event": "sync_error"}).
- `diagnostics_on_open_and_change`: diagnostics (templated; {version} too) published on didOpen/didChange;
  `keep_on_close`: do not publish [] on didClose (default: publish []).
- `pull_diagnostics`: items answered to textDocument/diagnostic (a full report with a resultId).
- `on_initialized`: actions run after `initialized`; `on_command`: {command: actions} run when
  workspace/executeCommand names that command, whose answer is then the list of the client's answers. An action
  is {"request": method, "params": ...} or {"notify": method, "params": ...}.
- Faults: `garbage_before_first_frame` (text written to stdout first), `never_initialize`,
  `crash_after_initialize_seconds`, `stderr_spam_bytes` (written to stderr at start).
- `--record PATH`: every received message is appended as one JSON line ({"method", "params", "id"} or
  {"response": id, "result"/"error"}); the first line is {"event": "start", "pid", "argv", "cwd"}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from lsp_hub.documents import Document
from lsp_hub.jsonrpc import MsgId, RawProtocol, ResponseFailure, serve_stdio

DEFAULT_CAPABILITIES: dict[str, Any] = {
    "textDocumentSync": {"openClose": True, "change": 2, "save": {"includeText": False}},
    "hoverProvider": True,
    "completionProvider": {"resolveProvider": True, "triggerCharacters": ["."]},
    "definitionProvider": True,
    "referencesProvider": True,
    "documentSymbolProvider": True,
    "codeActionProvider": True,
    "workspaceSymbolProvider": True,
    "documentFormattingProvider": True,
}


def template(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, replacement in names.items():
            value = value.replace("{" + key + "}", replacement)
        return value
    if isinstance(value, list):
        return [template(v, names) for v in value]
    if isinstance(value, dict):
        return {k: template(v, names) for k, v in value.items()}
    return value


class FakeServer:
    def __init__(self, spec: dict[str, Any], record: str | None, protocol: RawProtocol, stop: asyncio.Event) -> None:
        self.spec = spec
        self.name = str(spec.get("name", "fake"))
        self.capabilities = spec.get("capabilities", DEFAULT_CAPABILITIES)
        self.responses: dict[str, dict[str, Any]] = spec.get("responses", {})
        self.protocol = protocol
        self.stop = stop
        self.documents: dict[str, Document] = {}
        self.record_file = open(record, "a", encoding="utf-8") if record else None  # noqa: SIM115
        self.record({"event": "start", "pid": os.getpid(), "argv": sys.argv, "cwd": os.getcwd()})

    def record(self, entry: dict[str, Any]) -> None:
        if self.record_file:
            self.record_file.write(json.dumps(entry) + "\n")
            self.record_file.flush()

    def sync_kind(self) -> int:
        sync = self.capabilities.get("textDocumentSync", 0)
        return sync if isinstance(sync, int) else int(sync.get("change", 0))

    # --------------------------------------------------------------------------------------------- requests
    def on_request(self, msg_id: MsgId, method: str, params: Any) -> Any:
        self.record({"method": method, "params": params, "id": msg_id})
        if method == "initialize":
            if self.spec.get("never_initialize"):
                return asyncio.get_running_loop().create_future()
            return {"capabilities": self.capabilities, "serverInfo": {"name": self.name}}
        if method == "shutdown":
            return None
        if method == "fake/getDocument":
            uri = params.get("uri") or params["textDocument"]["uri"]
            document = self.documents[uri]
            return {"text": document.text, "version": document.version}
        if method == "textDocument/diagnostic" and "pull_diagnostics" in self.spec:
            return {"kind": "full", "resultId": str(len(self.documents)),
                    "items": template(self.spec["pull_diagnostics"], {"name": self.name})}
        if method == "workspace/executeCommand":
            actions = self.spec.get("on_command", {}).get(params.get("command"))
            if actions is not None:
                return self.run_actions(actions)
        behaviour = self.responses.get(method)
        if behaviour is None:
            if method.startswith(("textDocument/", "workspace/", "completionItem/", "codeAction/", "callHierarchy/")):
                return None
            raise ResponseFailure(-32601, f"{self.name}: unknown method {method}")
        if behaviour.get("crash"):
            os._exit(1)
        return self.answer(method, params, behaviour)

    async def answer(self, method: str, params: Any, behaviour: dict[str, Any]) -> Any:
        if behaviour.get("hang"):
            await asyncio.get_running_loop().create_future()  # until cancelled
        if behaviour.get("delay"):
            await asyncio.sleep(float(behaviour["delay"]))
        if "error" in behaviour:
            raise ResponseFailure(behaviour["error"].get("code", -32603), behaviour["error"].get("message", ""))
        if behaviour.get("echo"):
            return {"server": self.name, "method": method, "params": params}
        if "generate_items" in behaviour:
            count = int(behaviour["generate_items"])
            return {"isIncomplete": False,
                    "items": [{"label": f"{self.name}-item-{i}", "kind": 6, "data": {"i": i}} for i in range(count)]}
        names = {"name": self.name}
        if isinstance(params, dict):
            document = params.get("textDocument")
            if isinstance(document, dict) and "uri" in document:
                names["uri"] = document["uri"]
            position = params.get("position")
            if isinstance(position, dict):
                names["line"] = str(position.get("line"))
                names["character"] = str(position.get("character"))
        return template(behaviour.get("result"), names)

    async def run_actions(self, actions: list[dict[str, Any]]) -> list[Any]:
        answers: list[Any] = []
        for action in actions:
            if "request" in action:
                _, future = self.protocol.request(action["request"], action.get("params"))
                try:
                    answers.append(await asyncio.wait_for(future, 20))
                except ResponseFailure as failure:
                    answers.append({"error": failure.to_dict()})
            else:
                self.protocol.notify(action["notify"], action.get("params"))
                answers.append(None)
        return answers

    # --------------------------------------------------------------------------------------------- notifications
    def on_notification(self, method: str, params: Any) -> None:
        self.record({"method": method, "params": params})
        if method == "exit":
            self.stop.set()
        elif method == "initialized":
            if "crash_after_initialize_seconds" in self.spec:
                asyncio.get_running_loop().call_later(float(self.spec["crash_after_initialize_seconds"]),
                                                      os._exit, 1)
            if self.spec.get("on_initialized"):
                self._background = asyncio.ensure_future(self.run_actions(self.spec["on_initialized"]))
        elif method == "textDocument/didOpen":
            item = params["textDocument"]
            self.documents[item["uri"]] = Document(item["uri"], item.get("languageId", ""), item["version"],
                                                   item["text"])
            self.publish(item["uri"], item["version"])
        elif method == "textDocument/didChange":
            uri = params["textDocument"]["uri"]
            changes = params["contentChanges"]
            incremental = any("range" in change for change in changes)
            if (incremental and self.sync_kind() != 2) or (not incremental and self.sync_kind() == 2
                                                          and len(changes) > 1):
                self.record({"event": "sync_error", "params": params})
            document = self.documents[uri]
            document.apply_changes(changes, params["textDocument"]["version"])
            self.publish(uri, document.version)
        elif method == "textDocument/didClose":
            uri = params["textDocument"]["uri"]
            self.documents.pop(uri, None)
            if "diagnostics_on_open_and_change" in self.spec and not self.spec.get("keep_on_close"):
                self.protocol.notify("textDocument/publishDiagnostics", {"uri": uri, "diagnostics": []})

    def publish(self, uri: str, version: int) -> None:
        diagnostics = self.spec.get("diagnostics_on_open_and_change")
        if diagnostics is None:
            return
        self.protocol.notify("textDocument/publishDiagnostics", {
            "uri": uri, "version": version,
            "diagnostics": template(diagnostics, {"name": self.name, "version": str(version)})})


class _Recording(RawProtocol):
    """Records the answers the client gives to the fake's own requests."""

    def _complete_outgoing(self, msg_id: Any, *, result: Any = None, error: Any = None) -> None:
        fake = getattr(self.handler, "record", None)
        if fake is not None:
            fake({"response": msg_id, "result": result} if error is None else {"response": msg_id, "error": error})
        super()._complete_outgoing(msg_id, result=result, error=error)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", default="{}")
    parser.add_argument("--spec-file")
    parser.add_argument("--record")
    args = parser.parse_args()
    spec = json.loads(Path(args.spec_file).read_text() if args.spec_file else args.spec)
    if spec.get("stderr_spam_bytes"):
        chunk = ("noise " * 16 + "\n").encode()
        written = 0
        while written < int(spec["stderr_spam_bytes"]):
            sys.stderr.buffer.write(chunk)
            written += len(chunk)
        sys.stderr.flush()
    if spec.get("garbage_before_first_frame"):
        sys.stdout.buffer.write(spec["garbage_before_first_frame"].encode())
        sys.stdout.flush()

    def make_handler(protocol: RawProtocol, stop: asyncio.Event) -> FakeServer:
        protocol.peer_name = "hub"
        return FakeServer(spec, args.record, protocol, stop)

    await serve_stdio(make_handler, _Recording)
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
