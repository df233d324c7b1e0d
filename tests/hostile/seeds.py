"""Valid seed inputs of every kind the commands read, built once per process from the shipped data.

Each seed is a small file (a few jobs, rows or hours) so a case that stays valid after its mutation finishes fast:
the tiny test instance and ``instances/default.json``; plans made by ``wattplan plan`` on the tiny instance; the
shipped profile library and a truth made from it; nvidia-smi logs and their job side from ``tests/data``; a Zeus
profile window file and the head of a Zeus power summary; a five-job Gavel trace, the head of the Philly CSV and of
the CISO carbon file and a price file on the same hours; measurements ingested from the Zeus summary; and a bench
set written by ``wattplan instance sweep`` (its manifest and instance).

The operator's surfaces (issue 41): a YAML and a CSV job list of three jobs and a cluster file of two GPU types
(a node down, one with an unmanaged GPU); the instance ``instance from-jobs`` makes of them and its greedy plan (for
``instance next``); rounds 7 and 8 of :mod:`tests.followon_rounds` with their plans (for ``launch --from``) and a
folder a first launch of round 7 wrote, with the ``submitted.tsv``, ``applied.tsv`` and job log ``apply.sh`` and
the jobs would have added; the agent's recorded Slurm answers (``squeue --json`` with the job types renamed to
profiled ones, ``sinfo --json``, ``scontrol show job -d``) and two Prometheus answers (a vector and a matrix).
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
from tests.followon_rounds import two_rounds
from wattplan.planner.contracts.instance_io import instance_to_doc
from wattplan.planner.contracts.plan import plan_to_doc

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "instances" / "sources"
SMI = ROOT / "tests" / "data" / "nvidia_smi"
AGENT = ROOT / "tests" / "data" / "agent"
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


JOBS_YAML = f"""jobs:
  - id: train-a
    type: {R50}
    gpus: 2
    remaining_s: 3600
    allowed_gpus: [1, 2, 4]
    weight: 1.5
    command: [python, train.py, --lr, "0.1"]
    workdir: /home/ana/run
    user: ana
    env:
      NCCL_DEBUG: INFO
      OMP_NUM_THREADS: "4"
  - id: lm-b
    type: LM (batch size 20)
    gpus: 1
    remaining_steps: 5000
    measured_on: v100
    command: python lm.py --epochs 3
    workdir: /home/bob
    user: bob
  - id: a3c-c
    type: {A3C}
    gpus: 1
    remaining_steps: 2000
"""
JOBS_CSV = f"""id,type,gpus,remaining_steps,remaining_s,measured_on,allowed_gpus,weight,command,workdir,user
train-a,{R50},2,,3600,,1 2 4,1.5,python train.py --lr 0.1,/home/ana/run,ana
lm-b,LM (batch size 20),1,5000,,v100,,1,python lm.py --epochs 3,/home/bob,bob
a3c-c,{A3C},1,2000,,,,,,,
"""
CLUSTER_YAML = """round_s: 360
power_cap_kw: 6
objective: energy
gpu_types:
  - name: v100
    gpus_per_node: 4
    node_power_w: 230
    nodes: [gpu-a1, gpu-a2, gpu-a3]
    down: [gpu-a3]
  - name: p100
    gpus_per_node: 4
    nodes: 2
unmanaged:
  - node: gpu-a2
    gpus: [3]
"""
AGENT_TYPES = {"resnet18": "ResNet-18 (batch size 64)", "bert": "Transformer (batch size 64)"}
SCONTROL = """JobId=5 JobName=other
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   JobState=RUNNING Reason=None Dependency=(null)
   NodeList=v100-0
     Nodes=v100-0 CPU_IDs=0 Mem=0 GRES=gpu:v100:1(IDX:0)
   Comment=not managed
"""
PROM_VECTOR = {
    "status": "success",
    "data": {
        "resultType": "vector",
        "result": [
            {"metric": {"__name__": "wattplan_steps_total", "job": "1", "Hostname": "v100-0"},
             "value": [1700000000.5, "1234"]},
            {"metric": {"__name__": "wattplan_steps_total", "job": "2", "Hostname": "v100-1"},
             "value": [1700000000.5, "NaN"]},
        ],
    },
}  # fmt: skip
PROM_MATRIX = {
    "status": "success",
    "data": {
        "resultType": "matrix",
        "result": [
            {"metric": {"__name__": "DCGM_FI_DEV_POWER_USAGE", "gpu": "0", "Hostname": "v100-0", "hpc_job": "1"},
             "values": [[1700000000, "151.5"], [1700000001, "152.25"], [1700000002, "+Inf"]]},
        ],
    },
}  # fmt: skip


def agent_queue_text() -> str:
    """``squeue --json`` of tests/data/agent/squeue_held.json, its job types renamed to profiled ones.

    Jobs 1-3 are held by their user and opt in, job 4 has a malformed opt-in, job 5 is not managed and runs.
    """
    doc = json.loads((AGENT / "squeue_held.json").read_text())
    for job in doc["jobs"]:
        for old, new in AGENT_TYPES.items():
            job["comment"] = job["comment"].replace(f"type={old};", f"type={new};")
    return json.dumps(doc, indent=1)


def _write_operator_inputs(d: Path) -> None:
    """Job lists, a cluster file, an instance and plan made from them, follow-on rounds, the agent's answers."""
    (d / "jobs.yaml").write_text(JOBS_YAML)
    (d / "jobs.csv").write_text(JOBS_CSV)
    (d / "cluster.yaml").write_text(CLUSTER_YAML)
    _cli("instance", "from-jobs", d / "jobs.yaml", "--cluster", d / "cluster.yaml", "--out", d / "op_instance.json")
    _cli("plan", d / "op_instance.json", "--solver", "greedy", "-q", "--out", d / "op_plan.json")
    inst7, plan7, inst8, plan8 = two_rounds()
    for name, doc in (("inst7.json", instance_to_doc(inst7)), ("inst8.json", instance_to_doc(inst8)),
                      ("plan7.json", plan_to_doc(plan7)), ("plan8.json", plan_to_doc(plan8))):  # fmt: skip
        (d / name).write_text(json.dumps(doc, indent=1))
    prev = d / "previous_launch"
    _cli("launch", d / "plan7.json", "--instance", d / "inst7.json", "--to", "slurm", "--out", prev)
    (prev / "submitted.tsv").write_text("101\tjob\tkeep\n102\tjob\ta-re-set\n")
    (prev / "applied.tsv").write_text("extend 101\n")
    (prev / "logs").mkdir(exist_ok=True)
    (prev / "logs" / "keep.101.out").write_text("step 900 of 1000\n")
    (d / "squeue.json").write_text(agent_queue_text())
    shutil.copy(AGENT / "sinfo_mixed.json", d / "sinfo.json")
    (d / "scontrol.txt").write_text(SCONTROL)
    (d / "prom_vector.json").write_text(json.dumps(PROM_VECTOR, indent=1))
    (d / "prom_matrix.json").write_text(json.dumps(PROM_MATRIX, indent=1))


@functools.cache
def seed_dir() -> Path:
    """The folder of seed files (built on the first call, removed when the process exits)."""
    folder = Path(tempfile.mkdtemp(prefix="wattplan-hostile-seeds-"))
    atexit.register(shutil.rmtree, folder, True)
    _write_inputs(folder)
    _write_operator_inputs(folder)
    return folder


def set_instance_name() -> str:
    """The file name of the bench set's one instance (as the sweep named it)."""
    return next(p.name for p in (seed_dir() / "set").glob("*.json"))
