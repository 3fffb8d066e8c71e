# scalearena — the two commands a fresh machine needs: `make bench` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CLUSTER ?= sim
OUT ?= results/$(CLUSTER)
SUITE ?= $(if $(filter kind kwok,$(CLUSTER)),workloads/suites/kind.yaml,workloads/suites/paper.yaml)
JOBS ?=
TIME_SCALE ?= 1
LOCUST_WORKERS ?= 1
FRONTIER ?=
# FRONTIER=1: also run the oracle frontier (the bound of the report's regret; docs/metrics.md)
SEEDS ?= 5

.PHONY: bench test fuzz perf fidelity fidelity-check bound lint report render venv clean paper prometheus chromium images e2e baseline kind-up kind-down pins kwok-tools

# The simulator's compiled core (harness/sim/native.py: mypyc over these modules, the .py files stay the
# reference and run whenever the build does not match them); rebuilt when one changes. NATIVE=0 skips it.
NATIVE ?= 1
NATIVE_SRC := harness/sim/engine/event.py harness/sim/engine/core.py harness/sim/engine/histogram.py harness/sim/engine/kv_transfer.py \
  harness/sim/engine/prefix_cache.py harness/sim/engine/latency.py harness/sim/engine/cluster.py harness/sim/router.py \
  harness/sim/events.py harness/sim/state.py harness/sim/requests.py \
  harness/sim/handoff.py harness/sim/pods.py harness/sim/startup.py harness/sim/scrapes.py \
  harness/sim/loop.py harness/sim/native.py harness/sim/native_build.py workloads/base.py
NATIVE_STAMP := build/native/manifest.json
BUILT := $(STAMP) $(if $(filter 0,$(NATIVE)),,$(NATIVE_STAMP))

# Each step says what it waits for (pip is quiet): measured on a 2-core machine with an empty pip cache, the venv
# takes ~3 s, pip's upgrade ~1 s and the install ~46 s (about 1.5 GB of wheels from PyPI; slower networks take longer).
$(STAMP): pyproject.toml setup.py
	@test -x $(BIN)/python || { echo "venv: creating $(VENV) with $(PY) (~3 s)..."; $(PY) -m venv $(VENV); }
	@echo "venv: upgrading pip in $(VENV)..."
	@$(BIN)/pip install -q --upgrade pip
	@echo "venv: installing scalearena and its dependencies from pyproject.toml (quiet; ~1 min the first time, 1.5 GB installed)..."
	@start=$$SECONDS; $(BIN)/pip install -q -e '.[test,dev]' && echo "venv: installed in $$((SECONDS - start)) s"
	@touch $(STAMP)

$(NATIVE_STAMP): $(STAMP) $(NATIVE_SRC)
	@$(BIN)/python -m scalearena.harness.sim.native_build

venv: $(BUILT)

# CLUSTER=kind: one cluster for the whole suite (kind up: sized for it, images built and loaded once),
# deleted afterwards whatever the suite's outcome.
bench: $(BUILT) $(if $(filter local,$(CLUSTER)),prometheus)
ifeq ($(CLUSTER),kind)
	$(BIN)/scalearena kind up --suite $(SUITE)
	$(BIN)/scalearena suite $(SUITE) --cluster kind --out $(OUT) $(if $(JOBS),--jobs $(JOBS)); \
	  rc=$$?; $(BIN)/scalearena kind down; exit $$rc
else ifeq ($(CLUSTER),kwok)
	$(BIN)/scalearena kwok up --suite $(SUITE) --time-scale $(TIME_SCALE)
	$(BIN)/scalearena suite $(SUITE) --cluster kwok --out $(OUT) --backend-option time_scale=$(TIME_SCALE) $(if $(JOBS),--jobs $(JOBS)); \
	  rc=$$?; $(BIN)/scalearena kwok down; exit $$rc
else
	$(BIN)/scalearena suite $(SUITE) --cluster $(CLUSTER) --out $(OUT) $(if $(JOBS),--jobs $(JOBS)) $(if $(FRONTIER),--frontier) \
	  $(if $(filter local,$(CLUSTER)),--backend-option time_scale=$(TIME_SCALE) --backend-option locust_workers=$(LOCUST_WORKERS))
endif

kind-up: $(STAMP)
	$(BIN)/scalearena kind up --suite $(SUITE)

kind-down: $(STAMP)
	$(BIN)/scalearena kind down

# CLUSTER=kwok's upstream programs (tools/versions.yaml) built from source through the Go module proxy into
# ~/.cache/scalearena/bin (SCALEARENA_TOOLS_DIR); needs Go 1.25.7 or newer. What is built already is reused.
kwok-tools: $(STAMP)
	$(BIN)/python -m scalearena.harness.kube.tools

# Refresh the image digests pinned in manifests/ (needs network and docker; see docs/kubernetes.md).
pins:
	bash scripts/refresh-pins.sh

# The local-process integration tests need a real Prometheus, the report legibility tests Chromium (Debian), the
# kwok tier (tests/e2e/test_kwok.py) the tools built from source where Go is installed (skipped, with the reason,
# where it is not; SCALEARENA_REQUIRE_KWOK=1, as .ci/run sets, makes that a failure).
# The suite runs on TEST_JOBS pytest-xdist workers, one test file per unit of work, in collection order, so the
# kwok tier's files (tests/e2e, collected first; their runs take turns on the host) start at once while the
# unit and local-process tests fill the other workers. TEST_JOBS=0 runs it in this one process. Measured on
# 2 cores with make bench beside it: 4 workers 4 min 37 s, 6 workers 6 min 7 s (each worker collects the whole
# suite, ~8 s of CPU, and six of them crowd the timing-bound local tests).
TEST_JOBS ?= 4
test: $(BUILT) prometheus chromium
	@if command -v go >/dev/null 2>&1 || [ "$$SCALEARENA_REQUIRE_KWOK" = 1 ]; then $(MAKE) --no-print-directory kwok-tools; \
	  else echo "go not on PATH: the kwok tier (tests/e2e/test_kwok.py) will be skipped"; fi
	$(BIN)/python -m pytest -q -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder --durations=15 -m "not fidelity"

# The CI's short sim-vs-real check (tests/e2e/test_kwok_fidelity.py: hpa, one seed, the staircase on the simulator
# and on kwok at time scale 2, about 2.5 minutes), which .ci/run runs after `make test`. Alone, not beside the
# suite: it measures the real stack's timing, and a 2-core host busy with other tests slows the real engines.
fidelity-check: $(BUILT) kwok-tools
	$(BIN)/python -m pytest -q -p no:cacheprovider -m fidelity tests/e2e/test_kwok_fidelity.py

# The fuzz suite at scale: every property test (tests/fuzz_settings.py) at FUZZ_SCALE times its `make test` sample,
# then benchmarks/reliability.py over FUZZ_EXAMPLES inputs per family (the figures of docs/reliability.md). The
# sandboxed CLI families dominate: FUZZ_SCALE=1 FUZZ_EXAMPLES=300 is a quicker pass. The table is printed even
# when a property fails; the exit status is then 1.
FUZZ_SCALE ?= 25
FUZZ_EXAMPLES ?= 1000
FUZZ_TESTS := tests/unit/harness/promql/test_promql_fuzz.py tests/unit/controllers/test_keda_formula_fuzz.py tests/unit/harness/objects/test_objects_fuzz.py \
  tests/unit/harness/local/test_openai_fuzz.py tests/integration/test_router_fuzz.py tests/integration/test_adversarial.py
fuzz: $(BUILT)
	SCALEARENA_FUZZ_SCALE=$(FUZZ_SCALE) $(BIN)/python -m pytest -q -p no:cacheprovider $(FUZZ_TESTS); rc=$$?; \
	  $(BIN)/python benchmarks/reliability.py --examples $(FUZZ_EXAMPLES) || rc=1; exit $$rc

prometheus:
	bash scripts/ensure-prometheus.sh

chromium:
	bash scripts/ensure-chromium.sh

perf: $(BUILT)
	$(BIN)/python benchmarks/perf.py
	$(BIN)/python benchmarks/bench_e2e.py

# Simulated vs real (docs/fidelity.md): workloads/suites/sim-vs-real.yaml on CLUSTER=kwok's upstream control
# plane, every autoscaler x 3 seeds (68 minutes measured here), then on the simulator in each real run's measured
# conditions, then the tables. Complete kwok runs under results/sim-vs-real are kept (--reuse); UPDATE_DOCS=1
# writes the tables into docs/fidelity.md and the summary line into README; REPEAT="DIR ..." judges other kwok runs
# of the same seeds (earlier --out folders) against the first, the real stack's own noise floor.
fidelity: $(BUILT) kwok-tools
	$(BIN)/python benchmarks/sim_vs_real.py --reuse $(if $(UPDATE_DOCS),--update-docs) $(foreach d,$(REPEAT),--repeat $(d))

# Is the oracle frontier a bound? Every autoscaler on every shipped scenario and generated long-prompt, P/D and
# bursty workloads (workloads/suites/bound.yaml); exits 1 naming each autoscaler beyond noise below it.
bound: $(BUILT)
	$(BIN)/python benchmarks/bound_check.py --out $(if $(filter results/sim,$(OUT)),results/bound,$(OUT))

lint: $(STAMP)
	$(BIN)/ruff check scalearena contracts harness controllers workloads reports paper tests benchmarks
	$(BIN)/mypy scalearena contracts harness controllers workloads reports paper

report: $(STAMP)
	$(BIN)/scalearena report $(OUT)

# Store this bench's summaries as the regression baseline that CI compares against (baselines/CLUSTER).
# The sim baseline carries the oracle frontier (frontier.json), which tests/unit/reports/test_frontier_bound.py checks.
baseline: FRONTIER = $(if $(filter sim,$(CLUSTER)),1)
baseline: bench
	rm -rf baselines/$(CLUSTER)
	cd $(OUT) && find . \( -name summary.json -o -name suite.json -o -name frontier.json \) -exec install -D -m 644 {} $(CURDIR)/baselines/$(CLUSTER)/{} \;

# Render the whole of OUT/report.html to OUT/report.png at 1366 px (installs Debian chromium if missing).
render: $(STAMP)
	bash scripts/render_report.sh $(OUT)/report.html $(OUT)/report.png

# Reproduce the WVA paper: seeds x experiments x autoscalers, sensitivity, heterogeneous pool.
paper: $(STAMP)
	$(BIN)/scalearena paper --seeds $(SEEDS) --out results/paper-repro --doc docs/paper-reproduction.md

# Container images for CLUSTER=kind / CLUSTER=cluster (needs a Docker engine).
images:
	docker build -f Dockerfile.router -t $(or $(SCALEARENA_IMAGE_PREFIX),scalearena)/serve-router:dev .
	docker build -f Dockerfile.controller -t $(or $(SCALEARENA_IMAGE_PREFIX),scalearena)/wva-controller:dev .
	docker build -f Dockerfile.engine -t $(or $(SCALEARENA_IMAGE_PREFIX),scalearena)/serve-engine:dev .

# End-to-end tests against a real kind cluster (Docker, kind, kubectl).
e2e: $(STAMP)
	KIND_E2E=1 $(BIN)/python -m pytest -q tests/e2e

clean:
	rm -rf results .pytest_cache
