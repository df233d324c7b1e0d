"""The energy-JCT frontier of one trace: wattplan's knob swept, every baseline placed beside it.

:func:`frontier_points` turns one :class:`~planner.sim.replay.ReplaySpec` into the replays of a
frontier (:class:`FrontierPoint`), each with a unique, file-system-safe label:

==========================  ======================  =========================================
label                       knob                    replay
==========================  ======================  =========================================
``fifo-max``, ``zeus``, ..  ``baseline``            the base spec with that policy
``wattplan-progress``       ``progress``            wattplan, ``progress`` objective
``wattplan-delta-0.1``      ``delta``               wattplan, ``energy`` objective, delta 0.1
``wattplan-efficiency-..``  ``delta``, ...          the same with the base spec's ``efficiency`` objective
``wattplan-jct+5%``         ``max_jct_increase``    wattplan, runtime-bounded mode, x = 0.05
==========================  ======================  =========================================

Budgets, caps, noise and seed of the base spec are kept by every point (a frontier may run
under a cap); wattplan's planning request keeps no objective of its own, so the rules' objective
applies. :func:`replay_points` replays the points through :func:`planner.executor.run_tasks`
(one worker: here, one after another; more: a ``spawn`` process pool, a fresh interpreter per
worker, wattplan's solves fork and a forking process must not have run a solver first; or Ray
tasks, ``ray_address``), each by the :class:`PointEngine` it is given, and writes its files to
``out/runs/<label>/`` in this process, the summary with the point's spec as ``frontier_spec``
and the SHA-256 of every input file the spec names as ``frontier_inputs`` (:func:`input_digests`);
a point whose ``summary.json`` holds the same spec and the same input digests is read back instead
of replayed, so an interrupted frontier resumes. A saved point whose spec or any input file
(trace, profiles, truth, carbon or price signal) changed since is stale: it is replayed, and
counted (``FrontierResult.stale``). A replay that fails becomes a row with its ``error`` and the
sweep goes on; :func:`raise_failed` then raises :class:`ReplayFailed` naming every failed point
(never a row without numbers), the others saved, so that the same sweep run again replays only
the failed ones.

Every row then gets the energy floor and the comparison with the reference schedule of
:func:`planner.sim.metrics.with_reference`: ``captured_share = (E_ref - E) / (E_ref - E_floor)``
and ``jct_increase = J / J_ref - 1`` (:func:`compared_rows`). A wattplan row is ``on_front``
when all its jobs completed and no other such wattplan row beats it on both energy and average
JCT (:func:`planner.sim.metrics.pareto_front`). :func:`write_frontier` writes ``frontier.csv``
(:data:`FRONTIER_COLUMNS`), ``frontier.json`` (every row, whole) and the figure ``frontier.png``
(or ``.pdf``, ``.svg``: :class:`~planner.sim.plots.FigureOptions`; :func:`frontier_plot`: the
floor, the reference and, in the title, the cap) in ``out``.

The replay of each point, the reference (Slurm alone) and the floor (the powered one) are the
simulated Slurm's, a higher layer (:mod:`planner.control.frontier`): its points carry the
simulated Slurm's ``setup`` and its :class:`PointEngine` says how each one is replayed and saved.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from wattplan.planner.contracts.domain import Objective
from wattplan.planner.contracts.floor import EnergyFloor
from wattplan.planner.contracts.jsonio import read_json, write_json_atomic, write_text_atomic
from wattplan.planner.contracts.problems import InputError, Problem, RunFailed
from wattplan.planner.executor import run_tasks
from wattplan.planner.files.digests import file_sha256
from wattplan.planner.sim.metrics import pareto_front, with_reference
from wattplan.planner.sim.output import comparison_csv
from wattplan.planner.sim.plots import (
    DEFAULT_FIGURES,
    FLOOR_LABEL,
    MARKERS_NOTE,
    REFERENCE_LABEL,
    EnergyJctPoint,
    FigureOptions,
    finish_axes,
    mark_floor,
    mark_reference,
    marker_size,
    new_figure,
    save_figure,
    series_style,
)
from wattplan.planner.sim.policies import POLICY_NAMES, policy_names
from wattplan.planner.sim.replay import ReplaySpec, check_spec

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Knob = Literal["baseline", "progress", "delta", "max_jct_increase"]
ProgressFn = Callable[["FrontierPoint", dict[str, Any]], None]

WATTPLAN = "wattplan"
REFERENCE_POLICY = "fifo-max"
BASELINE_POLICIES = tuple(p for p in POLICY_NAMES if p != WATTPLAN)
"""Policies a frontier may place beside wattplan (``all`` names every one of them)."""

RUNS_DIR = "runs"
SUMMARY_FILE = "summary.json"

FRONTIER_COLUMNS = (
    "label",
    "policy",
    "knob",
    "value",
    "energy_kwh",
    "energy_own_kwh",
    "avg_jct_s",
    "p95_jct_s",
    "jobs_completed",
    "jobs_total",
    "stop_reason",
    "captured_share",
    "jct_increase",
    "energy_floor_kwh",
    "on_front",
    "error",
)
"""Columns of ``frontier.csv``, one row per point (``on_front``: 1 or 0; ``error``: empty unless it failed).
``energy_kwh`` is over the sweep's common window and ``energy_own_kwh`` over the run's own
(:mod:`planner.control.common_window`)."""


@dataclass(frozen=True)
class FrontierPoint:
    """One replay of a frontier: a unique file-system-safe ``label``, the knob it sets and the spec it runs.

    ``value`` is the knob's value: ``delta``, or the JCT increase as a fraction; None for a
    baseline and for the ``progress`` point. ``setup`` is the simulated cluster's own settings, a dataclass compared
    on resume with the spec (:class:`~planner.control.slurm_replay.SimulatedCluster`).
    """

    label: str
    policy: str
    knob: Knob
    value: float | None
    spec: ReplaySpec
    setup: Any = None


@dataclass(frozen=True)
class FrontierResult:
    """What :func:`frontier` computed: every row (point order), the floor, the reference and the files written."""

    rows: list[dict[str, Any]]
    floor: EnergyFloor
    reference: dict[str, Any]
    paths: list[Path]
    stale: list[str]
    """Labels of saved points not reused: their spec or an input file's content changed since."""
    dropped: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The trace jobs no replay ran (no profile on the cluster's GPU types), by job type; also in ``dropped.csv``."""
    cluster_types: tuple[str, ...] = ()
    """The cluster's GPU types."""


class ReplayFailed(RunFailed):
    """Replays of a frontier failed: ``failed`` holds each one's label and error (``Type: message``).

    The replays that finished are saved under ``runs`` (``out/runs/<label>/``): the same sweep run again reuses
    them and replays only the failed ones. ``runs`` None: they were in a temporary folder, removed since.
    """

    def __init__(self, failed: Sequence[tuple[str, str]], total: int, runs: Path | None) -> None:
        self.failed = list(failed)
        self.total = total
        self.runs = runs
        lines = "".join(f"\n  {label}: {error}" for label, error in self.failed)
        if runs is None:
            kept = "give an output folder to keep the others, so that a second run replays only the failed ones"
        else:
            kept = f"the others are saved in {runs}: the same sweep run again replays only the failed ones"
        super().__init__(f"{len(self.failed)} of {total} frontier replays failed ({kept}):{lines}")

    def __reduce__(self) -> tuple[type[ReplayFailed], tuple[list[tuple[str, str]], int, Path | None]]:
        return (ReplayFailed, (self.failed, self.total, self.runs))


KNOB_OPTIONS: dict[Knob, dict[str, str]] = {"delta": {"--delta": "--deltas"}}
"""The option a knob point's value came from, where it is not the spec's own: a bad ``delta`` names ``--deltas``."""


def _short(value: float, scale: float = 1.0) -> str:
    """``value * scale`` in the fewest significant digits that read back to ``value``."""
    for digits in range(6, 18):
        text = f"{value * scale:.{digits}g}"
        if float(text) / scale == value:
            return text
    return repr(value * scale)


def _unique(values: Sequence[float]) -> list[float]:
    """``values`` as floats without repeats, first occurrence first."""
    out: list[float] = []
    for v in values:
        if float(v) not in out:
            out.append(float(v))
    return out


def _baselines(names: Sequence[str], engine_baselines: Sequence[str] = ()) -> list[str]:
    """Baseline policy names in the given order, ``all`` meaning every baseline; bad names raise.

    ``engine_baselines``: the simulated Slurm's own baselines beside the registered policies (Slurm
    alone, ...), first in ``all``.
    """
    choices = [*engine_baselines, *(p for p in policy_names() if p != WATTPLAN)]
    out: list[str] = []
    bad: list[Problem] = []
    for k, name in enumerate(names):
        for n in (*engine_baselines, *BASELINE_POLICIES) if name == "all" else (name,):
            if n == WATTPLAN or n not in choices:
                why = "wattplan is the swept policy, not a baseline; " if n == WATTPLAN else ""
                bad.append(
                    Problem("unknown-policy", f"--baselines[{k}]", f"{why}{n!r}; choose from all, {', '.join(choices)}")
                )
            elif n not in out:
                out.append(n)
    if bad:
        raise InputError("--baselines", bad)
    return out


def knob_objective(base: ReplaySpec) -> Objective:
    """The objective the knob points plan with: the base's ``efficiency``, else ``energy``."""
    return "efficiency" if base.rules.objective == "efficiency" else "energy"


def frontier_points(
    base: ReplaySpec,
    deltas: Sequence[float],
    jct_increases: Sequence[float],
    baselines: Sequence[str],
    engine_baselines: Sequence[str] = (),
) -> list[FrontierPoint]:
    """The replays of a frontier: each baseline, wattplan ``progress``, one per ``delta``, one per JCT increase.

    Every point keeps the base spec's budget, cap, noise, seed and round rules, and replays one
    policy (``spec.policies``); repeated values are swept once. ``engine_baselines`` are Slurm's baselines
    beside the registered policies (:func:`_baselines`). Unknown baseline names raise
    :class:`InputError`; bad values are caught by :func:`replay_points` (:func:`check_spec`).
    """
    wp_options = replace(base.policy_options, request=replace(base.policy_options.request, objective=None))
    wp = replace(base, policies=(WATTPLAN,), policy_options=wp_options, max_jct_increase=None)
    points = [
        FrontierPoint(name, name, "baseline", None, replace(base, policies=(name,), max_jct_increase=None))
        for name in _baselines(baselines, engine_baselines)
    ]
    points.append(
        FrontierPoint(
            f"{WATTPLAN}-progress",
            WATTPLAN,
            "progress",
            None,
            replace(wp, rules=replace(base.rules, objective="progress")),
        )
    )
    objective = knob_objective(base)
    prefix = WATTPLAN if objective == "energy" else f"{WATTPLAN}-{objective}"
    for d in _unique(deltas):
        spec = replace(wp, rules=replace(base.rules, objective=objective, delta=d))
        points.append(FrontierPoint(f"{prefix}-delta-{_short(d)}", WATTPLAN, "delta", d, spec))
    for x in _unique(jct_increases):
        spec = replace(wp, rules=replace(base.rules, objective=objective), max_jct_increase=x)
        points.append(FrontierPoint(f"{prefix}-jct+{_short(x, 100)}%", WATTPLAN, "max_jct_increase", x, spec))
    return points


def spec_json(spec: ReplaySpec) -> dict[str, Any]:
    """``spec`` as plain JSON values (paths as strings, tuples as lists): what a resumed run is compared by."""
    doc: dict[str, Any] = json.loads(json.dumps(asdict(spec), default=str))
    return doc


def point_spec_json(point: FrontierPoint) -> dict[str, Any]:
    """What a saved point is compared by: :func:`spec_json` of its spec and, on an engine with one, its ``setup``."""
    doc = spec_json(point.spec)
    if point.setup is not None:
        doc["engine_setup"] = json.loads(json.dumps(asdict(point.setup), default=str))
    return doc


def path_sha256(path: Path) -> str:
    """What identifies the content of an input ``path``: a file's SHA-256, a folder's, or ``missing``.

    A folder's digest is the SHA-256 of every file below it (relative name and content hash,
    sorted by name).
    """
    path = Path(path)
    if path.is_file():
        return file_sha256(path)
    if path.is_dir():
        digest = hashlib.sha256()
        for p in sorted(q for q in path.rglob("*") if q.is_file()):
            digest.update(f"{p.relative_to(path).as_posix()}\0{file_sha256(p)}\n".encode())
        return "dir:" + digest.hexdigest()
    return "missing"


def _spec_paths(value: Any, where: str) -> Iterator[tuple[str, Path]]:
    """Every ``Path`` held by ``value`` (a spec, recursively through dataclasses), with its dotted field name."""
    if isinstance(value, Path):
        yield where, value
    elif is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            yield from _spec_paths(getattr(value, f.name), f"{where}.{f.name}" if where else f.name)
    elif isinstance(value, (list, tuple)):
        for k, item in enumerate(value):
            yield from _spec_paths(item, f"{where}[{k}]")


def input_digests(spec: ReplaySpec, cache: dict[Path, str] | None = None) -> dict[str, str]:
    """The SHA-256 of every input file ``spec`` names (trace, profiles, truth, signals), by field name.

    ``cache`` (path to digest) lets a frontier hash each file once for all its points.
    """
    cache = {} if cache is None else cache
    out: dict[str, str] = {}
    for name, path in _spec_paths(spec, ""):
        if path not in cache:
            cache[path] = path_sha256(path)
        out[name] = cache[path]
    return out


def point_fields(point: FrontierPoint) -> dict[str, Any]:
    """The fields every row of ``point`` has, whatever its engine: ``label``, ``knob`` and ``value``."""
    return {"label": point.label, "knob": point.knob, "value": point.value}


PointReplayFn = Callable[[FrontierPoint], tuple[dict[str, Any], Any]]
"""Replays one point: its row (:func:`point_fields`, the summary, ``frontier_spec``) and what its files are made of."""


@dataclass(frozen=True)
class PointEngine:
    """How an engine replays and saves the points of a frontier.

    ``replay``: a module-level function (it pickles into a worker) replaying one point. ``write(payload, row,
    folder)``: the point's files in ``folder``, ``row`` as its ``summary.json``, in the parent. ``files``: the names
    ``write`` writes, removed before a point is replayed.
    """

    replay: PointReplayFn
    write: Callable[[Any, dict[str, Any], Path], None]
    files: tuple[str, ...]


def _worker(point: FrontierPoint, replay: PointReplayFn) -> tuple[dict[str, Any], Any]:
    """``replay`` in a worker (module level, so it pickles); a failure is its row.

    A failure is :func:`error_row` and no payload. The error travels as text: an exception whose arguments do not
    rebuild it (such as :class:`InputError`) cannot be unpickled by the parent.
    """
    try:
        return replay(point)
    except Exception as exc:  # any failure of this replay is this point's row
        return error_row(point, exc), None


def _stored_row(point: FrontierPoint, folder: Path, inputs: dict[str, str]) -> dict[str, Any] | None:
    """The saved summary of ``point`` in ``folder`` if it was made from the same spec and inputs, else None.

    ``inputs`` is :func:`input_digests` of the point's spec now: a summary saved before an input
    file changed (or without digests) is not this point's result.
    """
    path = folder / SUMMARY_FILE
    if not path.is_file():
        return None
    try:
        doc = read_json(path)
    except InputError:
        return None
    if not isinstance(doc, dict) or doc.get("frontier_spec") != point_spec_json(point):
        return None
    if doc.get("frontier_inputs") != inputs:
        return None
    return {**doc, **point_fields(point)}


def error_row(point: FrontierPoint, exc: BaseException) -> dict[str, Any]:
    """The row of a point whose replay failed: its policy and the error (``Type: message``)."""
    message = str(exc).strip() or "(no message)"
    return {
        **point_fields(point),
        "policy": point.policy,
        "error": f"{type(exc).__name__}: {message}",
        "frontier_spec": point_spec_json(point),
    }


def _replay(
    points: Sequence[FrontierPoint],
    runs: Path,
    workers: int,
    rows: dict[str, dict[str, Any]],
    progress: ProgressFn | None,
    inputs: dict[str, dict[str, str]],
    ray_address: str | None,
    engine: PointEngine,
) -> None:
    """Replay ``points`` with :func:`planner.executor.run_tasks`; write each one's files under ``runs`` here.

    A replay that raised, or whose worker died (``BrokenProcessPool``, charged by the executor
    to the replay that caused it), or whose files cannot be written is :func:`error_row`.
    ``inputs[label]`` (the point's :func:`input_digests`, taken before it ran) is saved with it.
    """
    tasks = [(p, engine.replay) for p in points]
    for index, outcome in run_tasks(_worker, tasks, workers=workers, ray_address=ray_address):
        point = points[index]
        if outcome.value is None:
            row = error_row(point, outcome.error or RuntimeError("the replay returned nothing"))
        else:
            row, result = outcome.value
            row = {**row, "frontier_inputs": inputs[point.label]}
            if result is not None:
                try:
                    engine.write(result, row, runs / point.label)
                except Exception as exc:  # an unwritable folder is this point's failure
                    row = error_row(point, exc)
        rows[point.label] = row
        if progress is not None:
            progress(point, row)


def replay_points(
    points: Sequence[FrontierPoint],
    out: Path,
    workers: int,
    engine: PointEngine,
    progress: ProgressFn | None = None,
    ray_address: str | None = None,
    stale: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Replay every point (at most ``workers`` at once, :func:`_replay`); return the rows in point order.

    Each row is the replay's summary plus ``label``, ``knob``, ``value`` and ``frontier_spec``,
    or, for a failed replay, those and ``error``. Points whose ``out/runs/<label>/summary.json``
    holds the same spec and the same :func:`input_digests` are read back, not replayed; the
    labels of saved points that do not (stale) are appended to ``stale`` when given. Every spec
    is checked first: bad options or duplicate labels raise :class:`InputError` before anything
    runs. ``progress(point, row)`` is called in this process as each point finishes (reused
    ones first). When a worker dies, the replays its pool lost are retried one at a time, each
    in a pool of its own, so the death is charged to the replay that caused it. ``ray_address``
    runs the replays as Ray tasks (:mod:`planner.executor`; the trace and signal files must be
    readable on every node). ``engine``: how each point is replayed and saved.
    """
    if workers < 1:
        raise InputError("--workers", [Problem("bad-option", "--workers", f"must be >= 1, got {workers}")])
    labels = [p.label for p in points]
    if len(set(labels)) != len(labels):
        dup = sorted({x for x in labels if labels.count(x) > 1})
        raise InputError("frontier", [Problem("duplicate-label", "(points)", f"labels repeat: {', '.join(dup)}")])
    for point in points:
        check_spec(point.spec, KNOB_OPTIONS.get(point.knob))
    runs = Path(out) / RUNS_DIR
    rows: dict[str, dict[str, Any]] = {}
    todo: list[FrontierPoint] = []
    cache: dict[Path, str] = {}
    inputs = {p.label: input_digests(p.spec, cache) for p in points}
    for point in points:
        stored = _stored_row(point, runs / point.label, inputs[point.label])
        if stored is None:
            if stale is not None and (runs / point.label / SUMMARY_FILE).is_file():
                stale.append(point.label)
            todo.append(point)
            continue
        rows[point.label] = stored
        if progress is not None:
            progress(point, stored)
    for point in todo:  # a failed replay must not leave an older run's files that look like its own
        for name in dict.fromkeys((SUMMARY_FILE, *engine.files)):
            (runs / point.label / name).unlink(missing_ok=True)
    if todo:
        _replay(todo, runs, workers, rows, progress, inputs, ray_address, engine)
    return [rows[p.label] for p in points]


def mark_front(rows: Sequence[dict[str, Any]]) -> None:
    """Set ``on_front`` on every row: 1 for the Pareto front of wattplan's completed replays, else 0."""
    eligible = [
        r
        for r in rows
        if r.get("policy") == WATTPLAN
        and not r.get("error")
        and r.get("avg_jct_s") is not None
        and r.get("jobs_unfinished", 1) == 0
    ]
    front = set(pareto_front([(r["energy_kwh"], r["avg_jct_s"]) for r in eligible]))
    ids = {id(r) for r in eligible}
    for r in rows:
        r["on_front"] = int(id(r) in ids and (r["energy_kwh"], r["avg_jct_s"]) in front)


def knob_text(row: dict[str, Any]) -> str:
    """A short label of a wattplan row's knob for the plot: ``progress``, ``δ=0.1``, ``+5%``."""
    if row.get("knob") == "delta":
        return f"δ={_short(row['value'])}"
    if row.get("knob") == "max_jct_increase":
        return f"+{_short(row['value'], 100)}%"
    return str(row.get("knob") or row.get("label"))


def frontier_plot(
    rows: Sequence[dict[str, Any]],
    floor_kwh: float | None,
    path: Path | None = None,
    title: str = "",
    *,
    reference: Mapping[str, Any] | None = None,
    options: FigureOptions = DEFAULT_FIGURES,
    labels: tuple[str, str] = (REFERENCE_LABEL, FLOOR_LABEL),
) -> Figure:
    """Energy (kWh) against average JCT (h) of every row that has both; the figure, saved to ``path`` if given.

    wattplan rows are filled dots, each annotated with its knob value (rows on the same point
    share one annotation), the ``on_front`` ones joined by a line; each baseline is a hollow
    marker of its policy's shape (:func:`planner.sim.plots.series_style`), larger for those
    drawn first, so coinciding baselines nest; the energy floor is a dashed vertical line with
    the unreachable side shaded (:func:`~planner.sim.plots.mark_floor`) and the ``reference``
    summary (``fifo-max`` without budget: energy, average JCT) is ringed
    (:func:`~planner.sim.plots.mark_reference`). ``labels``: the legend's names of the reference and of the floor
    (the reference is Slurm alone, the floor the powered one).
    """
    fig, ax = new_figure(7, 4.8)
    drawn = [
        r for r in rows if not r.get("error") and r.get("energy_kwh") is not None and r.get("avg_jct_s") is not None
    ]
    ours = [r for r in drawn if r.get("policy") == WATTPLAN]
    style = series_style(WATTPLAN)
    if ours:
        ax.plot(
            [r["energy_kwh"] for r in ours],
            [r["avg_jct_s"] / 3600 for r in ours],
            marker=style.marker,
            color=style.color,
            linestyle="none",
            label=WATTPLAN,
            zorder=4,
        )
        front = sorted((r["energy_kwh"], r["avg_jct_s"] / 3600) for r in ours if r.get("on_front"))
        if len(front) > 1:
            ax.plot(
                [e for e, _ in front],
                [j for _, j in front],
                color=style.color,
                linestyle=style.linestyle,
                linewidth=1.0,
                label="wattplan front",
                zorder=3,
            )
        notes: dict[tuple[float, float], list[str]] = {}
        for r in ours:  # replays that land on the same point share one annotation
            notes.setdefault((r["energy_kwh"], r["avg_jct_s"] / 3600), []).append(knob_text(r))
        for xy, texts in notes.items():
            ax.annotate(", ".join(texts), xy, textcoords="offset points", xytext=(4, 4), fontsize=7)
    for k, r in enumerate(r for r in drawn if r.get("policy") != WATTPLAN):
        label = str(r.get("label"))
        base = series_style(str(r.get("policy") or label), k)
        ax.plot(
            [r["energy_kwh"]],
            [r["avg_jct_s"] / 3600],
            marker=base.marker,
            markersize=marker_size(k),
            markerfacecolor="none",
            markeredgecolor=base.color,
            markeredgewidth=1.6,
            linestyle="none",
            label=label,
            zorder=5 + k,
        )
    reference_label, floor_label = labels
    if reference is not None and reference.get("energy_kwh") is not None and reference.get("avg_jct_s") is not None:
        policy = str(reference.get("policy") or REFERENCE_POLICY)
        ref = EnergyJctPoint(reference_label, reference["energy_kwh"], reference["avg_jct_s"], policy)
        _labelled(ax, lambda: mark_reference(ax, ref), reference_label)
    if floor_kwh is not None:
        _labelled(ax, lambda: mark_floor(ax, floor_kwh), f"{floor_label} ({floor_kwh:.4g} kWh)")
    finish_axes(ax, "total energy (kWh)", "average JCT (h)", title or "Energy-JCT frontier", MARKERS_NOTE)
    if path is not None:
        save_figure(fig, path, options)
    return fig


def _labelled(ax: Axes, draw: Callable[[], None], label: str) -> None:
    """``draw()`` (a mark of :mod:`planner.sim.plots`) with every line it adds to ``ax`` named ``label``."""
    before = len(ax.lines)
    draw()
    for line in ax.lines[before:]:
        line.set_label(label)


def raise_failed(rows: Sequence[dict[str, Any]], out: Path) -> None:
    """:class:`ReplayFailed` naming every row with an ``error``, if any (the others are saved in ``out/runs``)."""
    if failed := [(str(r["label"]), str(r["error"])) for r in rows if r.get("error")]:
        raise ReplayFailed(failed, len(rows), Path(out) / RUNS_DIR)


def compared_rows(
    rows: Sequence[dict[str, Any]], reference: dict[str, Any], floor: EnergyFloor
) -> list[dict[str, Any]]:
    """Every row with the floor and the comparison with ``reference``, and ``on_front`` (:func:`mark_front`).

    :func:`planner.sim.metrics.with_reference`: ``captured_share = (E_ref - E) / (E_ref - E_floor)`` and
    ``jct_increase = J / J_ref - 1``; ``energy_floor`` holds the floor's note and its paired step share.
    """
    floor_kwh = floor.energy_kwh
    floor_info = {"note": floor.note, "paired_step_share": floor.paired_step_share}
    full = [
        {**r, "energy_floor_kwh": floor_kwh} if r.get("error") else with_reference(r, reference, floor_kwh)
        for r in rows
    ]
    for r in full:
        r["energy_floor"] = floor_info
    mark_front(full)
    return full


def frontier_title(base: ReplaySpec, engine: str = "") -> str:
    """The figure's title: the trace, the cluster, ``engine`` when given and the cap, if any."""
    title = f"Energy-JCT frontier: {Path(base.trace).name} on {base.cluster}"
    if engine:
        title += f", {engine}"
    if base.power_cap_w is not None:
        title += f", cap {base.power_cap_w / 1000:g} kW"
    return title


@dataclass(frozen=True)
class FrontierFigure:
    """What ``frontier.png`` says beside the rows: its title, the reference summary and how both marks are named."""

    title: str
    reference: Mapping[str, Any]
    reference_label: str = REFERENCE_LABEL
    floor_label: str = FLOOR_LABEL


def write_frontier(
    out: Path,
    rows: Sequence[dict[str, Any]],
    figure: FrontierFigure,
    floor: EnergyFloor,
    figures: FigureOptions | None,
) -> list[Path]:
    """``frontier.csv`` (:data:`FRONTIER_COLUMNS`), ``frontier.json`` and, unless ``figures`` is None, the figure.

    The figure is :func:`frontier_plot` of ``rows`` with the floor and ``figure``'s reference and labels. Returns
    the paths written.
    """
    csv_path, json_path = out / "frontier.csv", out / "frontier.json"
    write_text_atomic(csv_path, comparison_csv(rows, FRONTIER_COLUMNS))
    write_json_atomic(json_path, list(rows))
    paths = [csv_path, json_path]
    if figures is not None:
        plot_path = figures.path(out, "frontier")
        frontier_plot(
            rows,
            floor.energy_kwh,
            plot_path,
            figure.title,
            reference=figure.reference,
            options=figures,
            labels=(figure.reference_label, figure.floor_label),
        )
        paths.append(plot_path)
    return paths


__all__ = [
    "FRONTIER_COLUMNS",
    "FrontierFigure",
    "FrontierPoint",
    "FrontierResult",
    "PointEngine",
    "ReplayFailed",
    "compared_rows",
    "frontier_plot",
    "frontier_points",
    "frontier_title",
    "input_digests",
    "point_fields",
    "point_spec_json",
    "raise_failed",
    "replay_points",
    "write_frontier",
]
