# The two set-up commands of the README: `make demo` and `make test`. Each installs what it needs.
VENV ?= .venv
STAMP := $(VENV)/.installed
# The demo records into the checkout, not /var/lib/hearth, unless told otherwise.
HEARTH_STATE_DIR ?= $(CURDIR)/.hearth
export HEARTH_STATE_DIR

.PHONY: demo test test-real test-system lint bench self-test layout clean

$(STAMP): pyproject.toml scripts/bootstrap.sh
	VENV=$(VENV) sh scripts/bootstrap.sh

demo: $(STAMP)
	$(VENV)/bin/hearth demo

self-test: $(STAMP)
	$(VENV)/bin/hearth-loop --self-test

# the lint first: ruff (rules in pyproject.toml), the formatter's check, mypy on agent/ and hearth/
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: lint
	$(VENV)/bin/python -m pytest -q

# the tests marked real, against a real model server: HEARTH_REAL_MODEL_HOST's, else the real-model
# cache's llama-server (REALMODEL), started for them and stopped after; one line says why not without one
REALMODEL ?= /var/cache/hearth-realmodel
REAL_TESTS ?= tests
test-real: $(STAMP)
	VENV=$(VENV) REALMODEL=$(REALMODEL) sh scripts/test-real.sh $(REAL_TESTS)

# hearth's units under a real systemd: a Debian root (debootstrap, cached in /var/cache/hearth-test-system)
# booted with systemd-nspawn, set up as docs/debian.md says, probed by tests/system/. Needs root.
test-system: $(STAMP)
	VENV=$(VENV) sh scripts/test-system.sh

# docs/layout.md's floor table, drawn again from the layer table (FLOORS in tests/test_layout.py)
layout: $(STAMP)
	$(VENV)/bin/python scripts/layout_page.py

bench: $(STAMP)
	@for b in bench/*.py; do echo "== $$b"; $(VENV)/bin/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .hearth .pytest_cache
