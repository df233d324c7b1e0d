"""The energy floors' answers: the least energy any schedule could spend on a workload (docs/design.md §14).

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


@dataclass(frozen=True, slots=True)
class DeadlineFloor:
    """The deadline floor's answer: a lower bound on the energy of schedules that meet the windows.

    ``energy_j`` (J, None when not solved), from :mod:`formulations.deadline_floor`, and how it was proven.
    """

    energy_j: float | None
    jobs: int
    windows: int
    free_jobs: int
    columns: int
    certified: bool
    """True: weak duality on the LP's duals; False: a MILP solver's proven bound (``free_jobs > 0``)."""
    note: str
    paired_step_share: float | None = None
    """Fraction of all steps the solution found does in pairs (None without one)."""
    slot_kwh: tuple[float, ...] = ()
    """With a timeline: the energy of the solution found in each slot (kWh), the overflow slot after the last
    deadline last; one relaxed schedule's profile, not a bound per slot."""

    @property
    def energy_kwh(self) -> float | None:
        """The bound in kWh."""
        return None if self.energy_j is None else self.energy_j / 3.6e6
