"""The plan core: the arithmetic of an allocation and everything that makes or checks a plan without a solver.

- ``economics``: steps, progress and energy of one allocation over a round (docs/design.md §2).
- ``economics_batched``: the same arithmetic over NumPy arrays of interchangeable jobs, bit for bit.
- ``greedy``: the greedy plan (§5.2).
- ``placement``: buddy placement of GPU counts on nodes (§6.2).
- ``kept_blocks``: the running jobs a round cannot move, and the aligned GPU blocks they leave free (§3.5).
- ``assemble``: allocations to a placed, accounted plan (§6.1).
- ``evaluate``, ``validate``: a plan's figures recomputed, and every rule it must keep (§6.3, §6.4).
- ``waiting``: why a plan leaves each waiting job waiting, one reason code each (§6.5).
- ``maxq``: the MaxQ rule, per job type and GPU type the lowest setting that keeps 97% of full speed (§10.8).

Imports :mod:`planner.contracts` only; never a solver.
"""
