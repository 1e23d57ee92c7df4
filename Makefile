# tailbound's front door. `make help` lists the targets.
# Every target installs what it needs: a virtual environment in .venv with the Python packages,
# and the Rust extension built in release mode (the Rust toolchain must already be present).

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUST_SOURCES := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml
OUT ?= out

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.deps: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet "maturin>=1.7,<2"
	$(BIN)/python tools/deps.py | xargs $(BIN)/pip install --quiet
	touch $@

$(VENV)/.built: $(VENV)/.deps $(RUST_SOURCES)
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop --release --quiet
	cargo build --release -p tailbound-replay --quiet  # target/release/tailbound-replay
	cargo build --release -p tailbound-gate --quiet  # the storage gateway (tailbound gate)
	touch $@

.PHONY: install
install: $(VENV)/.built ## Create .venv and build the package (Rust core in release mode) and tailbound-replay

.PHONY: demo
demo: install ## Run the whole pipeline on a generated demo fleet (writes to out/demo)
	$(BIN)/tailbound demo --out $(OUT)/demo

.PHONY: test
test: install test-rust test-python lint ## Run every test: cargo, pytest (with doctests), lint

.PHONY: test-rust
test-rust: ## Rust core, NBD protocol, replayer and gateway tests
	cargo test --release -p tailbound-core -p tailbound-nbd -p tailbound-replay -p tailbound-gate --quiet

.PHONY: test-python
test-python: install ## Python tests and doctests (slow and benchmark tests deselected)
	$(BIN)/python -m pytest -q --durations=15

.PHONY: test-slow
test-slow: install ## The slow tests only
	$(BIN)/python -m pytest -q -m slow

.PHONY: lint
lint: install ## rustfmt, clippy -D warnings, ruff, mypy, stub check of the compiled module
	cargo fmt --all --check
	cargo clippy --release --workspace --all-targets --quiet -- -D warnings
	$(BIN)/ruff check python tests benchmarks tools
	$(BIN)/ruff format --check python tests benchmarks tools
	$(BIN)/mypy
	$(BIN)/python -m mypy.stubtest tailbound._core --ignore-missing-stub --allowlist tools/stubtest-allowlist.txt

.PHONY: format
format: install ## Format Rust and Python sources in place
	cargo fmt --all
	$(BIN)/ruff check --fix python tests benchmarks tools
	$(BIN)/ruff format python tests benchmarks tools

.PHONY: bench
bench: install ## Run the benchmarks and print their tables (see benchmarks/README.md)
	$(BIN)/python -m benchmarks.run

.PHONY: clean
clean: ## Remove the build, the environment and outputs
	rm -rf target $(VENV) $(OUT) python/tailbound/_core.*.so
