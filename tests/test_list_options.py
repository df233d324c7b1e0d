"""List options: one parser (planner.console.list_options) for every comma-separated or repeated option (issue 22).

``frontier --deltas nan`` was replayed as a NaN delta and reported as ``--delta``; ``0.1,,0.2`` and repeats
were dropped in silence; ``frontier --baselines wattplan`` named ``--baseline[0]``. Each bad item is now an
exit-2 ``bad-option`` naming the option, the item's index and the item.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.sim_helpers import write_gavel_trace
from wattplan.planner.console.list_options import Bounds, number_list, repeated_list, split_list
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.contracts.request import REPLAY_REQUEST
from wattplan.planner.control.frontier import SLURM_ENGINE
from wattplan.planner.sim.frontier import frontier_points, replay_points
from wattplan.planner.sim.policies import PolicyOptions
from wattplan.planner.sim.replay import DELTA_BOUNDS, ReplaySpec, check_spec

runner = CliRunner()
R50 = "ResNet-50 (batch size 64)"


def problems(exc: pytest.ExceptionInfo[InputError]) -> list[tuple[str, str, str]]:
    return [(p.code, p.path, p.message) for p in exc.value.problems]


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        ("0.1,nan", "--deltas[1]", "'nan' is not a finite number"),
        ("inf", "--deltas[0]", "'inf' is not a finite number"),
        ("0.2,-inf", "--deltas[1]", "'-inf' is not a finite number"),
        ("0.1,,0.2", "--deltas[1]", "empty item: remove the extra comma, or give a value"),
        ("0.1,", "--deltas[1]", "empty item: remove the extra comma, or give a value"),
        ("1", "--deltas[0]", "'1' is outside [0, 1)"),
        ("-0.1", "--deltas[0]", "'-0.1' is outside [0, 1)"),
        ("0.1,0.10", "--deltas[1]", "'0.10' repeats --deltas[0]: give each once"),
        ("x", "--deltas[0]", "'x' is not a number"),
    ],
)
def test_each_bad_number_item_is_named_by_option_index_and_item(text: str, path: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        number_list(text, "--deltas", DELTA_BOUNDS)
    assert exc.value.source == "--deltas"
    assert problems(exc) == [("bad-option", path, message)]


def test_good_lists_and_the_empty_value() -> None:
    assert number_list(" 0.03, 0.1 ", "--deltas", DELTA_BOUNDS) == [0.03, 0.1]
    assert number_list("", "--max-jct-increase", Bounds(0, 1000, unit=" %")) == []
    assert number_list("0,1000", "--max-jct-increase", Bounds(0, 1000, unit=" %")) == [0.0, 1000.0]
    assert split_list("cbc, highs", "--solvers") == ["cbc", "highs"]
    assert split_list("a,a", "--x", repeats=True) == ["a", "a"]
    assert repeated_list(["zeus", "all"], "--policy") == ["zeus", "all"]


def test_every_bad_item_is_reported_at_once() -> None:
    with pytest.raises(InputError) as exc:
        number_list("nan,,2,0.5,0.5", "--deltas", DELTA_BOUNDS)
    assert [p.path for p in exc.value.problems] == ["--deltas[0]", "--deltas[1]", "--deltas[2]", "--deltas[4]"]


def test_repeats_by_key_and_empty_repeated_values() -> None:
    with pytest.raises(InputError) as exc:
        split_list("v100:8,V100:16", "--cluster", key=lambda item: item.partition(":")[0].strip().lower())
    assert problems(exc) == [("bad-option", "--cluster[1]", "'V100:16' repeats --cluster[0]: give each once")]
    with pytest.raises(InputError) as exc:
        repeated_list(["zeus", " ", "zeus"], "--policy")
    assert [p.path for p in exc.value.problems] == ["--policy[1]", "--policy[2]"]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return write_gavel_trace(tmp_path / "tiny.trace", [(R50, 4000, 0, 1), (R50, 6000, 0, 2)])


def invoke(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("option", "value", "path"),
    [
        ("--deltas", "0.1,nan", "--deltas[1]"),
        ("--deltas", "0.1,,0.2", "--deltas[1]"),
        ("--deltas", "1.5", "--deltas[0]"),
        ("--deltas", "0.1,0.1", "--deltas[1]"),
        ("--max-jct-increase", "5,inf", "--max-jct-increase[1]"),
        ("--max-jct-increase", "-inf", "--max-jct-increase[0]"),
        ("--max-jct-increase", "2000", "--max-jct-increase[0]"),
        ("--max-jct-increase", "5,,10", "--max-jct-increase[1]"),
        ("--baselines", "fifo-max,,zeus", "--baselines[1]"),
        ("--baselines", "zeus,zeus", "--baselines[1]"),
        ("--baselines", "wattplan", "--baselines[0]"),
        ("--cluster", "v100:8,,p100:8", "--cluster[1]"),
        ("--cluster", "v100:8,v100:8", "--cluster[1]"),
    ],
)
def test_frontier_refuses_bad_list_items_by_name(
    trace: Path, tmp_path: Path, option: str, value: str, path: str
) -> None:
    out = tmp_path / "out"
    args = ["frontier", trace, "--cluster", "v100:8", "--solver", "greedy", "-o", out, option, value]
    code, output = invoke(*args)
    assert code == 2, output
    assert path in output and ("unknown-policy" if value == "wattplan" else "bad-option") in output
    assert "--delta " not in output and "--delta\n" not in output and "--baseline[" not in output
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "path"),
    [
        (["-p", "zeus", "-p", "zeus"], "--policy[1]"),
        (["--cluster", "v100:8,,p100:8"], "--cluster[1]"),
        (["--cluster", "p100:8,v100:8,P100:16"], "--cluster[2]"),
    ],
)
def test_simulate_refuses_bad_list_items_by_name(trace: Path, tmp_path: Path, args: list[str], path: str) -> None:
    out = tmp_path / "out"
    code, output = invoke("simulate", trace, "--cluster", "v100:8", "-q", "-o", out, *args)
    assert code == 2, output
    assert path in output and "bad-option" in output
    assert not out.exists()


@pytest.mark.parametrize(("solvers", "path"), [("greedy,,cbc", "--solvers[1]"), ("greedy,greedy", "--solvers[1]")])
def test_bench_refuses_bad_solver_items_by_name(tmp_path: Path, solvers: str, path: str) -> None:
    instance = Path(__file__).resolve().parents[1] / "instances" / "default.json"
    out = tmp_path / "out"
    code, output = invoke("bench", instance, "--solvers", solvers, "-q", "-o", out)
    assert code == 2, output
    assert path in output and "bad-option" in output
    assert not out.exists()


def test_a_bad_frontier_delta_names_deltas_wherever_it_is_caught(trace: Path, tmp_path: Path) -> None:
    request = replace(REPLAY_REQUEST, solver="greedy")
    base = ReplaySpec(trace=trace, cluster="v100:8", policy_options=PolicyOptions(request=request))
    with pytest.raises(InputError) as exc:
        replay_points(frontier_points(base, [1.5], [], ["fifo-max"]), tmp_path / "bad", workers=1, engine=SLURM_ENGINE)
    assert problems(exc) == [("bad-option", "--deltas", "must be in [0, 1), got 1.5")]
    # simulate's own option is --delta
    with pytest.raises(InputError) as exc:
        check_spec(replace(base, rules=replace(base.rules, delta=float("nan"))))
    assert [(p.code, p.path) for p in exc.value.problems] == [("bad-option", "--delta")]
    code, output = invoke("simulate", trace, "--cluster", "v100:8", "--delta", "1.5", "-q", "-o", tmp_path / "o")
    assert code == 2 and "--delta" in output and "--deltas" not in output
