"""The editor setups under clients/: Helix's languages.toml, Zed's settings and extension, Emacs' lsp-hub.el.

Each file is parsed and checked against the hub's own language table. Emacs (Debian's `emacs-nox` with
`elpa-eglot`) runs headless: Eglot starts lsp-hub through lsp-hub.el and gets hover, merged diagnostics and the
hub's commands. Helix and Zed have no Debian package (Helix is not in bookworm, Zed is not packaged), so their
files are validated statically only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES_DIR, REPO_ROOT

CLIENTS = REPO_ROOT / "clients"
HELIX_FILE = CLIENTS / "helix" / "languages.toml"
ZED_SETTINGS = CLIENTS / "zed" / "settings.json"
ZED_EXTENSION = CLIENTS / "zed" / "extension" / "extension.toml"
EMACS_FILE = CLIENTS / "emacs" / "lsp-hub.el"
DEBIAN_ELPA = Path("/usr/share/emacs/site-lisp/elpa")

# The hub's languages an editor setup must cover (the defaults every client activates on).
SERVED = {"python", "typescript", "javascript", "typescriptreact", "javascriptreact", "c", "cpp", "go", "rust",
          "bash", "yaml", "json", "html", "css"}
# Helix's language name -> the languageId Helix sends (its `language-id`, else the name).
HELIX_LANGUAGE_IDS = {"python": "python", "typescript": "typescript", "tsx": "typescriptreact",
                      "javascript": "javascript", "jsx": "javascriptreact", "c": "c", "cpp": "cpp", "go": "go",
                      "rust": "rust", "bash": "bash", "yaml": "yaml", "json": "json", "html": "html", "css": "css"}


def _hub_language_of(language_id: str) -> str | None:
    """The hub language a client's languageId selects, by the hub's built-in defaults (routing.language_for)."""
    languages = tomllib.loads((REPO_ROOT / "lsp_hub" / "config" / "defaults.toml").read_text())["language"]
    for name, language in languages.items():
        if language_id in language.get("language_ids", []) or language_id == name:
            return str(name)
    return None


# ================================================================================================== Helix
def test_helix_languages_use_lsp_hub_for_every_served_language() -> None:
    config = tomllib.loads(HELIX_FILE.read_text())
    server = config["language-server"]["lsp-hub"]
    assert server["command"] == "lsp-hub"
    assert server.get("args", []) == []
    assert "lspHub" in server.get("config", {}), "initialization options go under lspHub"
    served: set[str] = set()
    for language in config["language"]:
        assert language["name"] in HELIX_LANGUAGE_IDS, f"not a Helix language name: {language['name']}"
        assert language["language-servers"][0] in ("lsp-hub", {"name": "lsp-hub"}), language
        hub_language = _hub_language_of(HELIX_LANGUAGE_IDS[language["name"]])
        assert hub_language is not None, f"the hub does not route Helix's {language['name']!r}"
        served.add(hub_language)
    assert served == SERVED


# ==================================================================================================== Zed
def test_zed_settings_name_lsp_hub_for_every_served_language() -> None:
    settings = json.loads(ZED_SETTINGS.read_text())  # plain JSON: Zed also accepts comments, this file has none
    binary = settings["lsp"]["lsp-hub"]["binary"]
    assert binary["path"] == "lsp-hub" and binary["arguments"] == []
    assert "lspHub" in settings["lsp"]["lsp-hub"]["initialization_options"]
    extension = tomllib.loads(ZED_EXTENSION.read_text())
    registered = extension["language_servers"]["lsp-hub"]
    assert set(settings["languages"]) == set(registered["languages"]) == set(registered["language_ids"])
    served = set()
    for language, entry in settings["languages"].items():
        servers = entry["language_servers"]
        assert servers[0] == "lsp-hub" and servers[-1] == "...", (language, servers)
        assert all(s.startswith("!") for s in servers[1:-1]), "the servers the hub runs itself are turned off"
        hub_language = _hub_language_of(registered["language_ids"][language])
        assert hub_language is not None, f"the hub does not route Zed's {language!r}"
        served.add(hub_language)
    # Zed has no JSX language of its own: .jsx files are "JavaScript" there, sent as languageId javascript.
    assert served == SERVED - {"javascriptreact"}


def test_zed_extension_source_registers_the_same_server_name() -> None:
    source = (CLIENTS / "zed" / "extension" / "src" / "lib.rs").read_text()
    assert 'LspSettings::for_worktree("lsp-hub"' in source
    assert "register_extension!" in source
    cargo = tomllib.loads((CLIENTS / "zed" / "extension" / "Cargo.toml").read_text())
    assert "zed_extension_api" in cargo["dependencies"]
    assert cargo["lib"]["crate-type"] == ["cdylib"]


# ================================================================================================== Emacs
def _structural_parentheses(source: str) -> str:
    """The parentheses of elisp SOURCE outside strings, comments and character literals (?a, ?\\()."""
    found: list[str] = []
    index = 0
    while index < len(source):
        char = source[index]
        if char == ";":
            index = source.find("\n", index)
            index = len(source) if index == -1 else index
        elif char == '"':
            index += 1
            while source[index] != '"':
                index += 2 if source[index] == "\\" else 1
        elif char == "?" and (index == 0 or source[index - 1] in " \t\n('"):
            index += 2 if source[index + 1] == "\\" else 1
        elif char in "()":
            found.append(char)
        index += 1
    return "".join(found)


def test_emacs_file_is_balanced_and_provides_its_feature() -> None:
    source = EMACS_FILE.read_text()
    depth = 0
    for char in _structural_parentheses(source):
        depth += {"(": 1, ")": -1}.get(char, 0)
        assert depth >= 0, "a closing parenthesis without its opening one"
    assert depth == 0, f"{depth} parentheses left open"
    assert "(provide 'lsp-hub)" in source
    assert source.startswith(";;; lsp-hub.el") and "lexical-binding: t" in source.splitlines()[0]
    for command in ("lsp-hub-status", "lsp-hub-repo-map", "lsp-hub-relevant-files", "lsp-hub-callers",
                    "lsp-hub-syntax-check", "lsp-hub-eglot-setup"):
        assert f"(defun {command} " in source


def test_emacs_mode_language_ids_are_routed_by_the_hub() -> None:
    source = EMACS_FILE.read_text()
    pairs = re.findall(r"\(([\w+-]+-mode) \. \"([\w]+)\"\)", source)
    assert len(pairs) >= 20
    routed = {_hub_language_of(language_id) for _, language_id in pairs}
    assert None not in routed
    assert routed == SERVED


EMACS_DRIVER = r"""
(setq debug-on-error nil)
(when (file-directory-p DEBIAN-ELPA)  ; Debian's elpa-eglot for Emacs 28; Emacs 29+ has Eglot built in
  (setq package-directory-list (list DEBIAN-ELPA)))
(package-initialize)
(add-to-list 'load-path CLIENT-DIR)
(require 'lsp-hub)
(require 'json)
(setq lsp-hub-command HUB-COMMAND)
(setq eglot-sync-connect 30 eglot-connect-timeout 60 eglot-events-buffer-size 0)
(lsp-hub-eglot-setup)
(defvar driver-out (list))
(defvar driver-published (list))
(defun driver-record (key value) (setq driver-out (plist-put driver-out key value)))
(advice-add 'eglot-handle-notification :before
            (lambda (_server method &rest params)
              (when (eq method 'textDocument/publishDiagnostics)
                (push (cons (plist-get params :uri)
                            (mapcar (lambda (d) (plist-get d :source)) (plist-get params :diagnostics)))
                      driver-published))))
(defun driver-wait-until (what predicate seconds)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    (unless (funcall predicate) (error "timed out waiting for %s" what))))
(defun driver-start-eglot (file)
  (find-file file)
  (call-interactively #'eglot)
  (driver-wait-until (format "eglot in %s" file) (lambda () (eglot-current-server)) 60)
  (eglot-current-server))
(defun driver-hover-at (needle)
  (goto-char (point-min))
  (search-forward needle)
  (goto-char (match-beginning 0))
  (let ((result (jsonrpc-request (eglot-current-server) :textDocument/hover
                                 (list :textDocument (list :uri (lsp-hub--uri)) :position (lsp-hub--position)))))
    (plist-get (plist-get result :contents) :value)))
(condition-case err
    (progn
      (driver-record :entries (length (lsp-hub-eglot-entries)))
      (let ((python-server (driver-start-eglot BROKEN)))
        (driver-record :python-mode (symbol-name major-mode))
        (driver-wait-until "diagnostics from basedpyright and Ruff"
                    (lambda () (let ((sources (apply #'append (mapcar #'cdr driver-published))))
                                 (and (member "basedpyright" sources) (member "Ruff" sources))))
                    60)
        (driver-record :published-sources (delete-dups (apply #'append (mapcar #'cdr driver-published))))
        (flymake-start)
        (driver-wait-until "flymake diagnostics" (lambda () (>= (length (flymake-diagnostics)) 2)) 20)
        (driver-record :flymake (mapcar (lambda (d) (flymake-diagnostic-text d)) (flymake-diagnostics)))
        (find-file SERVICE)
        (driver-record :service-managed (eq (eglot-current-server) python-server))
        (driver-record :python-hover (driver-hover-at "total_value(inventory)"))
        (let ((c-server (driver-start-eglot C-FILE)))
          (driver-record :c-hover (driver-hover-at "gcd(84"))
          (driver-record :c-server-is-separate (not (eq c-server python-server))))
        (find-file SERVICE)
        (lsp-hub-status)
        (driver-record :status-buffer (with-current-buffer "*lsp-hub status*" (buffer-string)))
        (driver-record :status-pid (plist-get (plist-get (lsp-hub-execute "lspHub.status") :hub) :pid))
        (driver-record :advertised (append (plist-get (plist-get (eglot--capabilities python-server)
                                                          :executeCommandProvider) :commands) nil))
        (when (lsp-hub--advertised-p python-server "lspHub.repoMap")
          (lsp-hub-repo-map)
          (driver-record :repo-map-buffer (with-current-buffer "*lsp-hub repo map*" (buffer-string)))
          (driver-record :repo-map-direct (plist-get (lsp-hub-execute "lspHub.repoMap"
                                                               (list :tokenBudget 1024
                                                                     :focusFiles (vector (lsp-hub--uri))))
                                              :text)))
        (dolist (server (hash-table-values eglot--servers-by-project))
          (dolist (s server) (ignore-errors (eglot-shutdown s))))))
  (error (driver-record :error (error-message-string err))))
(with-temp-file OUTPUT (insert (json-encode driver-out)))
(kill-emacs 0)
"""


def _elisp_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.mark.editor
@pytest.mark.real_server
def test_emacs_eglot_starts_lsp_hub_and_gets_answers(
    tmp_path: Path, require_binary: Callable[[str], str]
) -> None:
    emacs = require_binary("emacs")
    git = require_binary("git")
    for server in ("basedpyright-langserver", "ruff", "clangd"):
        require_binary(server)
    sample = tmp_path / "sample"
    shutil.copytree(EXAMPLES_DIR / "sample", sample, ignore=shutil.ignore_patterns(".ruff_cache", "node_modules"))
    subprocess.run([git, "init", "-q", str(sample)], check=True)  # project.el finds the root by VCS
    output = tmp_path / "out.json"
    hub_command = [sys.executable, "-m", "lsp_hub", "--log-file", str(tmp_path / "hub.log")]
    values = {
        "DEBIAN-ELPA": _elisp_string(str(DEBIAN_ELPA)),
        "CLIENT-DIR": _elisp_string(str(EMACS_FILE.parent)),
        "HUB-COMMAND": "(list " + " ".join(_elisp_string(part) for part in hub_command) + ")",
        "BROKEN": _elisp_string(str(sample / "app" / "broken.py")),
        "SERVICE": _elisp_string(str(sample / "app" / "service.py")),
        "C-FILE": _elisp_string(str(sample / "native" / "main.c")),
        "OUTPUT": _elisp_string(str(output)),
    }
    placeholder = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, values)) + r")(?![\w-])")
    driver = placeholder.sub(lambda match: values[match.group(1)], EMACS_DRIVER)
    script = tmp_path / "driver.el"
    script.write_text(driver)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HOME": str(tmp_path / "home"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data")}
    completed = subprocess.run([emacs, "--batch", "-Q", "-l", str(script)], env=env, cwd=sample,
                               capture_output=True, timeout=150, stdin=subprocess.DEVNULL)
    assert output.exists(), (completed.stdout[-2000:], completed.stderr[-3000:])
    result: dict[str, Any] = json.loads(output.read_text())
    assert "error" not in result, (result, completed.stderr[-3000:])
    assert result["python-mode"] == "python-mode"
    assert {"basedpyright", "Ruff"} <= set(result["published-sources"])
    assert any("os" in text and "unused" in text for text in result["flymake"]), result["flymake"]
    assert result["service-managed"], "a second Python file joins the same hub"
    assert "def total_value" in result["python-hover"]
    assert "gcd" in result["c-hover"]
    # Eglot 1.9 keeps one languageId per server: lsp-hub.el then gives each language its own hub.
    assert result["c-server-is-separate"] == (result["entries"] > 1)
    status = result["status-buffer"]
    assert f"(pid {result['status-pid']})" in status.splitlines()[0]
    for server in ("basedpyright", "ruff"):
        assert re.search(rf"^\s+{server}\s+running\s", status, re.M), status
    if "lspHub.repoMap" in result["advertised"]:
        shown = [line for line in result["repo-map-buffer"].splitlines() if not line.startswith("# incomplete")]
        assert shown == result["repo-map-direct"].rstrip("\n").splitlines()
        assert "app/models.py" in result["repo-map-direct"]
