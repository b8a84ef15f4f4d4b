# lsp-hub developer entry points. `make demo` and `make test` work on a fresh Debian machine with
# Python 3.11 and node/npm: both install what they need first (scripts/setup.sh), once.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Every recipe that runs project tools goes through this, so .venv and .tools/npm come first on PATH.
WITH_ENV := . scripts/env.sh &&
PYTEST_ARGS ?=

SETUP_STAMP := .tools/setup.stamp
SETUP_INPUTS := pyproject.toml scripts/setup.sh scripts/npm-tools/package.json scripts/npm-tools/package-lock.json \
	clients/vscode/package.json clients/vscode/package-lock.json
# A deleted .venv or .tools must re-run setup even when the stamp looks newer than its inputs.
SETUP_OUTPUTS_PRESENT := $(and $(wildcard .venv/bin/lsp-hub),$(wildcard .tools/npm/node_modules/.bin/typescript-language-server),$(wildcard clients/vscode/node_modules/.bin/tsc))
SETUP_FORCE := $(if $(SETUP_OUTPUTS_PRESENT),,setup-force)

.PHONY: help setup setup-force test demo lint bench soak vsix

help:
	@echo "make demo    install everything, then run a scripted session through lsp-hub on examples/sample"
	@echo "make test    install everything, then run the test suite (extra pytest options: PYTEST_ARGS=...)"
	@echo "make setup   install .venv, the npm language servers (.tools/npm) and neovim; fast when done"
	@echo "make lint    ruff check + mypy (for Linux, macOS and Windows)"
	@echo "make bench   run the benchmarks in bench/"

setup: $(SETUP_STAMP)

$(SETUP_STAMP): $(SETUP_INPUTS) $(SETUP_FORCE)
	bash scripts/setup.sh
	touch $@

setup-force:

test: setup
	$(WITH_ENV) python -m pytest -q $(PYTEST_ARGS)

demo: setup
	@if [[ ! -f examples/demo.py ]]; then echo "make demo: examples/demo.py does not exist yet" >&2; exit 1; fi
	$(WITH_ENV) python examples/demo.py

lint: setup
	$(WITH_ENV) ruff check .
	$(WITH_ENV) mypy
	# The other systems' code paths (lsp_hub/platform/ and every sys.platform branch), checked from here.
	$(WITH_ENV) mypy --platform darwin
	$(WITH_ENV) mypy --platform win32

# Helpers that bench scripts start (a fake backend serving on stdin, a byte-copying proxy) are not benchmarks themselves.
BENCH_HELPERS := bench/fast_backend.py bench/copy_proxy.py bench/processes.py
# Runs for minutes by design (`make soak`, or bench/soak.py --minutes N): not part of `make bench`.
BENCH_LONG := bench/soak.py
BENCH_SCRIPTS := $(filter-out $(BENCH_HELPERS) $(BENCH_LONG),$(wildcard bench/*.py))

bench: setup
	@if [[ -z "$(BENCH_SCRIPTS)" ]]; then echo "make bench: no bench/*.py yet" >&2; exit 1; fi
	@. scripts/env.sh; for script in $(BENCH_SCRIPTS); do echo "== $$script"; python "$$script" </dev/null; done

soak: setup
	$(WITH_ENV) python bench/soak.py --minutes 20

vsix: setup
	$(WITH_ENV) cd clients/vscode && npm run build && npm run package
