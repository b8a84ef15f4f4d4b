# Source this file (`. scripts/env.sh`) to use the tools scripts/setup.sh installed:
# the project's .venv and the npm language servers in .tools/npm come first on PATH.
# Works from any directory and is harmless to source twice.
if [ -n "${BASH_SOURCE:-}" ]; then
    LSP_HUB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
else
    # Plain sh has no BASH_SOURCE: assume it is sourced from the repository root.
    LSP_HUB_ROOT="$(pwd)"
fi
export LSP_HUB_ROOT
export VIRTUAL_ENV="$LSP_HUB_ROOT/.venv"
case ":$PATH:" in
    *":$LSP_HUB_ROOT/.venv/bin:$LSP_HUB_ROOT/.tools/npm/node_modules/.bin:"*) ;;
    *) PATH="$LSP_HUB_ROOT/.venv/bin:$LSP_HUB_ROOT/.tools/npm/node_modules/.bin:$PATH" ;;
esac
export PATH
