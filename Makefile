# Two commands: `make book` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install boundscheck book test quick-book figures benchmark mutation lint format clean distclean vendor browser pdf envtest requirements seeds seeds-quick

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	@touch $(STAMP)

## make vendor: MathJax from the npm registry into _vendor/ (the site serves it; no CDN needed)
MATHJAX_VERSION := 3.2.2
MATHJAX_NPM     := _vendor/npm/node_modules/mathjax
MATHJAX_OUT     := _vendor/_static/mathjax
vendor: $(MATHJAX_OUT)/tex-mml-chtml.js

$(MATHJAX_OUT)/tex-mml-chtml.js: Makefile
	rm -rf _vendor
	npm install --no-save --no-package-lock --no-audit --no-fund --prefix _vendor/npm mathjax@$(MATHJAX_VERSION)
	mkdir -p $(MATHJAX_OUT)/output/chtml/fonts $(MATHJAX_OUT)/input/tex
	cp $(MATHJAX_NPM)/LICENSE $(MATHJAX_NPM)/package.json $(MATHJAX_NPM)/es5/tex-mml-chtml.js $(MATHJAX_OUT)/
	cp -r $(MATHJAX_NPM)/es5/output/chtml/fonts/woff-v2 $(MATHJAX_OUT)/output/chtml/fonts/
	cp -r $(MATHJAX_NPM)/es5/input/tex/extensions $(MATHJAX_OUT)/input/tex/
	cp -r $(MATHJAX_NPM)/es5/a11y $(MATHJAX_NPM)/es5/ui $(MATHJAX_OUT)/
	rm -rf _vendor/npm
	@echo "MathJax $(MATHJAX_VERSION) vendored into $(MATHJAX_OUT) ($$(du -sh $(MATHJAX_OUT) | cut -f1))"

## make book: build the site strictly (any warning fails) into _build/html. The pages whose code
## changed are first executed side by side, one per core, into the build's execution cache
## (tools/execute_pages.py); the build then takes every page from the cache.
## make book SOLUTIONS=hidden: the instructor's hand-out, every exercise without its solution
## (sphinx-exercise's hide_solutions), into _build/instructor/_build/html; it reuses the execution
## cache of a plain `make book`, so after one nothing runs again
SOLUTIONS ?= shown
ifeq ($(SOLUTIONS),hidden)
BOOK_ARGS := --config _build/instructor/_config.yml --path-output _build/instructor
BOOK_HTML := _build/instructor/_build/html
else ifeq ($(SOLUTIONS),shown)
BOOK_ARGS :=
BOOK_HTML := _build/html
else
$(error SOLUTIONS must be 'shown' (the default) or 'hidden', got '$(SOLUTIONS)')
endif

book: $(STAMP) vendor
ifeq ($(SOLUTIONS),hidden)
	$(BIN)/python tools/instructor_config.py
endif
	$(BIN)/python tools/execute_pages.py
	$(BIN)/jupyter-book build . -W -n --keep-going $(BOOK_ARGS)
	@echo
	@echo "The book is built: open file://$(CURDIR)/$(BOOK_HTML)/index.html"

## make install: the virtual environment .venv with every requirement (make test and make book do it first)
install: $(STAMP)

## make test: library tests, then every page executed in quick mode
test: $(STAMP)
	$(BIN)/python -m pytest

## make boundscheck: the compiled lane kernels run under numba's bounds checks (NUMBA_BOUNDSCHECK=1,
## a separate numba cache), so that an index past an array is an IndexError (slow: they compile again)
boundscheck: $(STAMP)
	$(BIN)/python -m pytest -m boundscheck -p no:cacheprovider tests/test_boundscheck.py -v

## make envtest: the environments users get, built in fresh venvs as they would build them: Binder's
## (binder/requirements.txt, then binder/postBuild: a non-editable install) with every module of the
## installed package imported and one page of each chapter executed in quick mode (slow; CI runs it)
envtest: $(STAMP)
	$(BIN)/python -m pytest -m envtest -n 0 -p no:cacheprovider tests/test_environment.py -v
	@cat _build/envtest/times.json; echo

## make requirements: write requirements.txt and binder/requirements.txt from pyproject.toml
requirements:
	$(PYTHON) tools/requirements.py

## make quick-book: the same site with every simulation in quick mode (a preview)
quick-book: $(STAMP) vendor
	BOOK_QUICK=1 $(BIN)/jupyter-book build . -W -n --keep-going --path-output _build/quick
	@echo "Quick preview: open file://$(CURDIR)/_build/quick/_build/html/index.html"

## make figures: execute every chapter at full size and write its figures as PNG into figures/
figures: $(STAMP)
	$(BIN)/python tools/make_figures.py --output figures

## make seeds N=5: execute every page at full size under BOOK_SEED=1..N (every seed moved, the code
## unchanged), claims recorded instead of raised; on how many seeds each claim holds and each page
## finishes goes to _build/html/seeds.json (run it after make book: the report shows it); pages run
## side by side on all cores (tools/seeds.py --jobs).
N ?= 5
seeds: $(STAMP)
	$(BIN)/python tools/seeds.py --seeds $(N) --output _build/html/seeds.json

## make seeds-quick: every page in quick mode under BOOK_SEED=1 and 2, every claim must hold (tests/test_seeds.py)
seeds-quick: $(STAMP)
	$(BIN)/python -m pytest -m seeds -q tests/test_seeds.py

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

## make browser: the built site (make book first) in headless Chromium: console errors, math, wide
## equations, links, images, solutions, explorers, offline reading, and at 400 px no sideways page,
## nothing cut off, wide tables/formulas/signatures scrolling with a cue; 400 px screenshots into
## _build/screenshots. Needs Debian's chromium (apt-get install chromium chromium-driver).
BOOK_SITE ?= _build/html
browser: $(STAMP)
	$(BIN)/python -m pip install --quiet -r tests/browser/requirements.txt
	@test -x "$${CHROMIUM:-/usr/bin/chromium}" || { echo "make browser needs Chromium: apt-get install -y chromium chromium-driver"; exit 1; }
	BOOK_SITE=$(BOOK_SITE) $(BIN)/python -m pytest -m browser tests/browser -q -p no:cacheprovider -n 2 --dist loadfile

## make pdf: the whole book as one PDF for handouts, _build/latex/symbreak-book.pdf (figures,
## theorems, exercises with their solutions). Installs TeX Live from Debian's packages when missing.
TEX_PACKAGES := latexmk texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended \
                texlive-xetex texlive-plain-generic fonts-freefont-otf tex-gyre
pdf: $(STAMP)
	@if ! command -v latexmk >/dev/null || ! command -v xelatex >/dev/null; then \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO="sudo"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(TEX_PACKAGES); \
	fi
	$(BIN)/jupyter-book build . --builder pdflatex
	@echo "The PDF is built: $(CURDIR)/_build/latex/symbreak-book.pdf"
