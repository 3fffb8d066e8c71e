# scalearena — the two commands a fresh machine needs: `make bench` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CLUSTER ?= sim
OUT ?= results/$(CLUSTER)
SUITE ?= workloads/suites/paper.yaml
JOBS ?=

.PHONY: bench test perf lint report render venv clean paper prometheus

$(STAMP): pyproject.toml setup.py
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,dev]'
	touch $(STAMP)

venv: $(STAMP)

bench: $(STAMP) $(if $(filter local,$(CLUSTER)),prometheus)
	$(BIN)/scalearena suite $(SUITE) --cluster $(CLUSTER) --out $(OUT) $(if $(JOBS),--jobs $(JOBS))

# The local-process integration tests need a real Prometheus (Debian package).
test: $(STAMP) prometheus
	$(BIN)/python -m pytest -q

prometheus:
	bash scripts/ensure-prometheus.sh

perf: $(STAMP)
	$(BIN)/python benchmarks/perf.py

lint: $(STAMP)
	$(BIN)/ruff check scalearena harness controllers workloads reports tests benchmarks

report: $(STAMP)
	$(BIN)/scalearena report $(OUT)

clean:
	rm -rf results .pytest_cache
