"""Every face's options are declared once, in its record; the command line and the Python API do not drift from it.

For each face (a record, its command, its Python function) the walk checks that every option of the record is on
the command with the record's flag, default and help, and in the API's signature with its default; and that the
command and the API have no parameter the record does not declare beyond the few each face owns alone (``--out``,
``--format``...). A deliberately drifted command is shown to fail the same walk.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer

import wattplan
from wattplan.planner.agent.options import AgentOptions
from wattplan.planner.bench.options import BenchOptions
from wattplan.planner.cli import app
from wattplan.planner.cli.faces import help_text, options_of
from wattplan.planner.cluster.options import ReportOptions, SubmitOptions, UpOptions
from wattplan.planner.contracts.options import Option, OptionRecord, option
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.plan_options import PlanOptions
from wattplan.planner.sim.options import FrontierOptions, SimulateOptions


@dataclass(frozen=True)
class Face:
    """A face: its record, its command's path under ``wattplan``, its API function and what only each face has."""

    record: type[OptionRecord]
    command: tuple[str, ...]
    api: Callable[..., Any] | None
    command_only: frozenset[str]
    api_only: frozenset[str]


FACES = [
    Face(
        PlanOptions,
        ("plan",),
        wattplan.plan,
        frozenset({"instance", "out_path", "quiet", "cluster", "profiles", "instance_out", "fmt"}),
        frozenset({"instance", "jobs", "cluster", "profiles"}),
    ),
    Face(
        SimulateOptions,
        ("simulate",),
        wattplan.simulate,
        frozenset({"trace", "cluster", "policy", "out_path", "plots", "quiet", "answer_format"}),
        frozenset({"trace", "cluster", "policies", "out", "plots", "quiet"}),
    ),
    Face(
        FrontierOptions,
        ("frontier",),
        wattplan.frontier,
        frozenset({"trace", "cluster", "out_path", "plots", "quiet", "answer_format"}),
        frozenset({"trace", "cluster", "out", "plots"}),
    ),
    Face(
        BenchOptions,
        ("bench",),
        wattplan.bench,
        frozenset({"instances", "out_path", "quiet", "fmt"}),
        frozenset({"instances", "out"}),
    ),
    Face(AgentOptions, ("agent",), None, frozenset({"config", "print_config"}), frozenset()),
    Face(AgentOptions, ("agent", "check"), None, frozenset({"config"}), frozenset()),
    Face(UpOptions, ("cluster", "up"), None, frozenset({"cluster_dir"}), frozenset()),
    Face(SubmitOptions, ("cluster", "submit"), None, frozenset({"cluster_dir", "trace"}), frozenset()),
    Face(ReportOptions, ("cluster", "report"), None, frozenset({"cluster_dir"}), frozenset()),
]
"""Every face of the product with options: ``plan``, the replay, the bench, the agent, the emulated cluster."""


def _command(path: tuple[str, ...], of: typer.Typer = app) -> Any:
    """The click command at ``path`` of a typer app (typer's own click: its groups have ``commands``)."""
    command: Any = typer.main.get_command(of)
    for name in path:
        command = command.commands[name]
    return command


def _click_default(opt: Option) -> Any:
    """The record's default as click holds it."""
    if opt.many and opt.default is not None:
        return list(opt.default)
    return opt.default


def command_drift(record: type[OptionRecord], command: Any, command_only: frozenset[str]) -> list[str]:
    """Every way ``command`` differs from ``record``: an option missing, renamed, with another default or help."""
    params = {p.name: p for p in command.params}
    drift = []
    for opt in record.options():
        param = params.get(opt.name)
        if param is None:
            drift.append(f"{opt.name}: not on the command")
            continue
        if not opt.spec.argument and opt.flag not in param.opts and opt.kind is not bool:
            drift.append(f"{opt.name}: flag {param.opts}, record says {opt.flag}")
        default = param.default.value if hasattr(param.default, "value") else param.default
        if default != _click_default(opt) and not _both_nan(default, opt.default):
            drift.append(f"{opt.name}: default {default!r}, record says {opt.default!r}")
        if getattr(param, "help", None) != help_text(opt):
            drift.append(f"{opt.name}: help differs from the record's")
    names = {opt.name for opt in record.options()}
    drift += [f"{name}: on the command, not in the record" for name in params if name not in names | command_only]
    return drift


def api_drift(record: type[OptionRecord], api: Callable[..., Any], api_only: frozenset[str]) -> list[str]:
    """Every way the API function's keywords differ from ``record``'s options."""
    params = inspect.signature(api).parameters
    drift = []
    for opt in record.options():
        param = params.get(opt.name)
        if param is None:
            drift.append(f"{opt.name}: not a keyword of {api.__name__}")
        elif param.default != opt.default and not _both_nan(param.default, opt.default):
            drift.append(f"{opt.name}: default {param.default!r}, record says {opt.default!r}")
    names = {opt.name for opt in record.options()}
    drift += [f"{name}: a keyword not in the record" for name in params if name not in names | api_only]
    return drift


def _both_nan(a: Any, b: Any) -> bool:
    return isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)


@pytest.mark.parametrize("face", FACES, ids=lambda f: " ".join(f.command))
def test_the_command_and_the_api_are_the_record(face: Face) -> None:
    assert command_drift(face.record, _command(face.command), face.command_only) == []
    if face.api is not None:
        assert api_drift(face.record, face.api, face.api_only) == []


def test_a_hand_written_option_that_drifts_is_caught() -> None:
    """The walk fails on drift: a command writing ``--threads`` itself with another default, help and flag."""

    @dataclass(frozen=True, kw_only=True)
    class Small(OptionRecord):
        threads: int = option(2, "Solver threads.", low=1)
        gap: float = option(0.01, "Gap.", low=0.0, high=1.0, high_open=True)

    sub = typer.Typer()

    @sub.command()
    @options_of(Small, skip=("threads",))
    def run(threads: int = typer.Option(4, "--thread-count", help="Threads."), **given: Any) -> None:
        """A command."""

    @sub.command()
    def other() -> None:
        """Keep ``run`` a named sub-command."""

    drift = command_drift(Small, _command(("run",), sub), frozenset())
    assert drift == ["threads: flag ['--thread-count'], record says --threads", "threads: default 4, record says 2",
                     "threads: help differs from the record's"]  # fmt: skip

    def api(*, gap: float = 0.02, verbose: bool = False) -> None:
        """An API function whose default drifted and which has a keyword of its own."""

    assert api_drift(Small, api, frozenset()) == [
        "threads: not a keyword of api",
        "gap: default 0.02, record says 0.01",
        "verbose: a keyword not in the record",
    ]


def test_a_record_option_written_again_on_its_command_is_refused() -> None:
    """``options_of`` refuses a command that writes one of the record's options itself (a second copy)."""
    with pytest.raises(TypeError, match="writes threads again"):

        @options_of(PlanOptions)
        def bad(threads: int = 3, **given: Any) -> None:
            """Writes --threads again."""


@pytest.mark.parametrize("face", FACES, ids=lambda f: " ".join(f.command))
def test_every_default_passes_its_own_check(face: Face) -> None:
    defaults = {opt.name: opt.default for opt in face.record.options()}
    assert face.record.problems(defaults) == []
    assert face.record.checked(defaults) == face.record()


def _outside(opt: Option) -> list[Any]:
    """Values outside ``opt``'s range, choices or kind (none for a text or path with no choices)."""
    bad: list[Any] = []
    if opt.kind in (int, float):
        bad += [float("nan"), float("inf")] if opt.kind is float else [True, 1.5]
        if opt.spec.low is not None:
            bad.append(opt.spec.low if opt.spec.low_open else opt.spec.low - 1)
        if opt.spec.high is not None:
            bad.append(opt.spec.high if opt.spec.high_open else opt.spec.high * 2 + 1)
    if opt.spec.choices is not None:
        bad.append("no-such-choice")
    if opt.kind is bool:
        bad.append("yes")
    return bad


@pytest.mark.parametrize("face", FACES, ids=lambda f: " ".join(f.command))
def test_every_bad_value_is_one_problem_naming_its_option_both_ways(face: Face) -> None:
    for opt in face.record.options():
        for value in _outside(opt):
            problems = face.record.problems({opt.name: value})
            assert [p.path for p in problems] == [f"{opt.name} ({opt.flag})"], (opt.name, value, problems)
            with pytest.raises(InputError):
                face.record.checked({opt.name: value})


@pytest.mark.parametrize(
    ("keywords", "flags", "text"),
    [
        ({"power_cap_w": -5}, ["--power-cap-w", "-5"], "power_cap_w (--power-cap-w): must be in [0, 1e+10] W, got -5"),
        ({"power_cap_w": 1e308}, ["--power-cap-w", "1e308"], "power_cap_w (--power-cap-w): must be in [0, 1e+10] W"),
        ({"time_limit_s": -1}, ["--time-limit", "-1"], "time_limit_s (--time-limit): must be in (0, 1e+06] s, got -1"),
        ({"delta": math.nan}, ["--delta", "nan"], "delta (--delta): must be a finite number in [0, 1), got nan"),
    ],
)
def test_plan_from_python_and_from_the_command_line_say_the_same(
    keywords: dict[str, Any], flags: list[str], text: str, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    with pytest.raises(InputError) as err:
        wattplan.plan(**keywords)
    assert len(err.value.problems) == 1 and str(err.value.problems[0]).startswith(text)
    result = CliRunner().invoke(app, ["plan", *flags, "--out", str(tmp_path / "p.json"), "--format", "json"])
    assert result.exit_code == 2
    printed = " ".join((result.stderr or result.output).split())
    problem = err.value.problems[0]
    assert problem.path in printed and problem.message in printed
    assert not (tmp_path / "p.json").exists()


def test_the_api_signature_is_generated_from_the_record() -> None:
    params = inspect.signature(wattplan.plan).parameters
    for opt in PlanOptions.options():
        assert params[opt.name].kind is inspect.Parameter.KEYWORD_ONLY
        assert params[opt.name].default == opt.default
    assert [f.name for f in dataclasses.fields(PlanOptions)] == [o.name for o in PlanOptions.options()]


def test_an_unknown_keyword_is_a_type_error_naming_it_as_the_other_faces_answer() -> None:
    with pytest.raises(TypeError, match=r"unexpected option 'max_jct_increase' \(options: .*power_cap_w"):
        wattplan.plan(max_jct_increase=float("nan"))
