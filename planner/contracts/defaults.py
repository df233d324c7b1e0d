"""Every default of a round and a cluster, in one place (docs/design.md §2 and §9).

The instance loader, the round builder, the replay and the command line all take their
defaults from here; solve options have theirs in :class:`planner.contracts.request.PlanRequest`.
"""

from __future__ import annotations

from typing import Final

ROUND_S: Final = 360.0
"""Round length ``T`` (s)."""
ROUND_S_RANGE: Final = (1e-3, 86_400.0)
"""The round lengths (s, both ends included) a trace-built round or a replay may have: a millisecond to a day.
1e308 s overflowed every energy to inf (nothing writable), 1e-308 s made the restart cost the only error."""
RESTART_S: Final = 30.0
"""Restart cost ``tau`` (s): compute time a job loses when it (re)starts."""
MIN_PAIR_RATE: Final = 0.5
"""Least slowdown ``rho`` either job of a pair may have."""
DELTA: Final = 0.03
"""Progress the ``energy`` objective gives up: target ``(1 - delta) * P*``."""
OBJECTIVE: Final = "progress"
"""The objective of an instance that names none."""
GPUS_PER_NODE: Final = 8
"""GPUs per node ``K_g`` of a cluster given as ``type:GPUS``."""
NODE_POWER_W: Final = 200.0
"""Node base power ``Pnode_g`` (CPU, memory, fans; W): an assumption, not measured data."""
BUDGET_FRACTION: Final = 0.6
"""A round built from a trace gets this fraction of full power x ``T`` as its budget."""
ZEUS_ETA: Final = 0.5
"""Zeus's weight of energy against time in the replay's ``zeus`` baseline."""
MAX_ROUNDS: Final = 20_000
"""Most rounds a replay simulates (skipped idle rounds excluded) before it stops with ``max-rounds``."""
DELTA_MAX: Final = 0.25
"""Largest ``delta`` the runtime-bounded mode's governor sets (:mod:`planner.sim.governor`). Measured on 150-job
slices (benchmarks/RESULTS.md), a fixed ``delta`` past about 0.2 buys no energy: with ``energy`` deferred work keeps
nodes on for longer, with ``efficiency`` 0.1 to 0.5 all land within 0.4% of each other while the JCT rises."""
FIGURE_DPI: Final = 150
"""Dots per inch of a PNG figure (``--dpi``; PDF and SVG are vector)."""
