"""Figures a paper can use: formats and dpi, the cap, the floor and the reference drawn, one style per policy."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from matplotlib.lines import Line2D

from tests.sim_helpers import write_gavel_trace
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.control import session
from wattplan.planner.control.slurm_replay import SlurmReplayResult, replay_on_slurm
from wattplan.planner.sim import plots
from wattplan.planner.sim.frontier import frontier_plot
from wattplan.planner.sim.plots import (
    POLICY_STYLES,
    REFERENCE_LABEL,
    EnergyJctPoint,
    FigureOptions,
    check_figure_options,
    energy_jct_plot,
    jct_cdf_series_plot,
    power_steps_plot,
    save_figure,
    series_style,
)
from wattplan.planner.sim.replay import ReplaySpec

R50 = "ResNet-50 (batch size 64)"
A3C = "A3C"
BASELINES = ("fifo-max", "fifo-maxq", "zeus", "eaco", "powerflow")
CAP_W = 2500.0
Series = dict[str, tuple[list[float], list[float]]]


@dataclass
class Drawn:
    """fifo-max and eaco replayed on the loop under a 2.5 kW cap, and what ``simulate`` drew of them."""

    runs: list[SlurmReplayResult]
    paths: list[Path]
    power: Series
    power_title: str


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Drawn:
    """Five short jobs on one V100 node: the loop's runs with the floor, their figures in SVG and the power series.

    The series are the ones :func:`planner.control.session.write_slurm_plots` hands to the power figure.
    """
    rows = [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (A3C, 9000, 100, 1), (R50, 3000, 400, 4), (A3C, 5000, 500, 1)]
    folder = tmp_path_factory.mktemp("figures")
    trace = write_gavel_trace(folder / "tiny.trace", rows)
    spec = ReplaySpec(trace=trace, cluster="v100:8", policies=("fifo-max", "eaco"), power_cap_w=CAP_W)
    runs = session.with_floor(spec, [replay_on_slurm(spec, name) for name in spec.policies])
    seen: dict[str, object] = {}

    def recording(series: Series, path: Path, title: str, **kwargs: object) -> object:
        seen.update(series=series, title=title)
        return power_steps_plot(series, path, title, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plots, "power_steps_plot", recording)
        paths = session.write_slurm_plots(folder / "out", runs, FigureOptions("svg"))
    return Drawn(runs, paths, seen["series"], str(seen["title"]))  # type: ignore[arg-type]


def labelled(fig: object, prefix: str) -> list[Line2D]:
    """The lines of ``fig``'s only axes whose label starts with ``prefix``."""
    (ax,) = fig.axes  # type: ignore[attr-defined]
    return [line for line in ax.get_lines() if str(line.get_label()).startswith(prefix)]


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height (pixels) from a PNG's IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_power_figure_draws_the_cap_in_kw(drawn: Drawn) -> None:
    fig = power_steps_plot(drawn.power, cap_w=CAP_W)
    (cap,) = labelled(fig, "power cap")
    assert list(cap.get_ydata()) == [2.5, 2.5]  # 2500 W is 2.5 kW on the kW axis
    assert cap.get_label() == "power cap (2.5 kW)"
    assert labelled(power_steps_plot(drawn.power), "power cap") == []


def test_energy_jct_plot_draws_the_floor_and_rings_the_reference() -> None:
    points = [EnergyJctPoint("eaco", 6.0, 7200.0, "eaco"), EnergyJctPoint("wattplan", 4.0, 9000.0, "wattplan")]
    reference = EnergyJctPoint(REFERENCE_LABEL, 7.0, 3600.0, "fifo-max")
    fig = energy_jct_plot(points, floor_kwh=3.0, reference=reference)
    (floor,) = labelled(fig, "energy floor")
    assert list(floor.get_xdata()) == [3.0, 3.0] and floor.get_linestyle() == "--"
    (ring,) = labelled(fig, REFERENCE_LABEL)
    assert (list(ring.get_xdata()), list(ring.get_ydata())) == ([7.0], [1.0])  # 3600 s is 1 h
    (ax,) = fig.axes
    assert ax.get_xlim()[0] < 3.0  # the floor is in view, the unreachable side shaded left of it
    assert len(ax.patches) == 1 and ax.patches[0].get_hatch() == "//"


def test_simulate_draws_the_clusters_draw_and_the_floor_of_its_runs(drawn: Drawn) -> None:
    """The power figure is each run's draw step by step: hours since the first arrival and kW, held to its end.

    Its area, sum of (t_{i+1} - t_i) h x P_i kW, is the run's energy (kWh) over its own window; the floor the summaries
    carry bounds each run's energy over the common window.
    """
    assert [p.name for p in drawn.paths] == ["power.svg", "jct_cdf.svg", "energy_jct.svg"]
    assert all(b"<svg" in p.read_bytes()[:2000] for p in drawn.paths)
    assert drawn.power_title == "Cluster power (every node on)"
    assert list(drawn.power) == ["fifo-max", "eaco"]
    for run in drawn.runs:
        hours, kw = drawn.power[run.policy]
        assert hours[0] == 0.0 and kw[-1] == kw[-2]  # from the first arrival; the last step held to its end
        area = sum((b - a) * w for a, b, w in zip(hours, hours[1:], kw, strict=False))
        assert area == pytest.approx(run.summary["energy_kwh"], rel=1e-9)
        assert hours[-1] == pytest.approx(run.summary["makespan_s"] / 3600, rel=1e-12)
        floor = run.summary["energy_floor_kwh"]
        assert isinstance(floor, float) and 0 < floor < run.summary["energy_common_kwh"]
    fig = energy_jct_plot([], floor_kwh=floor)
    assert list(labelled(fig, "energy floor")[0].get_xdata()) == [floor, floor]


@pytest.mark.parametrize(("fmt", "magic"), [("png", b"\x89PNG"), ("pdf", b"%PDF"), ("svg", b"<?xml")])
def test_every_format_is_written_and_the_same_figure_gives_the_same_bytes(
    tmp_path: Path, fmt: str, magic: bytes
) -> None:
    points = [EnergyJctPoint("fifo-max", 5.0, 3600.0, "fifo-max")]
    options = FigureOptions(fmt, 80)  # type: ignore[arg-type]
    first = save_figure(energy_jct_plot(points, floor_kwh=2.0), tmp_path / f"a.{fmt}", options)
    second = save_figure(energy_jct_plot(points, floor_kwh=2.0), tmp_path / f"b.{fmt}", options)
    assert first.read_bytes().startswith(magic)
    assert first.read_bytes() == second.read_bytes()  # no creation date in the file
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"a.{fmt}", f"b.{fmt}"]  # no temporary file left


def test_dpi_sets_the_png_resolution(tmp_path: Path) -> None:
    points = [EnergyJctPoint("fifo-max", 5.0, 3600.0, "fifo-max")]
    low = save_figure(energy_jct_plot(points), tmp_path / "low.png", FigureOptions("png", 100))
    high = save_figure(energy_jct_plot(points), tmp_path / "high.png", FigureOptions("png", 300))
    (w1, h1), (w3, h3) = png_size(low.read_bytes()), png_size(high.read_bytes())
    assert w3 == pytest.approx(3 * w1, rel=0.02) and h3 == pytest.approx(3 * h1, rel=0.02)


def test_bad_dpi_and_format_name_the_option() -> None:
    with pytest.raises(InputError) as info:
        check_figure_options(FigureOptions("jpg", 10))  # type: ignore[arg-type]
    assert [p.path for p in info.value.problems] == ["--plot-format", "--dpi"]
    check_figure_options(FigureOptions("pdf", 1200))


def test_each_policy_has_its_own_marker_and_line_style() -> None:
    styles = [POLICY_STYLES[name] for name in (*BASELINES, "wattplan")]
    assert len({s.marker for s in styles}) == len(styles)
    assert len({str(s.linestyle) for s in styles}) == len(styles)
    assert series_style("wattplan-delta-0.1") == POLICY_STYLES["wattplan"]
    spares = {series_style(f"run {k}", k).marker for k in range(4)}
    assert len(spares) == 4 and not spares & {s.marker for s in styles}


def test_coinciding_points_stay_visible() -> None:
    """fifo-max and eaco on the same point: different hollow shapes, the later one smaller (nested)."""
    same = [EnergyJctPoint(name, 5.0, 3600.0, name) for name in ("fifo-max", "eaco")]
    fig = energy_jct_plot(same)
    big, small = labelled(fig, "fifo-max")[0], labelled(fig, "eaco")[0]
    assert (big.get_marker(), small.get_marker()) == ("s", "D")
    assert big.get_markerfacecolor() == small.get_markerfacecolor() == "none"
    assert big.get_markersize() > small.get_markersize() and small.get_zorder() > big.get_zorder()
    assert "nest" in fig.axes[0].get_legend().get_title().get_text()


def test_coinciding_lines_stay_visible(drawn: Drawn) -> None:
    power = {**drawn.power, "eaco-copy": drawn.power["fifo-max"]}  # the same line twice
    jcts = {r.policy: ([row["jct_s"] for row in r.jobs], len(r.jobs)) for r in drawn.runs}
    jcts["eaco-copy"] = jcts["fifo-max"]
    for fig in (power_steps_plot(power), jct_cdf_series_plot(jcts)):
        lines = {str(line.get_label()): line for line in fig.axes[0].get_lines()}
        first, later = lines["fifo-max"], lines["eaco-copy"]
        assert first.get_linewidth() > later.get_linewidth() and later.get_zorder() > first.get_zorder()
        assert first.get_linestyle() != later.get_linestyle()


def test_frontier_plot_draws_floor_reference_and_distinct_baselines() -> None:
    rows = [
        {"label": "fifo-max", "policy": "fifo-max", "energy_kwh": 8.0, "avg_jct_s": 3600.0},
        {"label": "eaco", "policy": "eaco", "energy_kwh": 8.0, "avg_jct_s": 3600.0},
        {"label": "zeus", "policy": "zeus", "energy_kwh": 7.0, "avg_jct_s": 5400.0},
        {"label": "wattplan-progress", "policy": "wattplan", "knob": "progress", "energy_kwh": 7.5,
         "avg_jct_s": 3700.0, "on_front": 1},
        {"label": "wattplan-delta-0.1", "policy": "wattplan", "knob": "delta", "value": 0.1, "energy_kwh": 6.0,
         "avg_jct_s": 4000.0, "on_front": 1},
        {"label": "broken", "policy": "wattplan", "error": "RuntimeError: x"},
    ]  # fmt: skip
    fig = frontier_plot(rows, 4.0, reference={"energy_kwh": 8.0, "avg_jct_s": 3600.0})
    assert list(labelled(fig, "energy floor")[0].get_xdata()) == [4.0, 4.0]
    (ring,) = labelled(fig, REFERENCE_LABEL)
    assert (list(ring.get_xdata()), list(ring.get_ydata())) == ([8.0], [1.0])
    markers = {name: labelled(fig, name)[0].get_marker() for name in ("fifo-max", "eaco", "zeus")}
    assert markers == {"fifo-max": "s", "eaco": "D", "zeus": "^"}
    (front,) = labelled(fig, "wattplan front")
    assert list(front.get_xdata()) == [6.0, 7.5]


@pytest.mark.filterwarnings("ignore:No artists with labels")
@pytest.mark.parametrize(("fmt", "magic"), [("pdf", b"%PDF"), ("svg", b"<?xml")])
def test_bench_profile_is_written_in_the_format_of_its_suffix(tmp_path: Path, fmt: str, magic: bytes) -> None:
    from wattplan.planner.bench.report import profile_plot

    rows: list[dict[str, object]] = []  # the axes, labels and file, without runs
    profile_plot(rows, tmp_path / f"profile.{fmt}")  # type: ignore[arg-type]
    assert (tmp_path / f"profile.{fmt}").read_bytes().startswith(magic)
    assert [p.name for p in tmp_path.iterdir()] == [f"profile.{fmt}"]
