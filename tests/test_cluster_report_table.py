"""``wattplan cluster report``'s tables: the summary with units, against another run, and one row per job."""

from __future__ import annotations

import json
from pathlib import Path

from wattplan.planner.cluster.report_table import job_headings, job_rows, summary_rows

REPORT = {
    "energy_kwh": 6.5,
    "gpu_energy_kwh": 5.0,
    "node_energy_kwh": 1.5,
    "gpu_idle_energy_kwh": None,
    "avg_jct_s": 2152.7,
    "p95_jct_s": 3419.4,
    "jobs_total": 2,
    "jobs_completed": 1,
    "jobs": [
        {"id": "12", "job_type": "A3C", "gpus": 1, "arrival_s": 0.0, "start_s": 31.0, "end_s": 931.0,
         "jct_s": 931.0, "energy_kwh": 0.1234, "state": "completed"},
        {"id": "13", "job_type": "LM (batch size 20)", "gpus": 2, "arrival_s": 60.0, "start_s": None,
         "end_s": None, "jct_s": None, "energy_kwh": None, "state": "not-started"},
    ],
}  # fmt: skip


def test_the_summary_names_each_unit_and_compares_with_another_run() -> None:
    rows = {row[0]: row[1:] for row in summary_rows(REPORT)}
    assert rows["energy, GPUs and nodes [kWh]"] == ("6.500",)
    assert rows["average JCT [s]"] == ("2,153",) and rows["GPU energy while idle [kWh]"] == ("-",)
    other = {**REPORT, "energy_kwh": 7.3, "avg_jct_s": 2023.0, "gpu_idle_energy_kwh": 0.5}
    against = {row[0]: row[1:] for row in summary_rows(REPORT, other)}
    assert against["energy, GPUs and nodes [kWh]"] == ("6.500", "7.300", f"{6.5 / 7.3:.3f}")
    assert against["average JCT [s]"] == ("2,153", "2,023", f"{2152.7 / 2023.0:.3f}")
    assert against["GPU energy while idle [kWh]"] == ("-", "0.500", "-")  # unknown here: no ratio


def test_one_row_per_job_with_the_columns_units() -> None:
    assert job_headings()[:4] == ["job", "type", "GPUs", "arrival [s]"] and "GPU energy [kWh]" in job_headings()
    first, second = job_rows(REPORT)
    assert first == ("12", "A3C", "1", "0", "31", "931", "931", "0.123", "completed")
    assert second[-1] == "not-started" and second[4:8] == ("-", "-", "-", "-")


def test_the_command_refuses_an_against_file_that_is_no_report(tmp_path: Path) -> None:
    from tests.helpers.commands import run

    bad = tmp_path / "other.json"
    bad.write_text(json.dumps([1, 2]))
    (tmp_path / "c").mkdir()
    result = run("cluster", "report", "--dir", tmp_path / "c", "--against", bad)
    assert result.exit_code == 2 and "is not a cluster report" in result.output and "Traceback" not in result.output
