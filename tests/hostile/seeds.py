"""Valid seed inputs of every kind the commands read, built once per process from the shipped data.

Each seed is a small file (a few jobs, rows or hours) so a case that stays valid after its mutation finishes fast:
the tiny test instance and ``instances/default.json``; plans made by ``wattplan plan`` on the tiny instance; the
shipped profile library and a truth made from it; nvidia-smi logs and their job side from ``tests/data``; a Zeus
profile window file and the head of a Zeus power summary; a five-job Gavel trace, the head of the Philly CSV and of
the CISO carbon file and a price file on the same hours; measurements ingested from the Zeus summary; and a bench
set written by ``wattplan instance sweep`` (its manifest and instance).
"""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from pathlib import Path

from typer.testing import CliRunner

from cli import app
from tests.conftest import tiny_instance_doc

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "instances" / "sources"
SMI = ROOT / "tests" / "data" / "nvidia_smi"
R50 = "ResNet-50 (batch size 64)"
A3C = "A3C"


def _head(path: Path, lines: int) -> str:
    """The first ``lines`` lines of a text file."""
    with path.open(encoding="utf-8") as fh:
        return "".join(line for _, line in zip(range(lines), fh, strict=False))


def _cli(*args: object) -> None:
    """Run a wattplan command that must succeed (it makes a seed)."""
    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "1000"})
    if result.exit_code != 0:
        raise RuntimeError(f"making a seed failed: wattplan {' '.join(map(str, args))}\n{result.output}")


def _write_inputs(d: Path) -> None:
    """Write every seed file into ``d``."""
    (d / "instance.json").write_text(json.dumps(tiny_instance_doc(), indent=1))
    shutil.copy(ROOT / "instances" / "default.json", d / "default.json")
    shutil.copy(ROOT / "instances" / "profiles" / "gavel_zeus_v100_p100.json", d / "library.json")
    _cli("plan", d / "instance.json", "--solver", "greedy", "-q", "--out", d / "plan.json")
    _cli("plan", d / "instance.json", "--solver", "greedy", "-q", "--budget-j", "60000", "--out", d / "plan2.json")
    (d / "nodes.json").write_text(json.dumps({"v100-0": "gpu-a", "v100-1": "gpu-b"}))
    _cli("profiles", "truth", d / "library.json", "--out", d / "truth.json")
    shutil.copy(SMI / "v100_units.csv", d / "smi_units.csv")
    shutil.copy(SMI / "v100_nounits.csv", d / "smi_nounits.csv")
    shutil.copy(SMI / "v100_units.jobs.json", d / "jobs.json")
    shutil.copy(SOURCES / "zeus" / "profile_data" / "V100+resnet18+gpu0.csv", d / "V100+resnet18+gpu0.csv")
    (d / "summary_power_v100.csv").write_text(_head(SOURCES / "zeus" / "summary_power_v100.csv", 25))
    rows = [(R50, 4000, 0, 1), (R50, 6000, 0, 2), (A3C, 9000, 100, 1), (R50, 3000, 400, 4), (A3C, 5000, 500, 1)]
    (d / "tiny.trace").write_text("".join(f"{t}\tcmd\t-n\t1\t{s}\t{a}\t{g}\n" for t, s, a, g in rows))
    philly = (SOURCES / "pollux" / "philly.csv").read_text().splitlines()
    (d / "philly.csv").write_text("\n".join([philly[0], *[r for r in philly[1:] if r.endswith("6214e9")][:8]]) + "\n")
    carbon = _head(SOURCES / "carbon" / "CISO_2022.csv", 49)
    (d / "carbon.csv").write_text(carbon)
    hours = [line.split(",")[0] for line in carbon.splitlines()[1:]]
    (d / "price.csv").write_text(
        "timestamp,usd_per_mwh\n" + "".join(f"{h},{40 + k % 7}\n" for k, h in enumerate(hours))
    )
    _cli("profiles", "ingest", d / "summary_power_v100.csv", "--library", "none", "--measurements-only", "--out",
         d / "measurements.json")  # fmt: skip
    _cli("instance", "sweep", "--out", d / "set", "--sizes", "3", "--budgets", "0.5", "--family", "sampled",
         "--gpu-mix", "v100:1", "--jobs-per-node", "4")  # fmt: skip


@functools.cache
def seed_dir() -> Path:
    """The folder of seed files (built on the first call, removed when the process exits)."""
    folder = Path(tempfile.mkdtemp(prefix="wattplan-hostile-seeds-"))
    atexit.register(shutil.rmtree, folder, True)
    _write_inputs(folder)
    return folder


def set_instance_name() -> str:
    """The file name of the bench set's one instance (as the sweep named it)."""
    return next(p.name for p in (seed_dir() / "set").glob("*.json"))
