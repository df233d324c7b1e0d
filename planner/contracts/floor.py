"""The energy floor's answer: the least energy any schedule could spend on a workload (docs/design.md §14).

Computed by :func:`planner.planning.energy_floor` (the LP lives in :mod:`formulations.energy_floor`); the replay, the
frontier and the benchmarks read it as this type.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EnergyFloor:
    """The floor LP's answer: ``energy_j`` (J, None when not solved) and how it is made up.

    ``paired_step_share``: fraction of all steps the optimum does in pairs; ``unservable``:
    job types with steps to do and no configuration that makes progress (the floor then
    covers the other classes only and says so).
    """

    energy_j: float | None
    classes: int
    columns: int
    paired_step_share: float | None
    unservable: tuple[str, ...]
    note: str

    @property
    def energy_kwh(self) -> float | None:
        """The floor in kWh (1 kWh = 3.6e6 J)."""
        return None if self.energy_j is None else self.energy_j / 3.6e6
