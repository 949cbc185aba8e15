# Two commands: `make book` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: book test quick-book figures benchmark mutation lint format clean distclean

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	@touch $(STAMP)

## make book: build the site strictly (any warning fails) into _build/html
book: $(STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo
	@echo "The book is built: open file://$(CURDIR)/_build/html/index.html"

## make test: library tests, then every page executed in quick mode
test: $(STAMP)
	$(BIN)/python -m pytest

## make quick-book: the same site with every simulation in quick mode (a preview)
quick-book: $(STAMP)
	BOOK_QUICK=1 $(BIN)/jupyter-book build . -W -n --keep-going --path-output _build/quick
	@echo "Quick preview: open file://$(CURDIR)/_build/quick/_build/html/index.html"

## make figures: execute every chapter at full size and write its figures as PNG into figures/
figures: $(STAMP)
	$(BIN)/python tools/make_figures.py --output figures

## make benchmark: the engine against a naive PyTorch loop, same workload
benchmark: $(STAMP)
	$(BIN)/python benchmarks/bench_engine.py

## make lint: ruff's linter and the formatter's check (rules in pyproject.toml); make format applies the formatter
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .

clean:
	rm -rf _build figures .pytest_cache

distclean: clean
	rm -rf $(VENV)

## make mutation: distort each theory function a page compares with by 10%; every page must fail
mutation: $(STAMP)
	$(BIN)/python -m pytest -m mutation -q
