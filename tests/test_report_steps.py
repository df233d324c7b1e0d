"""``node_files/report_steps.py``: a training job publishes its steps in Prometheus' text format (issue 45, item 5).

The file it writes is what node_exporter's textfile collector serves; read here by ``prometheus_client``'s own
parser, and its sample is read by the agent's reader of steps as if Prometheus had served it. node_exporter itself
is not run here.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from wattplan.planner.agent.observations import STEPS_DONE
from wattplan.planner.agent.prometheus import Sample

SCRIPT = Path(__file__).resolve().parent.parent / "planner" / "agent" / "node_files" / "report_steps.py"


def _module():  # loaded as a job would: by its path, outside the package
    spec = importlib.util.spec_from_file_location("report_steps", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_job_publishes_its_steps_as_the_agent_reads_them(tmp_path: Path, monkeypatch) -> None:
    rs = _module()
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("WATTPLAN_PROGRESS_DIR", str(tmp_path))
    assert rs.report_steps(1500) and rs.report_steps(2500.5)  # rewritten, never appended
    files = list(tmp_path.iterdir())
    assert [f.name for f in files] == ["wattplan_job_4242.prom"]  # no temporary file left
    families = list(text_string_to_metric_families(files[0].read_text()))
    assert [(f.name, f.type) for f in families] == [(STEPS_DONE, "gauge")]
    (sample,) = families[0].samples
    assert sample.labels == {"hpc_job": "4242"} and sample.value == 2500.5
    # the agent's reader of steps takes the sample as Prometheus would serve it
    from wattplan.planner.agent.observations import steps_by_job

    assert steps_by_job([Sample({"__name__": STEPS_DONE, **sample.labels}, 0.0, sample.value)]) == {
        "4242": (2500.5, None)
    }
    assert rs.remove_steps() and not any(tmp_path.iterdir())


def test_outside_a_slurm_job_or_on_a_bad_folder_it_does_nothing(tmp_path: Path, monkeypatch) -> None:
    rs = _module()
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert rs.report_steps(10, folder=str(tmp_path)) is False and not any(tmp_path.iterdir())
    assert rs.report_steps(10, job_id="1; rm -rf /", folder=str(tmp_path)) is False
    assert rs.report_steps(float("nan"), job_id="7", folder=str(tmp_path)) is False
    assert rs.report_steps(10, job_id="7", folder=str(tmp_path / "missing")) is False  # never raises


def test_it_needs_nothing_but_the_standard_library(tmp_path: Path) -> None:
    code = f"import sys; sys.path.insert(0, {str(SCRIPT.parent)!r}); import report_steps; print(sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert "wattplan" not in done.stdout and "prometheus_client" not in done.stdout
