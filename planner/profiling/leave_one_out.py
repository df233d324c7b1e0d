"""Leave-one-out: what borrowing another workload's power-limit curve costs, on data it did not use.

The shipped library (:mod:`planner.profile_library.build`) gives a Gavel job type the power-limit curve of
one Zeus workload (:mod:`planner.profile_library.mapping`): the time ratio ``r(s) = t(s) / t(s_max)`` scales
Gavel's top-limit throughput, and the power ``P(s)`` (W per GPU) is taken as is. Here each Zeus
workload ``w = (dataset, network, batch size)`` of a GPU type's summary is held out in turn and its
curve is predicted by borrowing from a donor ``d`` of the same file, by one of two rules:

* ``batch``: the same dataset and network at the nearest *other* batch size
  (:func:`planner.profile_library.mapping.nearest_batch_size`: nearest in log2, ties to the larger), which is
  what the mapping does when the Gavel batch size was not measured;
* ``model``: every other workload (another dataset or network) at its batch size nearest to ``w``'s,
  which is what the mapping does for families Zeus never measured (ResNet-18 borrows ShuffleNet-v2).

On the limits ``L`` both curves measured, ``s_max = max L``, with the true top-limit time known (as
Gavel's top-limit throughput is), the borrowed prediction at limit ``s`` is

* time ratio ``r_d(s) = t_d(s) / t_d(s_max)`` against ``r_w(s)``;
* power ``P_d(s)`` against ``P_w(s)`` (W);
* energy per epoch ``E_pred(s) = P_d(s) * r_d(s) * t_w(s_max)`` against ``E_w(s) = P_w(s) t_w(s)`` (J per
  GPU), so ``E_pred / E_w = (P_d r_d) / (P_w r_w)``;

each as a relative error ``predicted / true - 1``. The energy regret of trusting the borrowed curve
is ``E_w(s_b) / E_w(s_w) - 1`` where ``s_b = argmin E_pred`` (the donor's own energy-optimal limit)
and ``s_w = argmin E_w``: the energy lost by running at the limit the borrowed curve calls optimal
(ties go to the higher limit).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wattplan.planner.profile_library.build import DEFAULT_SOURCE_DIR, ZeusCurves, load_zeus
from wattplan.planner.profile_library.mapping import nearest_batch_size

Curve = Mapping[int, tuple[float, float]]  # power limit (W) -> (time per epoch (s), average power (W))
Workload = tuple[str, str, int]  # (dataset, network, batch size), as in the Zeus summary
SCHEMES: tuple[str, ...] = ("batch", "model")
ZEUS_GPU_TYPES: tuple[str, ...] = ("v100", "p100", "a40", "rtx6000")


@dataclass(frozen=True, slots=True)
class LimitComparison:
    """The true and borrowed time ratio, power (W) and energy per epoch (J) at one limit (W)."""

    limit: int
    time_ratio_true: float
    time_ratio_pred: float
    power_true: float
    power_pred: float
    energy_true: float
    energy_pred: float

    @property
    def time_ratio_error(self) -> float:
        """``r_d(s) / r_w(s) - 1``."""
        return self.time_ratio_pred / self.time_ratio_true - 1

    @property
    def power_error(self) -> float:
        """``P_d(s) / P_w(s) - 1``."""
        return self.power_pred / self.power_true - 1

    @property
    def energy_error(self) -> float:
        """``E_pred(s) / E_w(s) - 1``."""
        return self.energy_pred / self.energy_true - 1


@dataclass(frozen=True, slots=True)
class BorrowResult:
    """Every common limit compared, the true and borrowed energy-optimal limits and the regret."""

    limits: tuple[LimitComparison, ...]
    s_true_opt: int
    s_borrowed_opt: int
    regret: float


def _argmin(values: Mapping[int, float]) -> int:
    """The key of the smallest value; ties go to the larger key (the higher, faster limit)."""
    return min(values, key=lambda s: (values[s], -s))


def borrow(true: Curve, donor: Curve) -> BorrowResult:
    """Compare ``true`` with the prediction borrowed from ``donor`` (module docstring); >= 2 common limits."""
    common = sorted(set(true) & set(donor))
    if len(common) < 2:
        raise ValueError(f"curves share {len(common)} power limit(s); a shape needs at least 2")
    top = common[-1]
    t_top, d_top = true[top][0], donor[top][0]
    rows = []
    for s in common:
        (t, p), (td, pd) = true[s], donor[s]
        r, rd = t / t_top, td / d_top
        rows.append(LimitComparison(s, r, rd, p, pd, p * t, pd * rd * t_top))
    e_true = {c.limit: c.energy_true for c in rows}
    s_true = _argmin(e_true)
    s_borrowed = _argmin({c.limit: c.energy_pred for c in rows})
    return BorrowResult(tuple(rows), s_true, s_borrowed, e_true[s_borrowed] / e_true[s_true] - 1)


@dataclass(frozen=True, slots=True)
class HeldOutCase:
    """One held-out workload of one GPU type, the donor whose curve it borrowed and the comparison."""

    gpu_type: str
    scheme: str
    workload: Workload
    donor: Workload
    result: BorrowResult


def donors(workload: Workload, workloads: Sequence[Workload], scheme: str) -> list[Workload]:
    """The donors of ``workload`` under ``scheme`` (``batch`` or ``model``, module docstring)."""
    dataset, network, batch = workload
    by_model: dict[tuple[str, str], list[int]] = {}
    for d, n, b in workloads:
        by_model.setdefault((d, n), []).append(b)
    if scheme == "batch":
        others = [b for b in by_model.get((dataset, network), []) if b != batch]
        return [(dataset, network, nearest_batch_size(batch, others))] if others else []
    if scheme == "model":
        return [
            (d, n, nearest_batch_size(batch, bs))
            for (d, n), bs in sorted(by_model.items())
            if (d, n) != (dataset, network)
        ]
    raise ValueError(f"unknown scheme {scheme!r} (have {', '.join(SCHEMES)})")


def held_out_cases(curves: ZeusCurves, gpu_type: str, schemes: Sequence[str] = SCHEMES) -> list[HeldOutCase]:
    """Every workload of ``curves`` held out against each of its donors, per scheme."""
    workloads = sorted(curves)
    out = []
    for scheme in schemes:
        for w in workloads:
            for d in donors(w, workloads, scheme):
                if len(set(curves[w]) & set(curves[d])) >= 2:
                    out.append(HeldOutCase(gpu_type, scheme, w, d, borrow(curves[w], curves[d])))
    return out


def leave_one_out(
    source_dir: Path = DEFAULT_SOURCE_DIR, gpu_types: Sequence[str] = ZEUS_GPU_TYPES, schemes: Sequence[str] = SCHEMES
) -> list[HeldOutCase]:
    """:func:`held_out_cases` over the Zeus summaries ``zeus/summary_power_<g>.csv`` of ``gpu_types``."""
    out = []
    for g in gpu_types:
        curves, _ = load_zeus(Path(source_dir), g)
        out += held_out_cases(curves, g, schemes)
    return out


@dataclass(frozen=True, slots=True)
class LooSummary:
    """Errors of one (GPU type, scheme) over its cases (relative; ``worst_*`` signed, largest ``|.|``).

    Time-ratio errors leave out ``s_max`` (the ratio is 1 on both sides there); power and energy
    errors count every common limit of every case; regrets one per case.
    """

    gpu_type: str
    scheme: str
    cases: int
    workloads: int
    median_time_ratio_error: float
    worst_time_ratio_error: float
    median_power_error: float
    worst_power_error: float
    median_energy_error: float
    worst_energy_error: float
    median_regret: float
    worst_regret: float
    worst_case: HeldOutCase


def _worst(values: Sequence[float]) -> float:
    return max(values, key=abs)


def summarise(cases: Sequence[HeldOutCase]) -> list[LooSummary]:
    """One :class:`LooSummary` per (GPU type, scheme), in the order the cases come."""
    groups: dict[tuple[str, str], list[HeldOutCase]] = {}
    for c in cases:
        groups.setdefault((c.gpu_type, c.scheme), []).append(c)
    out = []
    for (g, scheme), group in groups.items():
        limits = [(c, x) for c in group for x in c.result.limits]
        time_err = [x.time_ratio_error for c, x in limits if x.limit != c.result.limits[-1].limit]
        power_err = [x.power_error for _, x in limits]
        energy_err = [x.energy_error for _, x in limits]
        worst_case = max(group, key=lambda c: c.result.regret)
        out.append(
            LooSummary(
                gpu_type=g,
                scheme=scheme,
                cases=len(group),
                workloads=len({c.workload for c in group}),
                median_time_ratio_error=statistics.median(abs(e) for e in time_err),
                worst_time_ratio_error=_worst(time_err),
                median_power_error=statistics.median(abs(e) for e in power_err),
                worst_power_error=_worst(power_err),
                median_energy_error=statistics.median(abs(e) for e in energy_err),
                worst_energy_error=_worst(energy_err),
                median_regret=statistics.median(c.result.regret for c in group),
                worst_regret=worst_case.result.regret,
                worst_case=worst_case,
            )
        )
    return out
