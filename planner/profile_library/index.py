"""A profile library indexed by key, built once, for whatever looks entries up by key.

The emulated GPUs and the simulated Slurm evaluate their truth with it (:mod:`planner.control.truth_model`), the
agent's progress estimate reads rates and energies off it (:class:`planner.agent.progress_estimate.RateIndex`).

Profiles by ``(type, gpu type, gpus, setting)``; pair rates by ``(a, b, gpu type, gpus)``, each entry serving both
orders (``(b, a)`` gets the rates swapped), as :class:`planner.contracts.domain.Instance` reads them; per GPU type
its idle power (W), setting unit, settings (ascending), node power (W) and top limit (W); each profile's
``utilisation`` where the library has one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wattplan.planner.contracts.domain import PairKey, Profile, ProfileKey, SettingUnit
from wattplan.planner.profile_library.library import ProfileLibrary


@dataclass(frozen=True, slots=True)
class GpuTypeInfo:
    """What the truth says of one GPU type: idle power (W), settings (ascending) in ``unit``, node power (W)."""

    name: str
    idle_power_w: float
    unit: SettingUnit
    settings: tuple[int, ...]
    node_power_w: float | None
    top_limit_w: float | None

    @property
    def default_setting(self) -> int | None:
        """The setting of a GPU with no limit or lock set: the largest (None when the type has none)."""
        return self.settings[-1] if self.settings else None


@dataclass(frozen=True, slots=True)
class LibraryIndex:
    """A profile library indexed by key (build it once with :func:`index_library`).

    Profiles, pair rates in both orders, GPU types, utilisation.
    """

    profiles: Mapping[ProfileKey, Profile]
    pairs: Mapping[PairKey, tuple[float, float]]
    gpu_types: Mapping[str, GpuTypeInfo]
    utilisation: Mapping[ProfileKey, float]


def _float_or_none(v: object) -> float | None:
    """``v`` as a float when it is a number (not a bool), else None."""
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def index_library(lib: ProfileLibrary) -> LibraryIndex:
    """Index ``lib``: profiles by ``(type, gpu type, gpus, setting)``, pair rates by ``(a, b, gpu type, gpus)``.

    A pair entry ``(a, b)`` serves both orders, as :class:`planner.contracts.domain.Instance` reads it. A GPU
    type's settings are the library's ``settings`` list, else the settings its profiles use.
    """
    profiles = {(p.type, p.gpu_type, p.gpus, p.setting): p for p in lib.profiles}
    pairs: dict[PairKey, tuple[float, float]] = {}
    for q in lib.pairs:
        pairs[(q.a, q.b, q.gpu_type, q.gpus)] = (q.rho_a, q.rho_b)
        pairs.setdefault((q.b, q.a, q.gpu_type, q.gpus), (q.rho_b, q.rho_a))
    types: dict[str, GpuTypeInfo] = {}
    for name, g in lib.gpu_types.items():
        settings = g.get("settings") or sorted({p.setting for p in lib.profiles if p.gpu_type == name})
        unit: SettingUnit = "sm_clock_mhz" if g.get("setting_unit") == "sm_clock_mhz" else "power_limit_w"
        types[name] = GpuTypeInfo(
            name=name,
            idle_power_w=float(g.get("idle_power_w", 0.0)),
            unit=unit,
            settings=tuple(sorted(int(s) for s in settings)),
            node_power_w=_float_or_none(g.get("node_power_w")),
            top_limit_w=_float_or_none(g.get("top_limit_w")),
        )
    utilisation = {
        k: float(x["utilisation"]) for k, x in lib.profile_extras.items() if _float_or_none(x.get("utilisation"))
    }
    return LibraryIndex(profiles, pairs, types, utilisation)
