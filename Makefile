# Two entry points for a fresh machine: `make run` (plan the shipped default round) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-fast lint profiles default-instance demo live-workloads clean slurm-rootfs

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,lint]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/wattplan plan instances/default.json --out out/plan.json

# ruff (style, imports, bugbear, docstrings) and mypy on the product code; .ci/run runs it before the tests.
lint: $(STAMP)
	$(VENV)/bin/ruff check wattplan planner formulations cli.py tests benchmarks
	$(VENV)/bin/ruff format --check wattplan planner formulations cli.py tests benchmarks
	$(VENV)/bin/mypy wattplan cli.py

# Three pytest-xdist workers, each module on one of them, longest first by the seconds each took last time
# (tests/module_seconds.json, rewritten by tests/helpers/module_seconds.py); the modules that start a local Ray are
# one unit, so no two Rays run at once (tests/conftest.py). Three on 2 cores: much of the suite waits (emulated
# clusters, a local Ray, subprocesses), and a third worker fills the waits: 429 s against 508 s with two, back to
# back (benchmarks/RESULTS.md "The suite on three workers"). It ends with its 30 slowest tests (--durations=30), so
# CI's output shows where the time goes. TEST_WORKERS=6 make test on a larger machine.
# Bytecode is cached even where PYTHONDONTWRITEBYTECODE is set (as on the CI machines): without it each pytest
# process rewrote every test module's asserts (13 s of a 18 s collection) and each of the hundreds of wattplan
# subprocesses the tests start compiled the package again (1.0 s a start against 0.55 s).
TEST_WORKERS ?= 3
DURATIONS := --durations=30
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest
test: $(STAMP)
	$(PYTEST) -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(DURATIONS)

# The loop to run before every commit (about 4 minutes on 2 cores): every test not marked slow (replays, sweeps,
# solves of shipped rounds, emulated clusters, subprocess daemons, a local Ray). make test runs all.
test-fast: $(STAMP)
	$(PYTEST) -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not slow" $(DURATIONS)

# A second Slurm beside the host's: Debian 13's Slurm 24.11 in a root filesystem (root, mmdebstrap, Debian's
# package index), for `wattplan cluster up --slurm-root DIR`; kept when already built. .ci/run builds it and the
# live agent tests run on both Slurms (WATTPLAN_SLURM_ROOTFS).
DIR ?= /var/cache/wattplan/slurm-24.11
slurm-rootfs:
	bash deploy/slurm-rootfs.sh $(DIR)

# Rebuild the shipped data from the shipped sources (both are committed).
profiles: $(STAMP)
	$(VENV)/bin/wattplan profiles build --out instances/profiles/gavel_zeus_v100_p100.json

default-instance: $(STAMP)
	$(VENV)/bin/wattplan instance from-trace instances/sources/gavel/traces/6c71a0.trace \
	  --cluster v100:64,p100:32 --at 1900000 --max-jobs 64 --budget-fraction 0.6 --out instances/default.json

# The live demo (root, Slurm, munge and Prometheus installed, as .ci/run installs them): the shipped live workload
# on an emulated cluster with Slurm's power saving, managed by wattplan agent in the by-job mode (README), powering
# idle nodes down itself, and then by Slurm alone; prints the comparison. Measured so (benchmarks/RESULTS.md,
# "Idle nodes powered down by the agent", gavel_mix pd4): 12.5% less energy than Slurm with power saving at 1.07x
# average and 1.08x p95 JCT.
demo: $(STAMP)
	$(PY) benchmarks/live_compare.py instances/live/gavel_mix.trace --out out/demo --gpus v100:32 --power-save \
	  --power-down --max-slowdown 10 --only managed --only unmanaged

# Rebuild the live workloads from the shipped sources.
live-workloads: $(STAMP)
	$(PY) benchmarks/live_workloads.py --out instances/live

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis
