# make run: a local NameServer + Broker on the default ports (store in ./.rocketq).
# make test: create .venv when missing, install rocketq with its dev extras, lint, type-check, install Debian's
# chromium and etcd for the dashboard's and failover's tests when missing (where apt-get can), run every test
# twice: with the mypyc-compiled message path (when this machine can build it) and as plain Python. The Spark
# tests (tests/spark, a JVM per run) run once, in the plain pass.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck native system-packages unit unit-native unit-plain bench clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "rocketq needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Compile the message path with mypyc when its sources changed since the last build (1.5-2.5 minutes on
# 2 cores). Exit status 2 means this machine cannot build (no C compiler or Python headers): rocketq runs
# interpreted.
BUILD_NATIVE := $(BIN)/python -m rocketq.native.build --if-stale

native: $(STAMP)
	$(BUILD_NATIVE) || [ $$? -eq 2 ]

# A failed build does not stop `make run`: rocketq runs as plain Python and the build said why.
run: $(STAMP)
	-$(BUILD_NATIVE)
	$(BIN)/rocketq --log-level INFO up

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples

typecheck: $(STAMP)
	$(BIN)/mypy

unit: unit-native unit-plain

unit-native: native
	@if ROCKETQ_NATIVE=required $(BIN)/python -c 'import rocketq' 2>/dev/null; then \
		echo "== every test but Spark's, compiled message path"; ROCKETQ_NATIVE=required $(BIN)/pytest -q -m "not spark"; \
	else echo "== no compiled build on this machine: only the plain Python run"; fi

unit-plain: $(STAMP)
	@echo "== every test, plain Python"
	ROCKETQ_NATIVE=off $(BIN)/pytest -q

# Debian packages some tests drive: chromium (the dashboard's browser tests, tests/dashboard) and etcd
# (failover, tests/failover). Each is installed here when it is missing and apt-get can (as root, quietly);
# when it cannot, those tests are skipped and say why.
system-packages:
	@install_missing() { \
		[ -x "$$1" ] && return 0; \
		command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] || return 0; \
		echo "== installing $$2 for $$3"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq $$2 >/dev/null 2>&1 \
		|| { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq $$2 >/dev/null 2>&1; } \
		|| echo "== could not install $$2: $$3 will be skipped"; \
	}; \
	install_missing /usr/bin/chromium chromium "the dashboard's browser tests"; \
	install_missing /usr/bin/etcd etcd-server "the failover tests"

test: lint typecheck system-packages unit

bench: native
	$(BIN)/rocketq bench store

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build src/rocketq/_native
