"""``wattplan cluster``: an emulated GPU cluster on this host (up, down, submit, report)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from wattplan.planner.cli.app import cluster_app, err, handles_errors, out
from wattplan.planner.cli.options_common import (
    EndSOpt,
    FormatOpt,
    GpusPerNodeOpt,
    MaxJobsOpt,
    StartSOpt,
    TraceArg,
    TraceFormat,
    VcOpt,
)
from wattplan.planner.console.terminal import shown
from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.problems import InputError, Problem

ClusterDirOpt = Annotated[Path, typer.Option("--dir", help="The emulated cluster's folder.")]


@cluster_app.command("up")
@handles_errors
def cluster_up(
    cluster_dir: ClusterDirOpt,
    gpus: Annotated[str, typer.Option(help="GPUs of each type, e.g. v100:32,p100:16 (whole nodes).")] = "v100:32",
    gpus_per_node: GpusPerNodeOpt = defaults.GPUS_PER_NODE,
    truth: Annotated[
        Path | None, typer.Option(help="Profile library the emulated GPUs run by (default: the shipped one).")
    ] = None,
    time_scale: Annotated[float, typer.Option(help="Emulated seconds per real second (> 0).")] = 60.0,
    restart_s: Annotated[
        float, typer.Option(help="Emulated seconds a (re)started job spends loading its checkpoint.")
    ] = defaults.RESTART_S,
) -> None:
    """Start munged, slurmctld, one slurmd per node, the GPU emulator, node agents and Prometheus (needs root).

    --dir must be new, empty, or a folder an earlier `cluster up` made (it holds .wattplan-cluster).
    """
    from wattplan.planner.cluster.up import cluster_up as up
    from wattplan.planner.profile_library.library import load_profile_library
    from wattplan.planner.rounds.cluster_spec import parse_cluster_spec

    try:
        spec = parse_cluster_spec(gpus, gpus_per_node)
    except InputError as e:  # the parser names plan's --cluster; here the option is --gpus
        raise InputError("--gpus", [Problem(p.code, "--gpus", p.message) for p in e.problems]) from None
    if not 0 < time_scale <= 10_000:
        raise InputError("--time-scale", [Problem("bad-option", "--time-scale", "must be in (0, 10000]")])
    manifest = up(
        cluster_dir,
        spec.gpus,
        gpus_per_node,
        load_profile_library(truth),
        truth,
        time_scale,
        restart_s,
        log=lambda m: err.print(shown(m)),
    )
    out.print(
        f"cluster up in [bold]{shown(cluster_dir)}[/]: {len(manifest['nodes'])} nodes, Prometheus "
        f"{shown(manifest['prometheus_url'])}, {time_scale:g} emulated s per real s"
    )


@cluster_app.command("down")
@handles_errors
def cluster_down(cluster_dir: ClusterDirOpt) -> None:
    """Stop exactly what `wattplan cluster up` started in --dir (its jobs, every user's, are cancelled first)."""
    from wattplan.planner.cluster.up import cluster_down as down

    down(cluster_dir, log=lambda m: out.print(shown(m)))


@cluster_app.command("submit")
@handles_errors
def cluster_submit(
    trace: TraceArg,
    cluster_dir: ClusterDirOpt,
    unmanaged: Annotated[
        bool, typer.Option(help="Submit as a user would, for Slurm's own scheduling (no hold, no opt-in comment).")
    ] = False,
    max_jobs: MaxJobsOpt = None,
    start_s: StartSOpt = None,
    end_s: EndSOpt = None,
    fmt: FormatOpt = TraceFormat.auto,
    vc: VcOpt = None,
    seed: Annotated[int, typer.Option(help="Seed of Philly job types.")] = 0,
    wait: Annotated[bool, typer.Option(help="Return once every job is submitted (default: at once).")] = False,
) -> None:
    """Submit a trace's jobs (the replay's selection) at their arrival times, on the emulated clock."""
    from wattplan.planner.cluster.submit import start_submitter, submissions
    from wattplan.planner.contracts.rules import RoundRules

    jobs, layout = submissions(cluster_dir, trace, fmt.value, vc, start_s, end_s, max_jobs, seed, RoundRules())
    pid = start_submitter(layout, jobs, managed=not unmanaged)
    kind = "unmanaged" if unmanaged else "managed (held, for wattplan agent)"
    out.print(f"submitting {len(jobs)} {kind} jobs over {jobs[-1].offset_s:.0f} emulated s (submitter pid {pid})")
    if wait:
        while not (layout.submit_dir / "done").exists():
            time.sleep(0.5)


@cluster_app.command("report")
@handles_errors
def cluster_report(
    cluster_dir: ClusterDirOpt,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the report as JSON here.")] = None,
) -> None:
    """Energy (from Prometheus), JCTs and per-job times of the jobs submitted to the emulated cluster."""
    import json as json_module

    from wattplan.planner.cluster.layout import ClusterLayout
    from wattplan.planner.cluster.report import cluster_report as report_of
    from wattplan.planner.contracts.jsonio import write_text_atomic

    layout = ClusterLayout(cluster_dir)
    report = report_of(layout, layout.read_manifest()["prometheus_url"])
    for w in report.get("warnings", []):
        err.print(f"[yellow]warning:[/] {shown(w)}")
    if json_path is not None:
        write_text_atomic(json_path, json_module.dumps(report, indent=1) + "\n")
    keys = ("energy_kwh", "avg_jct_s", "p95_jct_s", "jobs_total", "jobs_completed")
    out.print("  ".join(f"{k}={report.get(k)}" for k in keys))
