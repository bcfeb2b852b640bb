# EncDec Lab — `make run` serves the app, `make test` runs the whole suite; both set everything up first.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMPS := var/stamps
MANAGE := $(PY) manage.py
# pytest-xdist workers for `make test` and `make test-fast` (0: one process). Each worker has its own Redis and
# database (docs/development.md); files with slow tests go first and each worker's torch takes one thread. Three on
# two cores: 8 min 03 s against 9 min 38 s with two (the suite waits on processes, sockets and pages about a fifth
# of the time; docs/development.md, "Where the suite's time goes").
TEST_WORKERS ?= 3
# --no-loadscope-reorder: xdist otherwise hands out the files with the most tests first, not in tests/conftest.py's order.
PYTEST_PARALLEL := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

.PHONY: setup run test test-fast lint bench models clean help cluster

help:
	@echo "make run    set up, then serve http://127.0.0.1:$${PORT:-8000} with workers and an embedded Redis"
	@echo "make test   set up, then run the whole test suite (Redis, Celery workers, Chromium included)"
	@echo "make setup  venv, packages, migrations, static files, translations, shipped models (idempotent)"
	@echo "make lint   ruff"
	@echo "make bench  the benchmarks in bench/ (installs the benchmark-only peers)"
	@echo "make cluster  as root: a school's hosts as network namespaces (scripts/cluster.py up $$CLUSTER_ARGS; down with scripts/cluster.py down)"

$(STAMPS):
	@mkdir -p $(STAMPS)

$(PY):
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found (EncDec Lab needs Python 3.11)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMPS)/app-deps: requirements/app.txt requirements/constraints.txt | $(PY) $(STAMPS)
	$(PIP) install -q -r requirements/app.txt -c requirements/constraints.txt
	@touch $@

$(STAMPS)/test-deps: requirements/test.txt $(STAMPS)/app-deps
	$(PIP) install -q -r requirements/test.txt -c requirements/constraints.txt
	@touch $@

$(STAMPS)/bench-deps: requirements/bench.txt $(STAMPS)/app-deps
	$(PIP) install -q -r requirements/bench.txt
	@touch $@

$(STAMPS)/messages: $(wildcard locale/*/LC_MESSAGES/*.po webapp/*/locale/*/LC_MESSAGES/*.po) | $(STAMPS)/app-deps
	@command -v msgfmt >/dev/null || scripts/ensure_system_packages.sh gettext
	$(MANAGE) compilemessages --ignore=.venv -v 0
	@touch $@

$(STAMPS)/static: $(shell find static -type f 2>/dev/null) | $(STAMPS)/app-deps
	$(MANAGE) collectstatic --noinput -v 0
	@touch $@

# modelcore's native decoder step (about a minute on two cores, once); without a C++ compiler
# decoding takes the Python step, slower and otherwise the same.
$(STAMPS)/native: modelcore/decoding/native/step.cpp modelcore/decoding/native/__init__.py | $(STAMPS)/app-deps
	@$(PY) -m modelcore.decoding.native && touch $@ || echo "warning: decoding will take the Python step (see above)"

setup: $(STAMPS)/app-deps $(STAMPS)/messages $(STAMPS)/static $(STAMPS)/native
	$(MANAGE) migrate --noinput -v 0
	@if $(MANAGE) help register_shipped_models >/dev/null 2>&1; then $(MANAGE) register_shipped_models; fi

run: setup
	$(PY) scripts/run_stack.py

# proxy, two web hosts, gpu, cpu and data hosts as network namespaces, links with delay (docs/deploy.md, "A school's
# hosts on one machine"); e.g. make cluster CLUSTER_ARGS="--rtt 20ms"
cluster: setup
	$(PY) scripts/cluster.py up $(CLUSTER_ARGS)

test: setup $(STAMPS)/test-deps
	@scripts/ensure_system_packages.sh chromium nginx-light fonts-noto-cjk iproute2
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest $(PYTEST_PARALLEL) --durations=25

test-fast: setup $(STAMPS)/test-deps
	$(VENV)/bin/pytest $(PYTEST_PARALLEL) -m "not slow and not e2e and not services" --durations=10

lint: $(STAMPS)/test-deps
	$(VENV)/bin/ruff check .

bench: $(STAMPS)/bench-deps
	@for script in bench/*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf var/stamps var/staticfiles
