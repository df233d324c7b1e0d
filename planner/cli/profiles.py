"""``wattplan profiles``: profile libraries built, fitted, fed measurements, checked, bent into a truth, listed."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from wattplan.planner.cli.app import handles_errors, out, profiles_app
from wattplan.planner.cli.options_common import ProfilesOpt
from wattplan.planner.console.terminal import shown
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.files.paths import refuse_overwriting_inputs


@profiles_app.command("build")
@handles_errors
def profiles_build(
    sources: Annotated[
        Path | None, typer.Option(help="Folder with gavel/ and zeus/ source files (default: the shipped ones).")
    ] = None,
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Profile library to write.")] = Path("profiles.json"),
) -> None:
    """Build V100 and P100 profiles (exclusive and co-located) from Gavel throughputs and Zeus power curves."""
    from wattplan.planner.files.resources import source_dir
    from wattplan.planner.profile_library.build import build_profile_library, write_profile_library

    folder = sources or source_dir()
    refuse_overwriting_inputs({"--out": out_path}, [folder, *(folder.rglob("*") if folder.is_dir() else [])])
    lib = build_profile_library(folder)
    write_profile_library(lib, out_path)
    out.print(
        f"wrote [bold]{shown(out_path)}[/]: {len(lib['profiles'])} profiles, {len(lib['pairs'])} pair entries, "
        f"GPU types {shown(', '.join(g['name'] for g in lib['gpu_types']))}"
    )


@profiles_app.command("fit")
@handles_errors
def profiles_fit(
    library: Annotated[
        Path | None, typer.Argument(help="Prior library (default: the shipped one).", show_default=False)
    ] = None,
    measurements: Annotated[
        list[Path] | None,
        typer.Option("--measurements", "-m", help="Measurements file or library with measurements (repeatable)."),
    ] = None,
    repair: Annotated[
        bool, typer.Option("--repair/--no-repair", help="Repair the prior's sanity findings (else only flag them).")
    ] = True,
    out_path: Annotated[Path | None, typer.Option("--out", "-o", help="Fitted library to write.")] = None,
    sanity_only: Annotated[
        bool, typer.Option("--sanity-only", help="Print the library's sanity findings and write nothing.")
    ] = False,
) -> None:
    """Fit the full profile table from measured points and a prior library; every entry gets a basis."""
    from wattplan.planner.files.resources import profile_library
    from wattplan.planner.profiling import fit_output as show
    from wattplan.planner.profiling.fit import fit_files, sanity_file, write_fitted

    source = library or profile_library()
    if sanity_only:
        out.print(show.findings_table(sanity_file(source), f"sanity findings: {shown(source)}"))
        return
    if out_path is None:
        raise InputError("options", [Problem("bad-option", "--out", "is required unless --sanity-only")])
    refuse_overwriting_inputs({"--out": out_path}, [source, *(measurements or [])])
    result = fit_files(source, measurements or [], repair)
    write_fitted(result, out_path)
    for table in show.fit_tables(result):
        out.print(table)
    counts = f"{len(result.doc['profiles'])} profiles, {len(result.doc['pairs'])} pairs"
    out.print(f"wrote [bold]{shown(out_path)}[/]: {counts}")


class IngestFormat(StrEnum):
    """Measurement file formats of ``profiles ingest``: ``auto`` decides by each file's header."""

    auto = "auto"
    nvidia_smi = "nvidia-smi"
    zeus_windows = "zeus-windows"
    zeus_summary = "zeus-summary"


@profiles_app.command("ingest")
@handles_errors
def profiles_ingest(
    files: Annotated[list[Path], typer.Argument(help="nvidia-smi query logs, Zeus profile windows or summaries.")],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Library (or measurements file) to write.")],
    fmt: Annotated[IngestFormat, typer.Option("--format", help="File format.")] = IngestFormat.auto,
    job_side: Annotated[
        list[Path] | None,
        typer.Option(
            help="JSON of the runs in the nvidia-smi logs: job type, GPUs, window, steps. One describes every log; "
            "repeat it to pair by order (the k-th --job-side with the k-th log; the counts must match)."
        ),
    ] = None,
    job_type: Annotated[str | None, typer.Option(help="Job type of Zeus windows (default: the file name's).")] = None,
    gpu_type: Annotated[
        str | None,
        typer.Option(help="GPU type (default: an nvidia-smi log's name column, the file name's or the job side's)."),
    ] = None,
    steps_per_window: Annotated[
        float | None, typer.Option(help="Training steps in each Zeus window (required for Zeus windows).")
    ] = None,
    library: Annotated[
        str | None,
        typer.Option(help="Base library or measurements file to merge into (default: the shipped library; 'none')."),
    ] = None,
    measurements_only: Annotated[
        bool, typer.Option("--measurements-only", help="Write a wattplan.measurements/1 file, not a library.")
    ] = False,
) -> None:
    """Read measurements into points with their provenance and merge them (by id) into a library's measurements."""
    from wattplan.planner.profiling.ingest import NoBase, ingest, ingest_tables

    base: Path | NoBase | None = "none" if library == "none" else Path(library) if library else None
    # --library may be --out (merge in place); the measurement files and job sides may not
    refuse_overwriting_inputs({"--out": out_path}, [*files, *(job_side or [])])
    report = ingest(files, out_path, fmt.value, job_side, job_type, gpu_type, steps_per_window, base, measurements_only)
    for table in ingest_tables(report):
        out.print(table)
    counts = f"{report.total_points} points, {sum(report.added)} new"
    out.print(f"wrote [bold]{shown(out_path)}[/] ({report.out_kind}): {counts}")


@profiles_app.command("check")
@handles_errors
def profiles_check(
    library: Annotated[Path, typer.Argument(help="Profile library whose predictions are checked.")],
    measurements: Annotated[
        list[Path],
        typer.Argument(help="wattplan.measurements/1 files, or profile libraries with measurements."),
    ],
    type_map: Annotated[
        list[str] | None,
        typer.Option("--map", help="MEASURED=LIBRARY: the library's name of a measured job type (repeatable)."),
    ] = None,
    shape: Annotated[
        bool,
        typer.Option(
            "--shape",
            help="Compare throughput, power and energy per step as ratios to the top measured setting "
            "(for points whose steps are not the library's, e.g. Zeus windows).",
        ),
    ] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the report as JSON here.")] = None,
    csv_out: Annotated[Path | None, typer.Option("--csv", help="Write rows and unmatched points as CSV here.")] = None,
) -> None:
    """Predicted vs measured per quantity (throughput, speedup, power, energy per step, pair rates, idle)."""
    from wattplan.planner.profiling import check_output as show
    from wattplan.planner.profiling.check import check_files

    refuse_overwriting_inputs({"--json": json_out, "--csv": csv_out}, [library, *measurements])
    report = check_files(library, measurements, type_map or [], shape)
    for quantity in report.quantities():
        if any(r.quantity == quantity for r in report.rows):
            out.print(show.rows_table(report, quantity))
    if report.unmatched:
        out.print(show.unmatched_table(report))
    out.print(show.summary_table(report))
    for path, write in ((json_out, show.write_report_json), (csv_out, show.write_report_csv)):
        if path is not None:
            write(path, report)
            out.print(f"wrote [bold]{shown(path)}[/]")


@profiles_app.command("truth")
@handles_errors
def profiles_truth(
    library: Annotated[
        Path | None, typer.Argument(help="Prior library to bend (default: the shipped one).", show_default=False)
    ] = None,
    alpha: Annotated[float, typer.Option(help="Amdahl loss per extra GPU: S(n) = n / (1 + alpha (n-1)).")] = 0.08,
    cap: Annotated[float, typer.Option(help="Data-loading ceiling of the speedup S(n).")] = 3.3,
    pair_factor: Annotated[float, typer.Option(help="True pair rates = factor x the prior's.")] = 1.07 / 1.71,
    idle_power_w: Annotated[float, typer.Option(help="True idle power per GPU (W).")] = 41.0,
    node_power_w: Annotated[float, typer.Option(help="True node power without GPUs (W).")] = 230.0,
    cap_spread: Annotated[
        float, typer.Option(help="Per-family spread of the ceiling: cap x 2^(spread x h), h in [-1, 1] per family.")
    ] = 0.0,
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Truth library to write.")] = Path("truth.json"),
) -> None:
    """Write a truth library for replays: the prior bent the way real nvidia-smi measurements differ from it.

    Saturating scaling, power that follows utilisation, lower pair rates, measured idle and node power
    (defaults: an 8x V100 node's logs; planner/profiling/truth.py). Use it as `simulate --truth`.
    """
    from wattplan.planner.contracts.jsonio import write_json_atomic
    from wattplan.planner.files.resources import profile_library
    from wattplan.planner.profiling.truth import TruthParams, truth_from_file

    params = TruthParams(alpha, cap, pair_factor, idle_power_w, node_power_w, cap_spread)
    prior = library or profile_library()
    refuse_overwriting_inputs({"--out": out_path}, [prior])
    doc = truth_from_file(prior, params)
    write_json_atomic(out_path, doc)
    out.print(f"wrote [bold]{shown(out_path)}[/]: {len(doc['profiles'])} profiles, {len(doc['pairs'])} pair entries")


@profiles_app.command("prior")
@handles_errors
def profiles_prior(
    gpu: Annotated[str, typer.Option(help="GPU types to add from their specs, comma-separated (e.g. a100,h100).")],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Profile library to write.")],
    profiles: ProfilesOpt = None,
    specs: Annotated[
        Path | None, typer.Option(help="GPU spec file (default: the shipped instances/profiles/gpu_specs.json).")
    ] = None,
) -> None:
    """Add GPU types without measurements, scaled from the V100 by public specs.

    Each new type's profiles and pairs are marked basis prior with the rule's measured expected error
    (docs/design.md §9.8); `profiles fit` and learning correct them like any prior.
    """
    from wattplan.planner.console.list_options import split_list
    from wattplan.planner.contracts.jsonio import read_json, write_json_atomic
    from wattplan.planner.files.resources import profile_library
    from wattplan.planner.profile_library.library import library_from_doc
    from wattplan.planner.profile_library.priors import add_prior_types_doc, load_gpu_specs

    source = profiles or profile_library()
    names = split_list(gpu, "--gpu")
    refuse_overwriting_inputs({"--out": out_path}, [source, specs])
    doc = read_json(source)
    lib = library_from_doc(doc, str(source))
    spec_file = load_gpu_specs(specs)
    add_prior_types_doc(doc, lib, names, spec_file)
    library_from_doc(doc, "the library with priors")  # every check, before writing
    write_json_atomic(out_path, doc)
    told = spec_file.error.summary() if spec_file.error else "expected error not measured"
    out.print(f"wrote [bold]{shown(out_path)}[/]: added {shown(', '.join(names))} from priors; {told}")


@profiles_app.command("ls")
@handles_errors
def profiles_ls(profiles: ProfilesOpt = None) -> None:
    """Per GPU type: settings, idle power, job types, GPU counts, pairs, profiles by basis kind."""
    from wattplan.planner.files.resources import profile_library
    from wattplan.planner.profile_library.library import load_profile_library
    from wattplan.planner.profile_library.listing import summary_table

    source = profiles or profile_library()
    out.print(summary_table(load_profile_library(source), f"GPU types in {source.name}"))


@profiles_app.command("show")
@handles_errors
def profiles_show(
    gpu: Annotated[str, typer.Option(help="GPU type whose profiles are listed.")],
    job_type: Annotated[str | None, typer.Option("--type", help="Only this job type.")] = None,
    profiles: ProfilesOpt = None,
) -> None:
    """The profile entries of one GPU type: job type, GPUs, setting, steps/s, W per GPU, basis, error."""
    from wattplan.planner.files.resources import profile_library
    from wattplan.planner.profile_library.library import load_profile_library
    from wattplan.planner.profile_library.listing import entries_table

    source = profiles or profile_library()
    lib = load_profile_library(source)
    if gpu not in lib.gpu_types:
        raise InputError("--gpu", [Problem("unknown-gpu-type", "--gpu", f"{gpu!r} is not in {sorted(lib.gpu_types)}")])
    if job_type is not None and not any(p.type == job_type and p.gpu_type == gpu for p in lib.profiles):
        raise InputError("--type", [Problem("unknown-job-type", "--type", f"no profile of {job_type!r} on {gpu}")])
    what = gpu if job_type is None else f"{job_type} on {gpu}"
    out.print(entries_table(lib, gpu, job_type, f"profiles of {what} in {source.name}"))
