# `make run` runs the bundled examples on the simulator; `make test` runs ruff, mypy and pytest.
# Both create .venv and install the project into it when it is missing or older than pyproject.toml.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint typecheck pytest bench bench16k clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/visa run examples/*.py

lint: $(STAMP)
	$(BIN)/ruff check visa tests examples benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy --strict visa
	$(BIN)/mypy --strict examples

pytest: $(STAMP)
	$(BIN)/pytest

test: lint typecheck pytest

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# the 16384³ i8 GEMM (about a quarter of an hour on 2 cores; N=2048 runs it small)
bench16k: $(STAMP)
	PROGRESS=1 $(BIN)/python -m benchmarks gemm16k

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
