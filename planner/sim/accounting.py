"""A run's energy split by where it goes (J): nodes besides their GPUs, the GPUs' idle power, the rest.

The simulated Slurm's meters (:class:`planner.control.sim_slurm.SimulatedSlurm`) keep their energy in this split:
node energy ``sum Pnode dt`` over the powered nodes, idle energy ``sum K Pidle dt`` over their GPUs, and dynamic
energy ``n (P - Pidle) dt`` per running job (a suspended node draws nothing).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EnergySplit:
    """Energy (J) split into nodes besides their GPUs, the GPUs' idle power and the rest (dynamic).

    A whole run's in the simulated Slurm (``SimulatedSlurm.energy``, planner.control).
    """

    node_j: float
    idle_j: float
    dynamic_j: float

    @property
    def total_j(self) -> float:
        """Node plus idle plus dynamic energy (J)."""
        return self.node_j + self.idle_j + self.dynamic_j
