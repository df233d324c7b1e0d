"""Ingest of measurements: real Zeus windows and summaries, hand-written nvidia-smi logs, the job side, the CLI.

The nvidia-smi fixtures in tests/data/nvidia_smi/ are written by hand in the documented format; their
numbers are worked out in that folder's README.md and again in the comments here.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.profiling.gpu_models import gpu_type_from_name
from wattplan.planner.profiling.ingest import detect_format, ingest_files
from wattplan.planner.profiling.job_side import JobRun, job_side_from_doc, read_job_side
from wattplan.planner.profiling.nvidia_smi import read_nvidia_smi_log
from wattplan.planner.profiling.points import MeasuredPoint, read_points
from wattplan.planner.profiling.smi_points import points_from_smi
from wattplan.planner.profiling.zeus_summary import read_zeus_power_summary
from wattplan.planner.profiling.zeus_windows import names_from_file, read_zeus_windows

ROOT = Path(__file__).resolve().parents[1]
ZEUS = ROOT / "instances" / "sources" / "zeus"
WINDOWS = ZEUS / "profile_data"
SMI = ROOT / "tests" / "data" / "nvidia_smi"
runner = CliRunner()


def t(hms: str) -> datetime:
    return datetime.strptime(f"2026/11/24 {hms}", "%Y/%m/%d %H:%M:%S")


def by_kind(points: list[MeasuredPoint], kind: str) -> list[MeasuredPoint]:
    return [p for p in points if p.kind == kind]


def codes(exc: pytest.ExceptionInfo[InputError]) -> list[tuple[str, str]]:
    return [(p.code, p.path) for p in exc.value.problems]


# --- Zeus profile windows (the 12 shipped files) ---------------------------------------------------------


def test_the_twelve_zeus_window_files_give_one_point_per_window() -> None:
    files = sorted(WINDOWS.glob("*.csv"))
    assert len(files) == 12
    total = 0
    for f in files:
        gpu_type, job_type = names_from_file(f)
        points = read_zeus_windows(f, str(job_type), str(gpu_type), 40)
        rows = len(f.read_text().splitlines()) - 1
        # A40 files sweep 300..100 W (9 windows), V100 files 250..100 W (7 windows)
        assert len(points) == rows == (9 if gpu_type == "a40" else 7)
        # GPU count = number of gpuN_energy columns: "gpu0,1,2,3" in the name -> 4
        assert {p.gpus for p in points} == {len(f.stem.split("+gpu")[1].split(","))}
        assert [p.setting for p in points] == sorted({p.setting for p in points}, reverse=True)
        assert all(p.kind == "exclusive" and p.setting_unit == "power_limit_w" for p in points)
        total += len(points)
    assert total == 6 * 9 + 6 * 7 == 96


def test_v100_resnet50_gpu0_250w_window_by_hand() -> None:
    f = WINDOWS / "V100+resnet50+gpu0.csv"
    points = read_zeus_windows(f, "resnet50", "v100", steps_per_window=40)
    p = points[0]
    # row 2: __GlobalPowerLimitOptimizer_250, elapsed 26.674534152960405 s, gpu0_energy 6065.030000000028 J
    # power = 6065.03 J / 26.6745 s / 1 GPU = 227.37 W; steps/s = 40 / 26.6745 = 1.49956
    assert p.setting == 250 and p.gpus == 1
    assert p.power_w == pytest.approx(227.372, abs=1e-3)
    assert p.energy_j == pytest.approx(6065.03, abs=1e-6)
    assert p.steps_per_s == pytest.approx(1.49956, abs=1e-5)
    assert p.duration_s == pytest.approx(26.674534, abs=1e-6)
    assert p.provenance.file == f.name and len(p.provenance.sha256) == 64
    assert p.provenance.window.startswith("__GlobalPowerLimitOptimizer_250 (line 2, start_time 529720.159820945")
    # 100 W window (line 8): 5327.103 J / 53.8665 s = 98.894 W
    assert points[-1].setting == 100 and points[-1].power_w == pytest.approx(98.894, abs=1e-3)


def test_two_gpu_window_sums_the_gpus_and_divides_per_gpu() -> None:
    (p, *_) = read_zeus_windows(WINDOWS / "V100+resnet50+gpu0,1.csv", "resnet50", "v100", steps_per_window=40)
    # (3314.065 + 3350.700) J = 6664.765 J over 15.27867 s on 2 GPUs -> 6664.765 / 15.27867 / 2 = 218.107 W
    assert p.gpus == 2
    assert p.energy_j == pytest.approx(6664.765, abs=1e-6)
    assert p.power_w == pytest.approx(218.107, abs=1e-3)
    assert p.steps_per_s == pytest.approx(40 / 15.278669, rel=1e-6)


def test_bad_zeus_window_rows_are_named_by_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "V100+x+gpu0,1.csv"
    f.write_text(
        "start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy\n"
        "1.0,__GlobalPowerLimitOptimizer_250,10.0,2000,2000\n"
        "2.0,__SomethingElse_200,10.0,2000,2000\n"
        "3.0,__GlobalPowerLimitOptimizer_225,-1,2000,2000\n"
        "4.0,__GlobalPowerLimitOptimizer_200,10.0,abc,2000\n"
        "5.0,__GlobalPowerLimitOptimizer_175,10.0,2000\n"
        "6.0,__GlobalPowerLimitOptimizer_150,10.0,2.0,2.0\n"
    )
    with pytest.raises(InputError) as exc:
        read_zeus_windows(f, "x", "v100", 40)
    assert codes(exc) == [
        ("unknown-window", "line 3, window_name"),
        ("bad-value", "line 4, elapsed_time"),
        ("bad-value", "line 5, gpu0_energy"),
        ("truncated-row", "line 6"),
        # 4 J over 10 s on 2 GPUs = 0.2 W: the energies were millijoules, not joules
        ("implausible-power", "line 7, gpu0_energy"),
    ]
    with pytest.raises(InputError):
        read_zeus_windows(f, "x", "v100", 0)


def test_zeus_window_names_default_the_gpu_and_job_type() -> None:
    assert names_from_file(Path("A40+resnet18+gpu0,1,2,3.csv")) == ("a40", "resnet18")
    assert names_from_file(Path("windows.csv")) == (None, None)


# --- Zeus power summaries ---------------------------------------------------------------------------------


def test_v100_summary_points_by_hand() -> None:
    points = read_zeus_power_summary(ZEUS / "summary_power_v100.csv", "v100")
    exclusive = by_kind(points, "exclusive")
    (top,) = by_kind(points, "top_limit")
    assert top.power_w == 250.0
    # 476 rows; rows differing only by optimizer collapse to one point per (workload, batch, limit)
    assert len(exclusive) == 406 and len(points) == 407
    (p,) = [q for q in exclusive if q.job_type == "resnet50 (imagenet, batch size 256)" and q.setting == 250]
    # line 169: 3514.986666666666 s per epoch, 220.25029530245453 W; ceil(1,281,167 / 256) = 5005 steps
    assert p.steps == 5005 and p.gpus == 1
    assert p.steps_per_s == pytest.approx(5005 / 3514.986666666666, rel=1e-12)
    assert p.power_w == pytest.approx(220.25029530245453, rel=1e-12)
    assert p.energy_j == pytest.approx(220.25029530245453 * 3514.986666666666, rel=1e-12)
    (q,) = [q for q in exclusive if q.job_type == "shufflenetv2 (cifar100, batch size 1024)" and q.setting == 100]
    # lines 2-3 (adadelta, adam) averaged: t = (11.27667 + 11.08667) / 2 = 11.18167 s,
    # P = (86.86461 + 91.00423) / 2 = 88.93442 W; ceil(50,000 / 1024) = 49 steps -> 4.38217 steps/s
    assert q.duration_s == pytest.approx(11.181666666666667, rel=1e-12)
    assert q.power_w == pytest.approx(88.93442173229980, rel=1e-12)
    assert q.steps_per_s == pytest.approx(4.38217, abs=1e-5)
    assert "lines 2,3; 2 optimizer row(s) averaged" in q.provenance.window


@pytest.mark.parametrize(("gpu", "top"), [("p100", 250.0), ("a40", 300.0), ("rtx6000", 260.0)])
def test_every_shipped_summary_reads_with_its_top_limit(gpu: str, top: float) -> None:
    points = read_zeus_power_summary(ZEUS / f"summary_power_{gpu}.csv", gpu)
    assert by_kind(points, "top_limit")[0].power_w == top
    assert all(p.power_w and p.steps_per_s for p in by_kind(points, "exclusive"))


def test_summary_overrides_and_unknown_datasets(tmp_path: Path) -> None:
    f = tmp_path / "summary_power_v100.csv"
    header = "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
    f.write_text(header + "cifar100,shufflenetv2,1024,adam,250,10.0,150.0\n")
    (p, _) = read_zeus_power_summary(f, "v100", steps_per_epoch={("cifar100", "shufflenetv2", 1024): 50})
    assert p.steps_per_s == 5.0  # 50 steps / 10 s
    f.write_text(header + "mnist,lenet,64,adam,250,10.0,150.0\ncifar100,shufflenetv2,8,adam,x,10.0,150.0\n")
    with pytest.raises(InputError) as exc:
        read_zeus_power_summary(f, "v100")
    assert codes(exc) == [("bad-value", "line 3, power_limit")]
    f.write_text(header + "mnist,lenet,64,adam,250,10.0,150.0\n")
    with pytest.raises(InputError) as exc:
        read_zeus_power_summary(f, "v100")
    assert codes(exc) == [("unknown-dataset", "line 2, dataset")]


# --- nvidia-smi logs --------------------------------------------------------------------------------------


def units_points(name: str) -> list[MeasuredPoint]:
    side = read_job_side(SMI / "v100_units.jobs.json")
    result = points_from_smi(read_nvidia_smi_log(SMI / name), side.runs, side.gpu_type)
    assert result.skipped == []
    return result.points


def test_both_csv_variants_and_any_column_order_give_the_same_samples() -> None:
    units = read_nvidia_smi_log(SMI / "v100_units.csv")  # --format=csv: "212.35 W"
    bare = read_nvidia_smi_log(SMI / "v100_nounits.csv")  # --format=csv,nounits, columns reordered
    assert units.gpus == bare.gpus == [0, 1, 2, 3]
    for g in units.gpus:
        assert len(units.samples[g]) == 5
        for a, b in zip(units.samples[g], bare.samples[g], strict=True):
            assert (a.time, a.power_w, a.utilisation, a.sm_clock_mhz, a.power_limit_w) == (
                b.time,
                b.power_w,
                b.utilisation,
                b.sm_clock_mhz,
                b.power_limit_w,
            )
            assert (a.max_limit_w, a.memory_used_mib) == (b.max_limit_w, b.memory_used_mib)
    s = units.samples[1][1]  # line 7: "1, 2026/11/24 13:05:01.000, 300.00 W, 100 %, 1530 MHz, ..."
    assert (s.line, s.power_w, s.utilisation, s.sm_clock_mhz, s.power_limit_w, s.max_limit_w) == (
        7,
        300.0,
        1.0,
        1530.0,
        250.0,
        300.0,
    )
    assert s.memory_used_mib == 20000.0 and s.time == datetime(2026, 11, 24, 13, 5, 1)
    assert units.problems == bare.problems == []


@pytest.mark.parametrize("name", ["v100_units.csv", "v100_nounits.csv"])
def test_run_held_idle_idle_and_top_limit_by_hand(name: str) -> None:
    points = units_points(name)
    (run,) = by_kind(points, "exclusive")
    # GPU 0: 200,210,220,230,240 W at 1 s steps -> trapezoid 205+215+225+235 = 880 J over 4 s = 220 W
    # GPU 1: 100,300,100,300,100 W -> 200+200+200+200 = 800 J over 4 s = 200 W
    # power per GPU (220 + 200) / 2 = 210 W; energy 880 + 800 = 1680 J; 100 steps / 4 s = 25 steps/s
    # utilisation: GPU 0 0.9 throughout; GPU 1 80,100,80,100,80 % -> 90 % -> mean 0.9
    assert (run.job_type, run.gpu_type, run.gpus, run.setting) == ("ResNet-50 (batch size 64)", "v100", 2, 250)
    assert run.power_w == pytest.approx(210.0, rel=1e-12)
    assert run.energy_j == pytest.approx(1680.0, rel=1e-12)
    assert run.steps_per_s == pytest.approx(25.0, rel=1e-12)
    assert run.utilisation == pytest.approx(0.9, rel=1e-12)
    assert run.duration_s == 4.0 and run.steps == 100.0
    (held,) = by_kind(points, "held_idle")
    # GPU 2, held by the job: 55,55,56,56,55 W -> 55 + 55.5 + 56 + 55.5 = 222 J over 4 s = 55.5 W
    assert held.power_w == pytest.approx(55.5, rel=1e-12) and held.gpus == 1
    assert held.job_type == "ResNet-50 (batch size 64)"
    (idle,) = by_kind(points, "idle")
    # GPU 3, no run, 0 % and 0 MiB: 41,41,42,42,41 W -> 41 + 41.5 + 42 + 41.5 = 166 J over 4 s = 41.5 W
    assert idle.power_w == pytest.approx(41.5, rel=1e-12)
    assert "GPUs 3 " in idle.provenance.window
    (top,) = by_kind(points, "top_limit")
    assert top.power_w == 300.0  # power.max_limit


def test_the_same_run_in_two_files_gets_two_ids_and_the_same_file_the_same_ids() -> None:
    a, b = units_points("v100_units.csv"), units_points("v100_nounits.csv")
    assert {p.id for p in a}.isdisjoint({p.id for p in b})  # different bytes, different sha256
    assert [p.id for p in a] == [p.id for p in units_points("v100_units.csv")]


def test_a_pair_run_gives_pair_points_and_a_given_setting_wins() -> None:
    log = read_nvidia_smi_log(SMI / "v100_units.csv")
    runs = [
        JobRun("A", (0, 1), 60, t("13:05:00"), t("13:05:04"), setting=200, partner_type="B"),
        JobRun("B", (0, 1), 20, t("13:05:00"), t("13:05:04"), setting=200, partner_type="A"),
    ]
    pairs = by_kind(points_from_smi(log, runs, "v100").points, "pair")
    # both sides see the same GPUs (210 W each); rates 60/4 = 15 and 20/4 = 5 steps/s
    assert [(p.job_type, p.partner_type, p.steps_per_s, p.setting) for p in pairs] == [
        ("A", "B", 15.0, 200),
        ("B", "A", 5.0, 200),
    ]
    assert all(p.power_w == pytest.approx(210.0) for p in pairs)


def test_bad_rows_are_skipped_and_reported_by_line_and_column() -> None:
    log = read_nvidia_smi_log(SMI / "bad_rows.csv")
    assert [(p.code, p.path) for p in log.problems] == [
        ("not-available", "line 5, power.draw"),  # [N/A] in a required column: row skipped
        ("unsorted-timestamp", "line 8, timestamp"),  # 13:00:01.5 after 13:00:02 on GPU 0: skipped
        ("bad-value", "line 9, power.draw"),  # "abc W"
        ("clock-jump", "line 14, timestamp"),  # GPU 0: 56 s step, median 1 s: kept, new segment
        ("clock-jump", "line 15, timestamp"),  # GPU 1: 56 s step, median 2 s
        ("truncated-row", "line 20"),  # cut off mid-line
        ("not-available", "column clocks.sm"),  # [Not Supported] in an optional column: value unknown
    ]
    # line 11 repeats the header and is read past
    assert [s.line for s in log.samples[0]] == [2, 4, 6, 10, 12, 14, 16, 18]
    assert [s.line for s in log.samples[1]] == [3, 7, 13, 15, 17, 19]
    assert [s.segment for s in log.samples[0]] == [0, 0, 0, 0, 0, 1, 1, 1]
    assert log.samples[1][0].sm_clock_mhz is None and log.samples[1][0].power_w == 100.0


def test_runs_on_a_log_with_bad_rows() -> None:
    log = read_nvidia_smi_log(SMI / "bad_rows.csv")
    runs = [
        JobRun("A", (0,), 40, t("13:00:00"), t("13:00:04")),
        JobRun("A", (0, 1), 40, t("13:00:00"), t("13:00:04")),
        JobRun("A", (0,), 40, t("13:00:00"), t("13:01:02")),
        JobRun("A", (0,), 40, t("14:00:00"), t("14:00:04")),
        JobRun("A", (5,), 40),
    ]
    result = points_from_smi(log, runs, "v100")
    one, two = result.points
    # GPU 0 kept samples 100,110,120,130,140 W at 1 s -> 105+115+125+135 = 480 J / 4 s = 120 W; 40/4 = 10 steps/s
    assert (one.power_w, one.energy_j, one.steps_per_s, one.setting) == (120.0, 480.0, 10.0, 250)
    # GPU 1 kept 100,120,140 W at 2 s steps -> 220 + 260 = 480 J / 4 s = 120 W; energy 4 * (120 + 120) = 960 J
    assert (two.power_w, two.energy_j, two.gpus) == (120.0, 960.0, 2)
    assert [(p.code, p.path) for p in result.skipped[len(log.problems) :]] == [
        ("clock-jump", "runs[2]"),  # the window spans the 56 s gap
        ("window-not-covered", "runs[3]"),  # an hour after the log
        ("gpu-not-in-log", "runs[4]"),
    ]
    assert by_kind(result.points, "idle") == []  # no memory.used column: GPUs some run names are never idle


def test_whole_log_run_defaults_and_setting_from_the_log(tmp_path: Path) -> None:
    log = read_nvidia_smi_log(SMI / "v100_units.csv")
    (p, *_) = points_from_smi(log, [JobRun("A", (0,), 8)], "v100").points
    assert (p.duration_s, p.steps_per_s, p.power_w, p.setting) == (4.0, 2.0, 220.0, 250)
    f = tmp_path / "limits.csv"
    f.write_text(
        "index, timestamp, power.draw [W], power.limit [W]\n"
        "0, 2026/11/24 13:00:00, 100 W, 250 W\n"
        "0, 2026/11/24 13:00:01, 100 W, 250 W\n"
        "0, 2026/11/24 13:00:02, 100 W, 200 W\n"
    )
    result = points_from_smi(read_nvidia_smi_log(f), [JobRun("A", (0,), 8)], "v100")
    assert [(p.code, p.path) for p in result.skipped] == [("setting-varies", "runs[0]")]
    f.write_text("index, timestamp, power.draw [W]\n0, 2026/11/24 13:00:00, 100 W\n0, 2026/11/24 13:00:01, 100 W\n")
    result = points_from_smi(read_nvidia_smi_log(f), [JobRun("A", (0,), 8)], "v100")
    assert [(p.code, p.path) for p in result.skipped] == [("no-setting", "runs[0]")]


def test_idle_outside_a_run_needs_memory_used_to_show_it(tmp_path: Path) -> None:
    rows = [(0, 40, 0, 0), (1, 42, 0, 0), (2, 44, 0, 0), (3, 200, 90, 9000), (4, 200, 90, 9000)]
    text = "index, timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]\n" + "".join(
        f"0, 2026/11/24 13:00:0{s}.000, {p} W, {u} %, {m} MiB\n" for s, p, u, m in rows
    )
    f = tmp_path / "idle.csv"
    f.write_text(text)
    run = JobRun("A", (0,), 10, t("13:00:03"), t("13:00:04"))
    (idle,) = by_kind(points_from_smi(read_nvidia_smi_log(f), [run], "v100").points, "idle")
    # samples 0-2 (0 %, 0 MiB, before the run): (40+42)/2 + (42+44)/2 = 84 J over 2 s = 42 W
    assert idle.power_w == 42.0 and idle.duration_s == 2.0
    f.write_text("\n".join(line.rsplit(",", 1)[0] for line in text.splitlines()) + "\n")  # drop memory.used
    assert by_kind(points_from_smi(read_nvidia_smi_log(f), [run], "v100").points, "idle") == []


def test_a_held_gpu_that_computes_is_not_held_idle() -> None:
    log = read_nvidia_smi_log(SMI / "v100_units.csv")
    result = points_from_smi(log, [JobRun("A", (0,), 8, held_idle=(1,))], "v100")
    assert by_kind(result.points, "held_idle") == []
    assert [(p.code, p.path) for p in result.skipped] == [("held-gpu-busy", "runs[0].held_idle")]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("", "not-nvidia-smi"),
        # --format=csv,noheader: the first line is data
        ("0, 2026/11/24 13:00:00.000, 100.00 W\n0, 2026/11/24 13:00:01.000, 100.00 W\n", "not-nvidia-smi"),
        ("index, timestamp, utilization.gpu [%]\n0, 2026/11/24 13:00:00, 5 %\n", "not-nvidia-smi"),
        ("index, index, timestamp, power.draw [W]\n", "duplicate-column"),
        (
            "index, timestamp, power.draw [W]\n0, 2026/11/24 13:00:00, [N/A]\n0, 2026/11/24 13:00:01, 9 W\n",
            "no-samples",
        ),
    ],
)
def test_files_that_are_no_usable_log_are_errors(tmp_path: Path, text: str, code: str) -> None:
    f = tmp_path / "log.csv"
    f.write_text(text)
    with pytest.raises(InputError) as exc:
        read_nvidia_smi_log(f)
    assert code in [c for c, _ in codes(exc)]


# --- the job side -----------------------------------------------------------------------------------------


def test_job_side_fields_are_checked_by_path() -> None:
    good = {"job_type": "A", "gpus": [0], "start": "2026/11/24 13:00:00", "end": "2026/11/24 13:10:00", "steps": 5}
    side = job_side_from_doc(
        {"gpu_type": "V100", "runs": [good | {"steps": None, "epochs": 2, "steps_per_epoch": 3}]}, "x"
    )
    assert side.gpu_type == "v100" and side.runs[0].steps == 6.0  # 2 epochs x 3 steps
    doc = {
        "gpu_type": "v100",
        "runs": [
            good | {"steps": -5},
            good | {"gpus": [0, 0]},
            good | {"step": 5},
            good | {"end": "2026/11/24 12:00:00"},
            good | {"epochs": 2, "steps_per_epoch": 10},
            {k: v for k, v in good.items() if k != "steps"} | {"epochs": 2},
            good | {"setting": 250.5, "held_idle": [0]},
            good | {"start": "yesterday"},
        ],
    }
    with pytest.raises(InputError) as exc:
        job_side_from_doc(doc, "jobs.json")
    assert [path for _, path in codes(exc)] == [
        "runs[0].steps",
        "runs[1].gpus",
        "runs[2].step",
        "runs[3].end",
        "runs[4].steps",
        "runs[5].steps_per_epoch",
        "runs[6].held_idle",
        "runs[6].setting",
        "runs[7].start",
    ]


def test_epochs_times_steps_per_epoch() -> None:
    doc = {"gpu_type": "v100", "runs": [{"job_type": "A", "gpus": [0], "epochs": 2.5, "steps_per_epoch": 40}]}
    assert job_side_from_doc(doc, "x").runs[0].steps == 100.0


# --- orchestration and the CLI ----------------------------------------------------------------------------


def test_detect_format_and_option_checks(tmp_path: Path) -> None:
    assert detect_format(SMI / "v100_nounits.csv") == "nvidia-smi"
    assert detect_format(WINDOWS / "V100+resnet18+gpu0.csv") == "zeus-windows"
    assert detect_format(ZEUS / "summary_power_p100.csv") == "zeus-summary"
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(InputError) as exc:
        ingest_files([other, WINDOWS / "V100+resnet18+gpu0.csv"])
    # both files' problems come together: the unknown format and the missing steps per window
    assert [c for c, _ in codes(exc)] == ["unknown-format", "no-steps"]
    with pytest.raises(InputError) as exc:
        ingest_files([SMI / "v100_units.csv"])  # no job side, no --gpu-type
    assert codes(exc) == [("no-gpu-type", "--gpu-type")]
    (f,) = ingest_files([SMI / "v100_units.csv"], gpu_type="v100")  # no runs: idle and top limit only
    assert sorted(p.kind for p in f.points) == ["idle", "top_limit"]


def run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def test_cli_ingest_into_a_library_then_again_adds_nothing(tmp_path: Path) -> None:
    out = tmp_path / "lib.json"
    windows = sorted(WINDOWS.glob("V100+*.csv"))
    result = run("profiles", "ingest", *windows, "--steps-per-window", 40, "--out", out)
    assert result.exit_code == 0, result.output
    assert "42 new" in result.output
    lib = load_profile_library(out)
    shipped = load_profile_library(ROOT / "instances" / "profiles" / "gavel_zeus_v100_p100.json")
    assert lib.profiles == shipped.profiles and lib.pairs == shipped.pairs
    points = read_points(out)
    assert len(points) == 42 and {p.gpu_type for p in points} == {"v100"}
    before = out.read_bytes()
    again = run("profiles", "ingest", windows[0], "--steps-per-window", 40, "--library", out, "--out", out)
    assert again.exit_code == 0, again.output
    assert "0 new" in again.output and out.read_bytes() == before


def test_cli_ingest_nvidia_smi_to_a_measurements_file(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    args = ("--job-side", SMI / "v100_units.jobs.json", "--library", "none", "--out", out)
    result = run("profiles", "ingest", SMI / "v100_units.csv", SMI / "bad_rows.csv", *args)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["schema"] == "wattplan.measurements/1"
    assert sorted(p["kind"] for p in doc["points"]) == ["exclusive", "held_idle", "idle", "top_limit"]
    assert "truncated-row" in result.output and "clock-jump" in result.output
    (run_point,) = [p for p in read_points(out) if p.kind == "exclusive"]
    assert math.isclose(run_point.power_w or 0, 210.0)
    assert replace(run_point, id="").id == run_point.id  # the id is the one derived from the provenance


def test_cli_bad_job_side_names_the_field(tmp_path: Path) -> None:
    side = tmp_path / "jobs.json"
    side.write_text(json.dumps({"gpu_type": "v100", "runs": [{"job_type": "A", "gpus": [0], "steps": "many"}]}))
    out = tmp_path / "m.json"
    result = run("profiles", "ingest", SMI / "v100_units.csv", "--job-side", side, "--out", out)
    assert result.exit_code == 2
    assert "runs[0].steps" in result.output and not out.exists()
    missing = run("profiles", "ingest", WINDOWS / "V100+resnet18+gpu0.csv", "--out", out)
    assert missing.exit_code == 2 and "--steps-per-window" in missing.output


# --- several logs: job sides paired with their logs, the GPU model from nvidia-smi's name column -------------

SMI_HEADER = (
    "index, name, timestamp, power.draw [W], utilization.gpu [%], power.limit [W], power.max_limit [W], "
    "memory.used [MiB]\n"
)


def write_named_log(path: Path, model: str, busy_w: float, idle_w: float, top_w: float) -> Path:
    """Five samples 1 s apart: GPU 0 computes at ``busy_w`` (90 %), GPU 1 idles at ``idle_w`` (0 %, 0 MiB)."""
    rows = [
        f"{g}, {model}, 2026/11/24 13:00:0{s}.000, {w} W, {u} %, 250.00 W, {top_w} W, {m} MiB\n"
        for s in range(5)
        for g, w, u, m in ((0, busy_w, 90, 9000), (1, idle_w, 0, 0))
    ]
    path.write_text(SMI_HEADER + "".join(rows))
    return path


def write_side(path: Path, gpu_type: str, job_type: str, steps: float, log: str | None = None) -> Path:
    """A job side with one run on GPU 0 over the whole 4 s log."""
    run_doc: dict[str, object] = {"job_type": job_type, "gpus": [0], "steps": steps}
    if log is not None:
        run_doc["log"] = log
    path.write_text(json.dumps({"gpu_type": gpu_type, "runs": [run_doc]}))
    return path


@pytest.fixture
def two_nodes(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """A V100 log and an A100 log, and a job side for each (different job types and steps)."""
    v100 = write_named_log(tmp_path / "v100-node.csv", "Tesla V100-SXM2-32GB", 200, 40, 300)
    a100 = write_named_log(tmp_path / "a100-node.csv", "NVIDIA A100-SXM4-80GB", 350, 55, 400)
    return (
        v100,
        a100,
        write_side(tmp_path / "v100.jobs.json", "v100", "ResNet-50", 40),
        write_side(tmp_path / "a100.jobs.json", "a100", "BERT", 80),
    )


def test_cli_two_job_sides_each_go_with_their_log(tmp_path: Path, two_nodes: tuple[Path, Path, Path, Path]) -> None:
    v100, a100, v100_side, a100_side = two_nodes
    out = tmp_path / "m.json"
    sides = ("--job-side", v100_side, "--job-side", a100_side)
    result = run("profiles", "ingest", v100, a100, *sides, "--library", "none", "--out", out)
    assert result.exit_code == 0, result.output
    points = read_points(out)
    runs = {(p.gpu_type, p.job_type, p.steps_per_s) for p in points if p.kind == "exclusive"}
    assert runs == {("v100", "ResNet-50", 10.0), ("a100", "BERT", 20.0)}  # 40 and 80 steps over 4 s
    idle = {p.gpu_type: p.power_w for p in points if p.kind == "idle"}
    top = {p.gpu_type: p.power_w for p in points if p.kind == "top_limit"}
    assert idle == {"v100": 40.0, "a100": 55.0} and top == {"v100": 300.0, "a100": 400.0}


def test_cli_job_side_count_must_match_the_logs(tmp_path: Path, two_nodes: tuple[Path, Path, Path, Path]) -> None:
    v100, _, v100_side, a100_side = two_nodes
    out = tmp_path / "m.json"
    result = run("profiles", "ingest", v100, "--job-side", v100_side, "--job-side", a100_side, "--out", out)
    assert result.exit_code == 2 and not out.exists()
    assert "job-side-count" in result.output and "Traceback" not in result.output
    with pytest.raises(InputError) as exc:
        ingest_files([v100], job_side=[v100_side, a100_side])
    assert codes(exc) == [("job-side-count", "--job-side")]
    assert exc.value.problems[0].message.startswith("2 job-side file(s) for 1 nvidia-smi log(s)")


def test_an_unreadable_log_is_its_own_one_problem_not_a_job_side_count(
    tmp_path: Path, two_nodes: tuple[Path, Path, Path, Path]
) -> None:
    """A log whose format cannot be told may be the log the job side is for: its side is not counted against it.

    It was: a log that is not UTF-8 with its one job side gave a second problem (``1 job-side file(s) for 0
    nvidia-smi log(s)``) under the heading ``2 of 1 files``.
    """
    v100, a100, v100_side, a100_side = two_nodes
    broken = tmp_path / "broken.csv"
    broken.write_bytes(v100.read_bytes()[:200] + b"\xff\xfe" + v100.read_bytes()[200:])
    with pytest.raises(InputError) as exc:
        ingest_files([broken], job_side=v100_side)
    assert [c for c, _ in codes(exc)] == ["not-utf8"] and exc.value.source == str(broken)
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(InputError) as exc:  # two bad files of three: both named, the good log not read
        ingest_files([broken, other, a100], job_side=[v100_side, a100_side])
    assert exc.value.source == "2 of 3 files"
    assert [c for c, _ in codes(exc)] == ["not-utf8", "unknown-format"]
    with pytest.raises(InputError) as exc:  # a bad file beside job sides that do not match the logs: labelled so
        ingest_files([WINDOWS / "V100+resnet18+gpu0.csv", v100], job_side=[v100_side, a100_side])
    assert exc.value.source == "1 of 2 files and --job-side"
    assert sorted(c for c, _ in codes(exc)) == ["job-side-count", "no-steps"]


def test_job_sides_in_the_wrong_order_are_refused(tmp_path: Path, two_nodes: tuple[Path, Path, Path, Path]) -> None:
    v100, a100, v100_side, a100_side = two_nodes
    with pytest.raises(InputError) as exc:  # by order the A100 side goes with the V100 log: the name column disagrees
        ingest_files([v100, a100], job_side=[a100_side, v100_side])
    assert ("gpu-type-mismatch", f"{v100}: column name") in codes(exc)
    named = write_side(tmp_path / "named.jobs.json", "v100", "ResNet-50", 40, log="a100-node.csv")
    with pytest.raises(InputError) as exc:  # the run names the other log than the one it is paired with
        ingest_files([v100, a100], job_side=[named, a100_side])
    assert codes(exc) == [("job-side-log-mismatch", f"{named}: runs[0].log")]


@pytest.mark.parametrize(
    ("name", "gpu_type"),
    [
        ("Tesla V100-SXM2-32GB", "v100"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("Tesla P100-PCIE-16GB", "p100"),
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("Quadro RTX 6000", None),
    ],
)
def test_gpu_type_from_the_nvidia_smi_name(name: str, gpu_type: str | None) -> None:
    assert gpu_type_from_name(name) == gpu_type


def test_log_gpu_type_comes_from_its_name_column_and_gpu_type_overrides(tmp_path: Path) -> None:
    log = write_named_log(tmp_path / "node.csv", "NVIDIA A100-SXM4-80GB", 350, 55, 400)
    (f,) = ingest_files([log])  # no job side, no --gpu-type
    assert {p.gpu_type for p in f.points} == {"a100"}
    assert any("NVIDIA A100-SXM4-80GB" in note for note in f.notes)
    (f,) = ingest_files([log], gpu_type="a100-80gb")
    assert {p.gpu_type for p in f.points} == {"a100-80gb"}
    write_named_log(log, "Quadro RTX 6000", 200, 30, 260)
    with pytest.raises(InputError) as exc:
        ingest_files([log])
    assert codes(exc) == [("unknown-gpu-model", "--gpu-type")]
    assert "Quadro RTX 6000" in exc.value.problems[0].message
    (f,) = ingest_files([log], gpu_type="rtx6000")
    assert {p.gpu_type for p in f.points} == {"rtx6000"}


def test_cli_ingest_without_a_job_side_says_what_it_did_not_learn(tmp_path: Path) -> None:
    log = write_named_log(tmp_path / "node.csv", "Tesla V100-SXM2-32GB", 200, 40, 300)
    out = tmp_path / "m.json"
    result = run("profiles", "ingest", log, "--library", "none", "--out", out)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "no job side: throughput, steps and pair rates not learned" in said
    assert sorted(p.kind for p in read_points(out)) == ["idle", "top_limit"]


def test_a_job_side_is_never_dropped(tmp_path: Path, two_nodes: tuple[Path, Path, Path, Path]) -> None:
    """One job side: its runs must name logs that were given; a job side with no nvidia-smi log is refused."""
    v100, _, v100_side, _ = two_nodes
    stray = write_side(tmp_path / "stray.jobs.json", "v100", "ResNet-50", 40, log="other-node.csv")
    with pytest.raises(InputError) as exc:
        ingest_files([v100], job_side=stray)
    assert codes(exc) == [("job-side-log-mismatch", f"{stray}: runs[0].log")]
    with pytest.raises(InputError) as exc:
        ingest_files([WINDOWS / "V100+resnet18+gpu0.csv"], job_side=v100_side, steps_per_window=40)
    assert codes(exc) == [("job-side-count", "--job-side")]
