# Set-up and entry points. Each target creates .venv on first use (Python 3.11, pip, no GPU needed).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-quick lint bench clean lock

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# setuptools notes every editable install of a package-dir layout ('Editable installation ... be careful with
	@# folders ...'); it is information, not a fault, and pip would show it as a warning, so it is filtered by text.
	PYTHONWARNINGS='ignore:Editable installation' $(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

## The default leaderboard: nine reference policies on the embedded tiny scenario (load 1 and 2), 10 seeds, ranked
## with 95% confidence intervals. Results go to leaderboard-results/default; a second run resumes (skips done cells).
demo: $(STAMP)
	$(BIN)/gpucluster leaderboard run --workers 2

## Run the test suite (two workers).
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 tests

## The suite without the tests marked slow (the cross-machine goldens, training, bench, Ray): a quick check.
test-quick: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m "not slow" tests

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/gpucluster bench

## Re-pin constraints.txt to what .venv has now (after an intended upgrade; run `make test` and commit both).
lock: $(STAMP)
	{ sed -n '1,3p' constraints.txt; $(BIN)/python -m pip freeze --exclude-editable | sed 's/+cpu$$//'; } > constraints.tmp
	mv constraints.tmp constraints.txt

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
