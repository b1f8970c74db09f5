# BeeOS Operator Console: `make run` (demo) and `make test` (suite on PostgreSQL).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/beeos_console
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run worker test lint format migrate seed install clean vendor-htmx

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

var:
	mkdir -p var

migrate: install var
	$(BIN)/python manage.py migrate --no-input

seed: migrate
	$(BIN)/python manage.py seed_demo

# The console plus one background worker (bulk cancels); Ctrl-C stops both.
run: seed
	$(BIN)/python manage.py db_worker --interval 1 & worker=$$!; \
	trap 'kill $$worker 2>/dev/null' EXIT INT TERM; \
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

worker: install
	$(BIN)/python manage.py db_worker

test: install
	DATABASE_URL="$${DATABASE_URL:-$(TEST_DATABASE_URL)}" $(BIN)/ruff check .
	DATABASE_URL="$${DATABASE_URL:-$(TEST_DATABASE_URL)}" $(BIN)/python manage.py makemigrations --check --dry-run
	DATABASE_URL="$${DATABASE_URL:-$(TEST_DATABASE_URL)}" $(BIN)/pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
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

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache test-output
