"""``wattplan cluster``: an emulated GPU cluster on this host (up, down, submit, report).

The options of ``up``, ``submit`` and ``report`` are the records of :mod:`planner.cluster.options`, generated here
(``planner.cli.faces``); ``--dir`` and the trace are the commands' own.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from wattplan.planner.cli.app import cluster_app, err, handles_errors, out
from wattplan.planner.cli.faces import options_of, record_values
from wattplan.planner.cli.options_common import TraceArg
from wattplan.planner.cluster.options import ReportOptions, SubmitOptions, UpOptions
from wattplan.planner.console.terminal import shown
from wattplan.planner.contracts.problems import InputError, Problem

ClusterDirOpt = Annotated[Path, typer.Option("--dir", help="The emulated cluster's folder.")]
"""``--dir``, every ``cluster`` command's own (it has no default, so no record holds it)."""


@cluster_app.command("up")
@handles_errors
@options_of(UpOptions)
def cluster_up(cluster_dir: ClusterDirOpt, **given: Any) -> None:
    """Start munged, slurmctld, one slurmd per node, the GPU emulator, node agents and Prometheus (needs root).

    --dir must be new, empty, or a folder an earlier `cluster up` made (it holds .wattplan-cluster).
    """
    from wattplan.planner.cluster.up import cluster_up as up
    from wattplan.planner.profile_library.library import load_profile_library

    opts = UpOptions.checked(record_values(UpOptions, given))
    gpus = opts.gpu_counts()
    library = load_profile_library(opts.truth)
    manifest = up(
        cluster_dir,
        gpus,
        opts.gpus_per_node,
        library,
        opts.truth,
        opts.time_scale,
        opts.restart_s,
        log=lambda m: err.print(shown(m)),
        power_save=opts.power_save,
        suspend_s=opts.suspend_s,
        resume_s=opts.resume_s,
        agent_metrics_port=opts.agent_metrics_port,
        slurm_rootfs=opts.slurm_root,
    )
    saving = (
        f"; idle nodes power down after {opts.suspend_s:g} emulated s and boot in {opts.resume_s:g}"
        if opts.power_save
        else ""
    )
    out.print(
        f"cluster up in [bold]{shown(cluster_dir)}[/]: {len(manifest['nodes'])} nodes, Prometheus "
        f"{shown(manifest['prometheus_url'])}, {opts.time_scale:g} emulated s per real s{saving}"
    )
    if manifest.get("slurm_bin"):
        out.print(
            f"Slurm from {shown(manifest['slurm_root'])}: its commands are "
            f"[bold]export PATH={shown(manifest['slurm_bin'])}:$PATH[/] "
            "(wattplan agent --cluster uses them by itself)"
        )


@cluster_app.command("down")
@handles_errors
def cluster_down(cluster_dir: ClusterDirOpt) -> None:
    """Stop exactly what `wattplan cluster up` started in --dir (its jobs, every user's, are cancelled first)."""
    from wattplan.planner.cluster.up import cluster_down as down

    down(cluster_dir, log=lambda m: out.print(shown(m)))


@cluster_app.command("submit")
@handles_errors
@options_of(SubmitOptions)
def cluster_submit(trace: TraceArg, cluster_dir: ClusterDirOpt, **given: Any) -> None:
    """Submit a trace's jobs (the replay's selection) at their arrival times, on the emulated clock."""
    from wattplan.planner.cluster.submit import maxq_table, start_submitter, submissions

    opts = SubmitOptions.checked(record_values(SubmitOptions, given))
    jobs, layout = submissions(cluster_dir, trace, opts)
    prolog = maxq_table(layout) if opts.maxq else None
    pid = start_submitter(layout, jobs, managed=not opts.unmanaged, prolog=prolog, first_at_s=opts.first_at_s)
    kind = "unmanaged" if opts.unmanaged else "managed (held, for wattplan agent)"
    if prolog is not None:
        kind += f" at MaxQ's power limits ({len(prolog.by_type)} job types in the prolog's table)"
    out.print(f"submitting {len(jobs)} {kind} jobs over {jobs[-1].offset_s:.0f} emulated s (submitter pid {pid})")
    if opts.wait:
        while not (layout.submit_dir / "done").exists():
            time.sleep(0.5)


@cluster_app.command("report")
@handles_errors
@options_of(ReportOptions)
def cluster_report(cluster_dir: ClusterDirOpt, **given: Any) -> None:
    """Energy (from Prometheus), JCTs and per-job times of the jobs submitted to the emulated cluster."""
    import json as json_module

    from wattplan.planner.cluster.layout import ClusterLayout
    from wattplan.planner.cluster.report import cluster_report as report_of
    from wattplan.planner.contracts.jsonio import read_json, write_text_atomic

    opts = ReportOptions.checked(record_values(ReportOptions, given))
    other = None if opts.against is None else read_json(opts.against)  # a bad file is named before any work
    if other is not None and not isinstance(other, dict):
        raise InputError(str(opts.against), [Problem("bad-report", str(opts.against), "is not a cluster report")])
    layout = ClusterLayout(cluster_dir)
    report = report_of(layout, layout.read_manifest()["prometheus_url"])
    for w in report.get("warnings", []):
        err.print(f"[yellow]warning:[/] {shown(w)}")
    if opts.json_path is not None:
        write_text_atomic(opts.json_path, json_module.dumps(report, indent=1) + "\n")
    from rich.table import Table

    from wattplan.planner.cluster.report_table import job_headings, job_rows, summary_rows

    summary = Table(title=f"wattplan cluster report: {cluster_dir}", title_justify="left")
    for heading in ("figure", "this run", *(("other run", "this / other") if other is not None else ())):
        summary.add_column(heading, justify="left" if heading == "figure" else "right")
    for row in summary_rows(report, other):
        summary.add_row(*row)
    out.print(summary)
    if opts.jobs and report.get("jobs"):
        per_job = Table(title="jobs", title_justify="left")
        for heading in job_headings():
            per_job.add_column(heading, justify="right" if "[" in heading or heading == "GPUs" else "left")
        for row in job_rows(report):
            per_job.add_row(*row)
        out.print(per_job)
