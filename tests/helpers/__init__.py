"""Builders the test modules share, one module per theme.

A test module imports them from here, never from another test module (``tests/test_layering.py`` checks it).

- ``agent_fakes``: a recorded Slurm the agent's loop runs against (``FakeSlurm``, ``recorded_queue``) and an
  agent built on it (``fake_agent``).
- ``bench``: a benchmark instance set on disk (``write_set``) and run rows of the summary (``run_row``).
- ``commands``: the command line run in-process (``run``).
- ``instances``: instance documents built by hand (``gpu_type``, ``job``, ``profile``, ``instance_doc``), the
  two-job sharing round every backend proves (``sharing_model``, ``SHARING_OPTIMUM``), the 8-job slice of the
  default round (``small_round``) and a plan of the tiny instance (``reference_plan_doc``).
- ``processes``: stand-in solvers (``spawn_and_hang``, ``QuickBackend``) and what is alive (``pid_alive``,
  ``live_in_session``, ``pool_workers``).
- ``profiles``: tiny profile libraries and measured points of the fit and of the fidelity check.
- ``traces``: Gavel traces written by each job's minutes at full speed (``write_minutes_trace``), for the live
  tests.
- ``module_seconds``: each test module's measured seconds, so ``make test`` hands out the longest first.
- ``cbc_stall``: a tool, not a builder: times every CBC run of one test's replays, with and without ``-threads 1``
  (``python -m tests.helpers.cbc_stall``; CBC's one-thread stall, benchmarks/RESULTS.md). It imports the backend,
  which a benchmark may not (``tests/test_layering.py``).
- ``sim_slurm``: the simulated Slurm's constants (the shipped library as truth, node power, load, delay, clock)
  and a V100 profile's speed and power (``x``, ``p``).

Older homes stay where they are: ``tests/sim_helpers.py`` (the hand cluster of the replays, its Hypothesis job rows,
Gavel traces), ``tests/launch_helpers.py``, ``tests/followon_rounds.py``, ``tests/random_instances.py``,
``tests/brute_force.py``, ``tests/slurm_cluster.py``, and ``tests/conftest.py`` (the tiny instance and the fixtures
several modules use, such as ``tiny_doc`` and ``tiny_trace``).
"""
