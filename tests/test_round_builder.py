"""From a trace to a round instance: queue, remaining steps, allowed counts, budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattplan.planner.contracts.instance_io import instance_to_doc, parse_instance
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.core.economics import full_power_w
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.rounds.builder import RoundOptions, allowed_counts, build_round
from wattplan.planner.rounds.cluster_spec import parse_cluster_spec
from wattplan.planner.rounds.traces import normalise_request, read_gavel_trace

R50 = "ResNet-50 (batch size 64)"


@pytest.fixture(scope="module")
def lib():
    return load_profile_library()


def write_trace(path: Path, rows: list[tuple[str, float, float, int]]) -> Path:
    lines = [f"{t}\tcmd\t-n\t1\t{steps}\t{arrival}\t{gpus}" for t, steps, arrival, gpus in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_remaining_steps_and_allowed_counts(tmp_path: Path, lib) -> None:
    """At t = 1000 s, ResNet-50 (bs 64) requested on 2 GPUs arrived at 0 s with 10 000 steps.

    Reference V100 throughput at 2 GPUs, top limit: 7.922054 steps/s (Gavel), so it did
    1000 x 7.922054 = 7922.05 steps and 2077.95 remain. Allowed counts: powers of two up to
    2 x 2 = 4 -> [1, 2, 4]. A3C asked for 1 GPU at 500 s with 100 steps: 500 x 7.18 > 100, it is done.
    A job arriving after 1000 s is not queued yet.
    """
    trace = write_trace(tmp_path / "t.trace", [(R50, 10_000, 0, 2), ("A3C", 100, 500, 1), ("A3C", 100, 1500, 1)])
    inst = build_round(
        read_gavel_trace(trace), parse_cluster_spec("v100:16"), lib, RoundOptions(at_s=1000, budget_fraction=None)
    )
    (job,) = inst.jobs
    assert job.id == "j0" and job.gpus == (1, 2, 4)
    assert job.remaining_steps == pytest.approx(10_000 - 1000 * 7.922054367597505)
    assert job.current is None and inst.round.budget_j is None
    assert parse_instance(instance_to_doc(inst)) == inst


def test_budget_is_a_fraction_of_full_power(tmp_path: Path, lib) -> None:
    trace = write_trace(tmp_path / "t.trace", [(R50, 1e6, 0, 1)])
    inst = build_round(read_gavel_trace(trace), parse_cluster_spec("v100:8,p100:8"), lib, RoundOptions(at_s=0))
    assert inst.round.budget_j == pytest.approx(0.6 * full_power_w(inst) * 360, abs=1)
    # full power: each node 200 W + 8 GPUs at the highest profiled power of the type
    v100_max = max(p.power_w for p in inst.profiles if p.gpu_type == "v100")
    assert full_power_w(inst) > 200 + 8 * v100_max


def test_large_requests_are_capped_and_counted(tmp_path: Path, lib) -> None:
    trace = write_trace(tmp_path / "t.trace", [(R50, 1e7, 0, 32), (R50, 1e7, 0, 7)])
    inst = build_round(read_gavel_trace(trace), parse_cluster_spec("v100:32"), lib, RoundOptions(at_s=0))
    assert [j.gpus for j in inst.jobs] == [(1, 2, 4, 8), (1, 2, 4, 8)]
    assert inst.extra["source"]["capped_requests"] == 1


def test_normalise_and_allowed() -> None:
    assert [normalise_request(n, 8) for n in (1, 3, 7, 8, 12, 64)] == [1, 4, 8, 8, 8, 8]
    assert allowed_counts(2, {1, 2, 4, 8}) == (1, 2, 4)
    assert allowed_counts(1, {1}) == (1,)


def test_bad_trace_rows_are_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.trace"
    bad.write_text("A3C\tcmd\t-n\t1\tmany\t0\t1\nA3C\tcmd\n")
    with pytest.raises(InputError) as info:
        read_gavel_trace(bad)
    assert [p.path for p in info.value.problems] == ["line 1", "line 2"]


def test_unknown_gpu_type_in_cluster(tmp_path: Path, lib) -> None:
    trace = write_trace(tmp_path / "t.trace", [(R50, 1e6, 0, 1)])
    with pytest.raises(InputError) as info:
        build_round(read_gavel_trace(trace), parse_cluster_spec("k80:8"), lib, RoundOptions(at_s=0))
    assert info.value.problems[0].path == "--cluster[0]"


@pytest.mark.parametrize(
    ("text", "path", "words"),
    [
        ("v100:8,,p100:8", "--cluster[1]", "empty item"),  # was read as v100:8,p100:8
        ("v100:8,V100:16", "--cluster[1]", "repeats --cluster[0]"),  # was two v100 pools
        ("v100:7", "--cluster[0]", "multiple of 8"),
    ],
)
def test_cluster_spec_items_are_checked_by_position(text: str, path: str, words: str) -> None:
    with pytest.raises(InputError) as info:
        parse_cluster_spec(text)
    assert [p.path for p in info.value.problems] == [path]
    assert words in info.value.problems[0].message
