"""Hypothesis strategies: tiny random rounds built from the shipped real profiles."""

from __future__ import annotations

from functools import cache

from hypothesis import strategies as st

from wattplan.planner.contracts.domain import CurrentConfig, GpuType, Instance, Job, RoundSpec
from wattplan.planner.core.assemble import SolveInfo, assemble_plan
from wattplan.planner.core.greedy import greedy_allocations
from wattplan.planner.profile_library.library import ProfileLibrary, load_profile_library


@cache
def library() -> ProfileLibrary:
    return load_profile_library()


@cache
def shareable_types() -> tuple[str, ...]:
    """Job types with at least one V100 pair entry where both slowdowns are >= 0.5."""
    return tuple(
        sorted(
            {t for p in library().pairs if p.gpu_type == "v100" and min(p.rho_a, p.rho_b) >= 0.5 for t in (p.a, p.b)}
        )
    )


@st.composite
def tiny_rounds(draw: st.DrawFn, max_jobs: int = 4) -> Instance:
    """2..max_jobs jobs of real types on one or two small GPU pools, two or three settings each."""
    lib = library()
    names = draw(st.sampled_from([("v100",), ("v100", "p100")]))
    gpu_types = []
    for name in names:
        all_settings = lib.gpu_types[name]["settings"]
        settings = tuple(sorted(draw(st.lists(st.sampled_from(all_settings), min_size=1, max_size=3, unique=True))))
        gpu_types.append(
            GpuType(
                name=name,
                nodes=draw(st.integers(1, 2)),
                gpus_per_node=draw(st.sampled_from([2, 4])),
                idle_power_w=float(lib.gpu_types[name]["idle_power_w"]),
                node_power_w=float(draw(st.sampled_from([0, 100, 300]))),
                setting_unit="power_limit_w",
                settings=settings,
            )
        )
    n_jobs = draw(st.integers(2, max_jobs))
    jobs = []
    for j in range(n_jobs):
        job_type = draw(st.sampled_from(shareable_types()))
        drawn = draw(st.lists(st.sampled_from([1, 2]), min_size=1, max_size=2, unique=True))
        counts = tuple(sorted(c for c in drawn if c in lib.counts(job_type, names))) or (1,)
        current = None
        if draw(st.booleans()):
            g = draw(st.sampled_from(gpu_types))
            current = CurrentConfig(g.name, draw(st.sampled_from(counts)), draw(st.sampled_from(g.settings)))
        jobs.append(
            Job(
                id=f"job{j}",
                type=job_type,
                remaining_steps=float(draw(st.sampled_from([50, 500, 5_000, 50_000]))),
                gpus=counts,
                weight=float(draw(st.sampled_from([0.5, 1.0, 2.0]))),
                current=current,
            )
        )
    types = {j.type for j in jobs}
    profiles = tuple(
        p
        for p in lib.profiles
        if p.type in types
        and any(p.gpu_type == g.name and p.setting in g.settings and p.gpus <= g.gpus_per_node for g in gpu_types)
    )
    pairs = tuple(p for p in lib.pairs if p.a in types and p.b in types and p.gpu_type in names)
    spec = RoundSpec(
        index=0,
        duration_s=float(draw(st.sampled_from([60, 360]))),
        budget_j=None,
        restart_s=float(draw(st.sampled_from([0, 30]))),
        min_pair_rate=0.5,
    )
    draft = Instance(spec, tuple(gpu_types), tuple(jobs), profiles, pairs)
    # Budgets around what the greedy plan spends without one, so that they bind often.
    fraction = draw(st.one_of(st.none(), st.sampled_from([0.0, 0.3, 0.5, 0.7, 0.9, 1.2])))
    reference = assemble_plan(draft, greedy_allocations(draft), SolveInfo("greedy", "feasible")).round.energy_j
    budget = None if fraction is None else fraction * reference
    return Instance(
        RoundSpec(0, spec.duration_s, budget, restart_s=spec.restart_s, min_pair_rate=0.5),
        tuple(gpu_types),
        tuple(jobs),
        profiles,
        pairs,
    )
