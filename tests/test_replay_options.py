"""The replay's options written once (issue 42): :mod:`planner.sim.options` behind ``simulate`` and ``frontier``.

``wattplan simulate`` / ``frontier`` are generated from :class:`SimulateOptions` / :class:`FrontierOptions` and
``wattplan.simulate`` / ``wattplan.frontier`` check the same records: a bad value is one problem with the same text
from both faces. The records build the spec the options say, and the few numbers and choices they repeat from
modules the command line does not load to start agree with those modules.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any, get_args

import pytest
from typer.testing import CliRunner

import wattplan
from cli import app
from tests.sim_helpers import write_gavel_trace
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.sim import options as sim_options
from wattplan.planner.sim.options import FrontierOptions, ReplayOptions, SimulateOptions

ROOT = Path(__file__).resolve().parents[1]
R50 = "ResNet-50 (batch size 64)"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return write_gavel_trace(tmp_path / "tiny.trace", [(R50, 4000, 0, 1), (R50, 6000, 0, 2)])


@pytest.mark.parametrize(
    ("command", "keywords", "flags", "text"),
    [
        ("simulate", {"max_jct_increase": math.nan}, ["--max-jct-increase", "nan"],
         "max_jct_increase (--max-jct-increase): must be a finite number in [0, 1000] %, got nan"),
        ("simulate", {"dpi": 10}, ["--dpi", "10"], "dpi (--dpi): must be in [50, 1200] dpi, got 10"),
        ("simulate", {"restart_s": 400.0}, ["--restart-s", "400"],
         "restart_s (--restart-s): must be >= 0 and shorter than the round"),
        ("simulate", {"power_cap_w": 1000.0, "energy_budget_kwh": 3.0, "budget_period_s": 3600.0},
         ["--power-cap-w", "1000", "--energy-budget-kwh", "3", "--budget-period-s", "3600"],
         "power_cap_w (--power-cap-w): give power_cap_w (--power-cap-w) or energy_budget_kwh (--energy-budget-kwh)"),
        ("frontier", {"noise": 1.0}, ["--noise", "1"], "noise (--noise): must be in [0, 1), got 1"),
        ("frontier", {"signal_start": "2022-01-01T00:00:00"}, ["--signal-start", "2022-01-01T00:00:00"],
         "signal_start (--signal-start): needs carbon (--carbon) or price (--price)"),
        ("frontier", {"gpus_per_node": 0}, ["--gpus-per-node", "0"], "gpus_per_node (--gpus-per-node): must be in"),
    ],
)  # fmt: skip
def test_python_and_the_command_line_say_the_same(
    command: str, keywords: dict[str, Any], flags: list[str], text: str, trace: Path, tmp_path: Path
) -> None:
    """One problem, the same words from ``wattplan.<command>(...)`` and ``wattplan <command> ...``; nothing run."""
    with pytest.raises(InputError) as err:
        getattr(wattplan, command)(trace, cluster="v100:8", out=tmp_path / "api", **keywords)
    assert len(err.value.problems) == 1 and str(err.value.problems[0]).startswith(text), err.value.problems
    out = tmp_path / "cli"
    args = [command, str(trace), "--cluster", "v100:8", *flags, "-q", "-o", str(out)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "1000"})
    assert result.exit_code == 2, result.output
    printed = " ".join(result.output.split())
    problem = err.value.problems[0]
    assert problem.path in printed and problem.message in printed and "Traceback" not in printed
    assert not out.exists() and not (tmp_path / "api").exists()


def test_the_records_are_the_replays_option_sets() -> None:
    """The shared options are in both records; each face adds only its own (``frontier``'s lists are texts)."""
    shared = {opt.name for opt in ReplayOptions.options()}
    # no ``engine``: it went with the round-based replay (issue 43 item 4)
    simulate = {opt.name for opt in SimulateOptions.options()} - shared
    frontier = {opt.name for opt in FrontierOptions.options()} - shared
    engine = {"time_scale", "load_s", "requeue_delay_s", "event_rounds", "periodic_rounds"}
    engine |= {"power_save", "power_down", "power_up", "suspend_s", "resume_s", "power_cap_schedule", "progress_metric"}
    engine |= {"up_before_s", "pairs", "poll_s"}
    engine |= {"budget_period_s", "pass_delay_s", "completing_s"}
    assert simulate == {"objective", "delta", "max_jct_increase", "fresh", "workers", *engine}
    assert frontier == {"objective", "deltas", "max_jct_increase", "baselines", "workers", *engine}
    assert FrontierOptions.option("max_jct_increase").kind is str
    assert SimulateOptions.option("max_jct_increase").kind is float


def test_python_spells_paths_as_texts_and_lists_as_sequences() -> None:
    """From Python a path may be a text and a frontier list a list, as ``wattplan.simulate`` took them before."""
    assert SimulateOptions.checked(carbon="CISO_2022.csv", truth=Path("t.json")).carbon == Path("CISO_2022.csv")
    swept = FrontierOptions.checked(deltas=[0.03, 0.2], max_jct_increase=(0, 10), baselines=["fifo-max", "zeus"])
    assert (swept.deltas, swept.max_jct_increase, swept.baselines) == ("0.03,0.2", "0,10", "fifo-max,zeus")
    with pytest.raises(InputError) as err:
        FrontierOptions.checked(deltas=5)
    assert [p.path for p in err.value.problems] == ["deltas (--deltas)"]


def test_the_record_builds_the_spec_its_options_say(trace: Path) -> None:
    """Percent options become fractions, the solve options wattplan's request, each other option its field."""
    from wattplan.planner.contracts.request import REPLAY_REQUEST
    from wattplan.planner.contracts.rules import RoundRules
    from wattplan.planner.sim.session import frontier_sweep, replay_spec

    given = {
        "max_jct_increase": 5, "tail_bound": 10, "governor": "projected", "tail_pace": "fastest", "delta_max": 0.2,
        "noise": 0.1, "max_rounds": 30, "gpus_per_node": 4, "node_power_w": 150, "learn": True,
        "solver": "greedy", "time_limit": 2, "threads": 2, "seed": 3, "node_limit": 50, "horizon": 2,
        "round_s": 60, "restart_s": 10, "min_pair_rate": 0.6, "objective": "energy", "delta": 0.1, "zeus_eta": 0.3,
        "power_cap_w": 900, "max_jobs": 2, "start_s": 0, "end_s": 1e6, "vc": None, "signal_aware": False,
    }  # fmt: skip
    spec = replay_spec(trace, "v100:8", SimulateOptions.checked(given), ["fifo-max", "wattplan"])
    assert spec.policies == ("fifo-max", "wattplan") and spec.cluster == "v100:8"
    assert (spec.max_jct_increase, spec.tail_bound) == pytest.approx((0.05, 0.1))
    assert (spec.governor, spec.tail_pace, spec.delta_max, spec.learn) == ("projected", "fastest", 0.2, True)
    assert (spec.noise, spec.max_rounds, spec.gpus_per_node, spec.node_power_w) == (0.1, 30, 4, 150.0)
    assert spec.rules == RoundRules(60.0, 10.0, 0.6, "energy", 0.1)
    assert spec.policy_options.zeus_eta == 0.3 and not spec.signal_aware
    solve = {"solver": "greedy", "time_limit_s": 2.0, "threads": 2, "seed": 3, "node_limit": 50, "horizon": 2}
    assert spec.policy_options.request == replace(REPLAY_REQUEST, **solve)
    assert (spec.power_cap_w, spec.max_jobs, spec.start_s, spec.end_s, spec.seed) == (900.0, 2, 0.0, 1e6, 3)
    sweep = frontier_sweep(trace, "v100:8", FrontierOptions.checked(deltas="0.1", max_jct_increase=[5, 10]))
    assert (sweep.deltas, sweep.jct_increases) == ((0.1,), (0.05, 0.1))
    assert sweep.base.max_jct_increase is None and sweep.base.rules.objective == "efficiency"


def test_the_replay_uses_the_live_agents_governor_rule_by_default(trace: Path) -> None:
    """The replay runs the agent's loop, so its rule is the live agent's; a given rule is kept."""
    from wattplan.planner.agent.options import AgentOptions
    from wattplan.planner.sim.options import LIVE_GOVERNOR
    from wattplan.planner.sim.session import governor_rule, replay_spec

    def rule(**given: object) -> str:
        return replay_spec(trace, "v100:8", SimulateOptions.checked(given), ["wattplan"]).governor

    assert rule() == LIVE_GOVERNOR == AgentOptions().steering().rule
    assert LIVE_GOVERNOR == "projected"  # written down: it differs from the other rule, accrued, given below
    assert rule(governor="accrued") == "accrued"
    assert governor_rule(FrontierOptions.checked()) == LIVE_GOVERNOR  # every frontier point replays the loop too
    assert governor_rule(FrontierOptions.checked(governor="accrued")) == "accrued"


def test_the_choices_and_ranges_agree_with_the_modules_they_come_from() -> None:
    """The record repeats a few values of modules that load pandas (the command line loads neither to start)."""
    from wattplan.planner.rounds.traces import MAX_TRACE_S, TraceFormat
    from wattplan.planner.sim.governor import GovernorRule
    from wattplan.planner.sim.replay import DELTA_BOUNDS, JCT_INCREASE_BOUNDS
    from wattplan.planner.sim.tail_bound import TailPace

    assert set(sim_options.TRACE_FORMATS) == set(get_args(TraceFormat))
    assert set(sim_options.GOVERNORS) == set(get_args(GovernorRule))
    assert set(sim_options.TAIL_PACES) == set(get_args(TailPace))
    assert sim_options.MAX_TRACE_S == MAX_TRACE_S
    assert sim_options.JCT_INCREASE_ITEMS == JCT_INCREASE_BOUNDS and sim_options.DELTA_ITEMS == DELTA_BOUNDS
    for name in ("max_jct_increase", "tail_bound"):
        spec = SimulateOptions.option(name).spec
        assert (spec.low, spec.high) == (JCT_INCREASE_BOUNDS.low, JCT_INCREASE_BOUNDS.high)
