"""The surfaces (one per command, or per kind of input a command reads) and how a case of one is drawn.

A case is fully determined by its surface and an integer seed: ``random.Random(f"{surface}:{seed}")`` picks what to
mutate (one input file, with a weight, or one option) and how (:mod:`tests.hostile.mutate`). Every case runs in its
own folder: inputs under ``in/`` (copies of the seeds), outputs under ``out/``.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from tests.hostile import mutate
from tests.hostile.seeds import seed_dir, set_instance_name

FILE_KIND_SHARE = 0.06
"""Share of file mutations that replace the file by a directory or remove it."""
OUT_EQUALS_INPUT_SHARE = 0.08
"""Share of option mutations that point the output option at one of the inputs."""
OUT_HOLDS_INPUT_SHARE = 0.5
"""Share of those that point it at the folder holding the inputs instead (drawn apart: seeds of issue 22 keep
their other draws)."""
PURE_OUT_SHARE = 0.5
"""Share of out cases whose inputs are left valid (else one input is mutated too)."""
SWAP_SHARE = 0.1
"""Share of file mutations of an input with swaps that replace it whole by another round's file."""
PREVIOUS_TEXT = b"an output of an earlier run\n"
FOREIGN_FILE = "notes-of-someone-else.txt"


@dataclass(frozen=True)
class Input:
    """An input file of a surface: its role in the argument template, its seed files (one is drawn), its format."""

    role: str
    seeds: tuple[str, ...]
    fmt: str  # json, json+ (JSON and hostile text), csv, jobcsv (a CSV job list), yaml, smi, trace (Gavel)
    weight: float = 1.0
    swaps: tuple[str, ...] = ()
    """Other seeds that may replace this one whole: well-formed, but of another round or cluster (``file:swap``);
    the command must refuse the mismatch, but for those in ``swaps_may_pass``."""
    swaps_may_pass: tuple[str, ...] = ()


@dataclass(frozen=True)
class Option:
    """A command option: its valid value, the kind of hostile values it gets, and whether it is always passed."""

    flag: str
    kind: str  # float, int, float-list, int-list, text (see mutate.OPTION_VALUES)
    value: str
    always: bool = False
    extra: tuple[str, ...] = ()
    """Hostile values of this option only (added to those of its kind)."""
    choices: tuple[str, ...] = ()
    """Other valid values: a case draws its base value among ``value`` and these (e.g. a real solver)."""


@dataclass(frozen=True)
class Surface:
    """A command and the inputs and options a case of it may mutate.

    ``args`` is the argument template: ``{ROLE}`` is an input's path, ``{in}`` the input folder, ``{out}`` the output
    path (``out/`` + ``out``). ``exit1`` is the text that makes exit 1 correct (an invalid plan), if any.
    """

    name: str
    args: tuple[str, ...]
    inputs: tuple[Input, ...]
    options: tuple[Option, ...]
    out: str
    out_flag: str = "--out"
    exit1: str | None = None
    option_share: float = 0.3
    out_share: float = 0.0
    """Share of cases whose output is set against an input, an existing output or a folder (issue 41 surfaces)."""
    extra_outs: tuple[str, ...] = ()
    """Other output options (``--instance-out``) an out case may point at an input."""
    out_folder: bool = False
    """The output is a folder (``launch --out``): its out cases are a previous launch and a foreign folder."""
    previous: tuple[str, ...] = ()
    """Outputs (names under ``out/``) an earlier run left: a failed case must leave them as they were."""
    compare: tuple[str, ...] = ()
    """Outputs (names under ``out/``) a control run must write alike (YAML implicit-typing cases)."""
    kind: str = "cli"
    """``cli`` (a wattplan command), or an in-process surface of :mod:`tests.hostile.inprocess`: ``agent``,
    ``prometheus``, ``api``."""


def replace_weight(item: Input, weight: float) -> Input:
    """``item`` with another weight (0: copied, never mutated)."""
    return Input(item.role, item.seeds, item.fmt, weight, item.swaps, item.swaps_may_pass)


@dataclass
class Case:
    """One drawn case: the command line, the folder it runs in, what was mutated and where it must be named."""

    surface: Surface
    seed: int
    argv: list[str]
    folder: Path
    mutation: str
    kind: str
    """The mutation without its place: ``json:null``, ``csv:unit-suffix``, ``file:missing``, ``option:float``."""
    names: list[str] = field(default_factory=list)
    """Any of these in the output locates the error (the mutated file's name, the option)."""
    must_refuse: bool = False
    """Exit 0 is a defect: the input must be refused (a duplicate key or column, several YAML documents)."""
    control: tuple[Path, bytes] | None = None
    """The mutated file's content with the mutated YAML scalar quoted: a run on it must write the same outputs."""
    protected: tuple[Path, ...] = ()
    """Files outside ``in/`` that must not change (a previous launch's records, a foreign folder's files)."""
    previous: tuple[Path, ...] = ()
    """Outputs an earlier run left: unchanged after a failed case."""

    @property
    def inputs(self) -> Path:
        """The folder of the case's input files."""
        return self.folder / "in"

    @property
    def outputs(self) -> Path:
        """The folder the case's outputs go to."""
        return self.folder / "out"


SEEDS_INSTANCE = ("instance.json", "default.json")
SEEDS_TRACE = ("tiny.trace",)
SEEDS_SMI = ("smi_units.csv", "smi_nounits.csv")
SIM_OPTIONS = (
    Option("--round-s", "float", "360"),
    Option("--power-cap-w", "float", "2000"),
    Option("--energy-budget-kwh", "float", "5"),
    Option("--noise", "float", "0.1"),
    Option("--zeus-eta", "float", "0.5"),
    Option("--delta", "float", "0.03"),
    Option("--max-jobs", "int", "3"),
    Option("--start-s", "float", "0"),
    Option("--end-s", "float", "1000"),
    Option("--restart-s", "float", "10"),
    Option("--min-pair-rate", "float", "0.5"),
    Option("--poll-s", "float", "1"),
    Option("--max-rounds", "int", "3", always=True),
    Option("--time-limit", "float", "1", always=True),
    Option("--threads", "int", "1"),
    Option("--workers", "int", "1"),
    Option("--gpus-per-node", "int", "8"),
    Option("--node-power-w", "float", "230"),
    Option("--max-jct-increase", "float", "10"),
    Option(
        "--policy", "text", "fifo-max", always=True, extra=("all", "eaco", "powerflow"), choices=("wattplan", "zeus")
    ),
    Option("--cluster", "text", "v100:8", always=True, extra=("v100:0", "v100:-8", "v100:1e308", "v100:\u2078")),
    Option("--seed", "int", "0"),
)
SIM_ARGS = ("simulate", "{trace}", "--no-plots", "-q", "--out", "{out}")
FRONTIER_OPTIONS = (
    Option("--deltas", "float-list", "0.1", always=True),
    Option("--max-jct-increase", "float-list", "5", always=True),
    Option("--baselines", "text", "fifo-max", always=True, extra=("all", "zeus,zeus", "nope")),
    Option("--workers", "int", "1", always=True),
    Option("--time-limit", "float", "1", always=True),
    Option("--max-jobs", "int", "3", always=True),
    Option("--cluster", "text", "v100:8", always=True, extra=("v100:0", "p100:8", "v100:8,v100:8")),
    Option("--round-s", "float", "360"),
    Option("--poll-s", "float", "1"),
    Option("--power-cap-w", "float", "2000"),
    Option("--energy-budget-kwh", "float", "5"),
    Option("--start-s", "float", "0"),
    Option("--end-s", "float", "1000"),
    Option("--signal-start", "text", "2022-01-01T00:00:00", extra=("0001-01-01T00:00", "2022-13-01", "9999-12-31")),
    Option("--seed", "int", "0"),
)
INGEST_OPTIONS = (Option("--gpu-type", "text", "v100"), Option("--format", "text", "auto", extra=("nvidia-smi",)))

SURFACES: tuple[Surface, ...] = (
    Surface(
        "plan",
        ("plan", "{instance}", "-q", "--out", "{out}"),
        (Input("instance", SEEDS_INSTANCE, "json"),),
        (
            Option("--solver", "text", "greedy", always=True, extra=("pulp:NOPE", "scip"), choices=("highs", "cbc")),
            Option("--time-limit", "float", "2", always=True),
            Option("--gap", "float", "0.01"),
            Option("--threads", "int", "1"),
            Option("--seed", "int", "0"),
            Option("--budget-j", "float", "50000"),
            Option("--power-cap-w", "float", "500"),
            Option("--delta", "float", "0.03"),
        ),
        "plan.json",
    ),
    Surface(
        "validate",
        ("validate", "{instance}", "{plan}"),
        (Input("instance", ("instance.json",), "json"), Input("plan", ("plan.json", "plan2.json"), "json", 2.0)),
        (),
        "",
        out_flag="",
        exit1="invalid plan",
        option_share=0.0,
    ),
    Surface(
        "diff",
        ("diff", "{old}", "{new}", "--old-instance", "{instance}", "--new-instance", "{instance}", "--json", "{out}"),
        (
            Input("old", ("plan.json",), "json", 2.0),
            Input("new", ("plan2.json",), "json", 2.0),
            Input("instance", ("instance.json",), "json"),
        ),
        (Option("--format", "text", "table", extra=("json",)),),
        "diff.json",
        out_flag="--json",
        exit1="invalid plan",
        option_share=0.1,
    ),
    Surface(
        "instance check",
        ("instance", "check", "{instance}"),
        (Input("instance", SEEDS_INSTANCE, "json"),),
        (),
        "",
        out_flag="",
        option_share=0.0,
    ),
    Surface(
        "instance sweep",
        ("instance", "sweep", "--out", "{out}"),
        (),
        (
            Option("--sizes", "int-list", "3", always=True, extra=("100001", "2000000")),
            Option("--budgets", "float-list", "0.5", always=True, extra=("0", "1.5")),
            Option("--seeds", "int-list", "0", always=True),
            Option("--family", "text", "sampled", always=True, extra=("long", "trace")),
            Option("--gpu-mix", "text", "v100:1", always=True, extra=("v100:0", "a100:1", "v100:nan", "v100:1e308")),
            Option("--jobs-per-node", "float", "4", always=True, extra=("1e-6", "65")),
        ),
        "sweep",
        option_share=1.0,
    ),
    Surface(
        "instance from-trace",
        ("instance", "from-trace", "{trace}", "--vc", "6214e9", "--profiles", "{library}", "--out", "{out}"),
        (Input("trace", ("tiny.trace", "philly.csv"), "trace"), Input("library", ("library.json",), "json", 0.5)),
        (
            Option("--cluster", "text", "v100:8", always=True, extra=("v100:0", "v100:-8", "v100:\u2078")),
            Option("--at", "float", "0", always=True),
            Option("--max-jobs", "int", "3", always=True),
            Option("--round-s", "float", "360"),
            Option("--budget-fraction", "float", "0.5"),
            Option("--budget-j", "float", "50000"),
            Option("--power-cap-w", "float", "2000"),
            Option("--gpus-per-node", "int", "8"),
            Option("--node-power-w", "float", "230"),
            Option("--restart-s", "float", "10"),
            Option("--min-pair-rate", "float", "0.5"),
            Option("--seed", "int", "0"),
        ),
        "instance.json",
    ),
    Surface(
        "launch",
        ("launch", "{plan}", "--instance", "{instance}", "--node-map", "{nodes}", "--out", "{out}"),
        (
            Input("plan", ("plan.json", "plan2.json"), "json", 2.0),
            Input("instance", ("instance.json",), "json"),
            Input("nodes", ("nodes.json",), "json", 0.5),
        ),
        (
            Option("--to", "text", "shell", always=True, extra=("slurm", "kubernetes")),
            Option("--partition", "text", "gpu"),
            Option("--namespace", "text", "default"),
            Option("--image", "text", "cuda:12"),
        ),
        "launch",
        exit1="invalid plan",
        option_share=0.2,
    ),
    Surface(
        "profiles ingest nvidia-smi",
        ("profiles", "ingest", "{log}", "--job-side", "{side}", "--library", "none", "--out", "{out}"),
        (Input("log", SEEDS_SMI, "smi"), Input("side", ("jobs.json",), "json", 0.2)),
        INGEST_OPTIONS,
        "lib.json",
        option_share=0.15,
    ),
    Surface(
        "profiles ingest job side",
        ("profiles", "ingest", "{log}", "--job-side", "{side}", "--library", "none", "--out", "{out}"),
        (Input("log", SEEDS_SMI, "smi", 0.0), Input("side", ("jobs.json",), "json")),
        INGEST_OPTIONS,
        "lib.json",
        option_share=0.1,
    ),
    Surface(
        "profiles ingest zeus windows",
        ("profiles", "ingest", "{windows}", "--library", "none", "--out", "{out}"),
        (Input("windows", ("V100+resnet18+gpu0.csv",), "csv"),),
        (
            Option("--steps-per-window", "float", "40", always=True),
            Option("--job-type", "text", "ResNet-18"),
            Option("--gpu-type", "text", "v100"),
        ),
        "lib.json",
        option_share=0.2,
    ),
    Surface(
        "profiles ingest zeus summary",
        ("profiles", "ingest", "{summary}", "--library", "none", "--out", "{out}"),
        (Input("summary", ("summary_power_v100.csv",), "csv"),),
        (Option("--gpu-type", "text", "v100"),),
        "lib.json",
        option_share=0.1,
    ),
    Surface(
        "profiles ingest library",
        ("profiles", "ingest", "{log}", "--job-side", "{side}", "--library", "{library}", "--out", "{out}"),
        (
            Input("library", ("library.json", "measurements.json"), "json"),
            Input("log", ("smi_units.csv",), "smi", 0.0),
            Input("side", ("jobs.json",), "json", 0.0),
        ),
        (),
        "lib.json",
        option_share=0.05,
    ),
    Surface(
        "profiles fit",
        ("profiles", "fit", "{library}", "-m", "{measurements}", "--out", "{out}"),
        (Input("library", ("library.json",), "json", 2.0), Input("measurements", ("measurements.json",), "json")),
        (),
        "fit.json",
        option_share=0.05,
    ),
    Surface(
        "profiles check",
        ("profiles", "check", "{library}", "{measurements}", "--json", "{out}"),
        (Input("library", ("library.json",), "json"), Input("measurements", ("measurements.json",), "json")),
        (Option("--map", "text", "x=y", extra=("=", "a=b=c", "[/]=x")),),
        "check.json",
        out_flag="--json",
        option_share=0.1,
    ),
    Surface(
        "profiles truth",
        ("profiles", "truth", "{library}", "--out", "{out}"),
        (Input("library", ("library.json",), "json"),),
        (
            Option("--alpha", "float", "0.08"),
            Option("--cap", "float", "3.3"),
            Option("--pair-factor", "float", "0.6", extra=("100",)),
            Option("--idle-power-w", "float", "41", extra=("-300",)),
            Option("--node-power-w", "float", "230"),
            Option("--cap-spread", "float", "0.2"),
        ),
        "truth.json",
        option_share=0.4,
    ),
    Surface(
        "simulate gavel",
        (*SIM_ARGS, "--profiles", "{library}", "--truth", "{truth}"),
        (
            Input("trace", SEEDS_TRACE, "trace", 2.0),
            Input("library", ("library.json",), "json", 0.5),
            Input("truth", ("truth.json",), "json", 0.5),
        ),
        SIM_OPTIONS,
        "sim",
    ),
    Surface(
        "simulate philly",
        (*SIM_ARGS, "--vc", "6214e9"),
        (Input("trace", ("philly.csv",), "csv"),),
        SIM_OPTIONS,
        "sim",
        option_share=0.15,
    ),
    Surface(
        "simulate signals",
        (*SIM_ARGS, "--carbon", "{carbon}", "--price", "{price}"),
        (
            Input("trace", SEEDS_TRACE, "trace", 0.0),
            Input("carbon", ("carbon.csv",), "csv"),
            Input("price", ("price.csv",), "csv"),
        ),
        (
            Option("--signal-start", "text", "2022-01-01T00:00:00", extra=("0001-01-01T00:00", "2022-13-01")),
            Option("--policy", "text", "fifo-max", always=True, extra=("wattplan",)),
            Option("--cluster", "text", "v100:8", always=True),
            Option("--max-rounds", "int", "3", always=True),
            Option("--time-limit", "float", "1", always=True),
            Option("--round-s", "float", "3600"),
        ),
        "sim",
        option_share=0.15,
    ),
    Surface(
        "frontier",
        ("frontier", "{trace}", "--carbon", "{carbon}", "--out", "{out}"),
        (Input("trace", SEEDS_TRACE, "trace"), Input("carbon", ("carbon.csv",), "csv", 0.5)),
        FRONTIER_OPTIONS,
        "front",
        option_share=0.4,
    ),
    Surface(
        "bench",
        ("bench", "{in}/set", "-q", "--out", "{out}"),
        (Input("manifest", ("set/manifest.csv",), "csv"), Input("set_instance", ("set/{instance}",), "json")),
        (
            Option("--solvers", "text", "greedy", always=True, extra=("greedy,greedy", "nope"), choices=("highs",)),
            Option("--time-limit", "float", "1", always=True),
            Option("--seeds", "int", "1"),
            Option("--workers", "int", "1"),
            Option("--gap", "float", "0.01"),
            Option("--threads", "int", "1"),
            Option("--memory-limit-mb", "int", "4096"),
            Option("--grace", "float", "2"),
        ),
        "bench",
        option_share=0.35,
    ),
)

# ---------------------------------------------------------------------------------------------- issue 41 surfaces

JOB_LISTS = (Input("jobs", ("jobs.yaml",), "yaml", 2.0), Input("jobs", ("jobs.csv",), "jobcsv", 1.0))
JOB_LIST = Input("jobs", ("jobs.yaml", "jobs.yaml", "jobs.csv"), "joblist", 2.0)
"""A YAML job list (two cases in three) or a CSV one."""
CLUSTER = Input("cluster", ("cluster.yaml",), "yaml")
OPERATOR_PLAN = Input("plan", ("op_plan.json",), "json+", 2.0, swaps=("plan7.json", "plan8.json", "plan.json"))
OPERATOR_INSTANCE = Input("instance", ("op_instance.json",), "json+", 1.0, swaps=("inst7.json", "instance.json"))
PLAN_SOLVER = (
    Option("--solver", "text", "greedy", always=True, extra=("highs:threads=1",)),
    Option("--time-limit", "float", "2", always=True),
    Option("--threads", "int", "1", always=True),
    Option("--budget-j", "float", "50000"),
    Option("--profiles", "text", "default", extra=("none", "/dev/null", "/etc/passwd")),
)

OPERATOR_SURFACES: tuple[Surface, ...] = (
    Surface(
        "from-jobs yaml",
        ("instance", "from-jobs", "{jobs}", "--cluster", "{cluster}", "--out", "{out}"),
        (JOB_LISTS[0], replace_weight(CLUSTER, 0.0)),
        (Option("--profiles", "text", "default", extra=("none", "/etc/passwd")),),
        "instance.json",
        option_share=0.03,
        out_share=0.06,
        previous=("instance.json",),
        compare=("instance.json",),
    ),
    Surface(
        "from-jobs csv",
        ("instance", "from-jobs", "{jobs}", "--cluster", "{cluster}", "--out", "{out}"),
        (JOB_LISTS[1], replace_weight(CLUSTER, 0.0)),
        (Option("--profiles", "text", "default", extra=("none", "/etc/passwd")),),
        "instance.json",
        option_share=0.03,
        out_share=0.06,
        previous=("instance.json",),
        compare=("instance.json",),
    ),
    Surface(
        "cluster file",
        ("instance", "from-jobs", "{jobs}", "--cluster", "{cluster}", "--out", "{out}"),
        (replace_weight(JOB_LISTS[0], 0.0), CLUSTER),
        (),
        "instance.json",
        option_share=0.0,
        out_share=0.04,
        previous=("instance.json",),
        compare=("instance.json",),
    ),
    Surface(
        "plan jobs",
        ("plan", "{jobs}", "--cluster", "{cluster}", "-q", "--out", "{out}"),
        (JOB_LIST, CLUSTER),
        PLAN_SOLVER,
        "plan.json",
        option_share=0.08,
        out_share=0.08,
        extra_outs=("--instance-out",),
        previous=("plan.json", "plan.instance.json"),
        compare=("plan.instance.json",),
    ),
    Surface(
        "instance next",
        ("instance", "next", "{plan}", "--instance", "{instance}", "--out", "{out}"),
        (OPERATOR_PLAN, OPERATOR_INSTANCE),
        (),
        "next.json",
        option_share=0.0,
        out_share=0.08,
        previous=("next.json",),
    ),
    Surface(
        "instance next jobs",
        (
            "instance",
            "next",
            "{plan}",
            "--instance",
            "{instance}",
            "--jobs",
            "{jobs}",
            "--cluster",
            "{cluster}",
            "--out",
            "{out}",
        ),  # fmt: skip
        (replace_weight(OPERATOR_PLAN, 0.5), replace_weight(OPERATOR_INSTANCE, 0.5), JOB_LIST, CLUSTER),
        (),
        "next.json",
        option_share=0.0,
        out_share=0.06,
        previous=("next.json",),
        compare=("next.json",),
    ),
    Surface(
        "launch from",
        ("launch", "{plan}", "--instance", "{instance}", "--from", "{old}", "--to", "slurm", "--out", "{out}"),
        (
            Input("plan", ("plan8.json",), "json+", 2.0, swaps=("plan7.json", "op_plan.json")),
            Input("instance", ("inst8.json",), "json+", 1.0, swaps=("inst7.json", "op_instance.json")),
            Input("old", ("plan7.json",), "json+", 1.5, ("plan8.json", "op_plan.json"), ("plan8.json",)),
        ),
        (
            Option("--partition", "text", "gpu"),
            Option("--time-grace-s", "int", "300"),
            Option("--signal-lead-s", "int", "60"),
            Option("--node-prefix", "text", "n-"),
        ),
        "launch",
        exit1="invalid plan",
        option_share=0.1,
        out_share=0.25,
        out_folder=True,
    ),
    Surface(
        "launch operator",
        ("launch", "{plan}", "--instance", "{instance}", "--out", "{out}"),
        (Input("plan", ("op_plan.json",), "json+", 0.5), Input("instance", ("op_instance.json",), "json+", 2.0)),
        (
            Option("--to", "text", "shell", always=True, extra=("nope",), choices=("slurm", "kubernetes")),
            Option("--partition", "text", "gpu"),
            Option("--namespace", "text", "default"),
            Option("--image", "text", "cuda:12"),
        ),
        "launch",
        exit1="invalid plan",
        option_share=0.1,
        out_share=0.2,
        out_folder=True,
    ),
)
"""The surfaces of issue 41 that the command line reads: job lists and cluster files (``instance from-jobs``,
``plan JOBS --cluster``), a plan carried forward (``instance next``), follow-on and operator launches."""

SURFACES = SURFACES + OPERATOR_SURFACES
BY_NAME = {s.name: s for s in SURFACES}


def _seed_file(name: str) -> str:
    """A seed's path relative to the seed folder (the bench set's instance is named by the sweep)."""
    return name.replace("{instance}", set_instance_name())


def _mutate_file(path: Path, item: Input, rng: random.Random) -> mutate.Mutated:
    """Mutate the file at ``path`` in place (or replace it by a folder, another seed, or remove it)."""
    if item.swaps and rng.random() < SWAP_SHARE:
        other = rng.choice(item.swaps)
        shutil.copy(seed_dir() / other, path)
        return mutate.Mutated(b"", f"file:swap={other}", must_refuse=other not in item.swaps_may_pass)
    made = {
        "yaml": mutate.mutate_yaml,
        "jobcsv": mutate.mutate_job_csv,
        "json+": mutate.mutate_json_hostile,
        "squeue": mutate.mutate_squeue,
        "sinfo": mutate.mutate_sinfo,
        "scontrol": mutate.mutate_scontrol,
        "prometheus": mutate.mutate_prometheus,
        "promserver": mutate.mutate_prometheus_server,
    }
    fmt = ("yaml" if path.suffix == ".yaml" else "jobcsv") if item.fmt == "joblist" else item.fmt
    if fmt not in made:
        return mutate.Mutated(b"", _mutate_plain(path, fmt, rng))
    if rng.random() < FILE_KIND_SHARE and fmt in ("yaml", "jobcsv", "json+"):
        kind = rng.choice(mutate.FILE_KINDS)
        path.unlink()
        if kind == "directory":
            path.mkdir()
        return mutate.Mutated(b"", f"file:{kind}")
    result = made[fmt](path.read_bytes(), rng)
    path.write_bytes(result.content)
    return result


def _mutate_plain(path: Path, fmt: str, rng: random.Random) -> str:
    """Mutate the file at ``path`` in place (or replace it by a folder, or remove it); the mutation's label."""
    if rng.random() < FILE_KIND_SHARE:
        kind = rng.choice(mutate.FILE_KINDS)
        path.unlink()
        if kind == "directory":
            path.mkdir()
        return f"file:{kind}"
    data = path.read_bytes()
    if fmt in ("json", "json+"):
        new, label = mutate.mutate_json(data, rng)
    elif fmt == "trace":
        new, label = mutate.mutate_table(data, rng, "\t", False, "trace")
    elif fmt == "yaml":
        new, label = mutate.mutate_bytes(data, rng, "yaml")
    else:
        new, label = mutate.mutate_table(data, rng, ",", True, fmt)
    path.write_bytes(new)
    return label


def draw_case(surface: Surface, seed: int, root: Path) -> Case:
    """Case ``seed`` of ``surface`` in a new folder under ``root``: inputs copied, one thing mutated, argv made."""
    rng = random.Random(f"{surface.name}:{seed}")
    folder = root / f"{surface.name.replace(' ', '-')}-{seed}"
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "in").mkdir(parents=True)
    (folder / "out").mkdir()
    paths: dict[str, Path] = {}
    chosen: dict[str, str] = {}
    for item in surface.inputs:
        name = _seed_file(rng.choice(item.seeds))
        target = folder / "in" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        source = seed_dir() / name
        shutil.copy(source, target)
        paths[item.role] = target
        chosen[item.role] = name
    if "{in}/set" in surface.args:  # the bench set: the whole folder
        for extra in (seed_dir() / "set").iterdir():
            if not (folder / "in" / "set" / extra.name).exists():
                shutil.copy(extra, folder / "in" / "set" / extra.name)
    out_path = folder / "out" / surface.out if surface.out else None
    options = {o.flag: rng.choice((o.value, *o.choices)) for o in surface.options if o.always}
    mutable = [i for i in surface.inputs if i.weight > 0]
    names: list[str] = []
    must_refuse = False
    control: tuple[Path, bytes] | None = None
    extra_argv: list[str] = []
    protected: tuple[Path, ...] = ()
    out_rng = random.Random(f"{surface.name}:{seed}:out")  # apart: the draws of issue 22's surfaces stay
    out_case = bool(surface.out_share) and out_path is not None and out_rng.random() < surface.out_share
    if out_case and out_rng.random() < PURE_OUT_SHARE:  # valid inputs: the command gets as far as writing
        mutation, kind = "inputs as seeded", "out"
    elif surface.options and (not mutable or rng.random() < surface.option_share):
        if out_path is not None and paths and rng.random() < OUT_EQUALS_INPUT_SHARE:
            role = rng.choice(sorted(paths))
            out_path = paths[role]
            mutation = f"option:{surface.out_flag}={role}"
            kind = "option:out-is-input"
            names = [surface.out_flag, paths[role].name]
            if random.Random(f"{surface.name}:{seed}:holds").random() < OUT_HOLDS_INPUT_SHARE:
                out_path = paths[role].parent
                mutation = f"option:{surface.out_flag}=the folder of {role}"
                kind = "option:out-holds-input"
                names = [surface.out_flag, out_path.name]
        else:
            option = rng.choice(surface.options)
            value = mutate.option_value(option.kind, rng, list(option.extra))
            options[option.flag] = value
            mutation = f"option:{option.flag}={value!r}"[:120]
            kind = f"option:{option.kind}"
            names = [option.flag] + ([f"bad input: {value}"] if option.kind == "text" and value.strip() else [])
    else:
        item = rng.choices(mutable, weights=[i.weight for i in mutable])[0]
        result = _mutate_file(paths[item.role], item, rng)
        mutation = f"{chosen[item.role]}:{result.label}"
        kind = result.label.split("@")[0].split("=")[0].split("(")[0]
        names = [paths[item.role].name]
        if result.label.startswith("file:swap"):  # a mismatch of two files: naming either locates it
            names += [p.name for p in paths.values()]
        must_refuse = result.must_refuse
        if result.control is not None:
            control = (paths[item.role], result.control)
    if out_case and out_path is not None:
        out_path, extra_argv, protected, out_label = _out_case(surface, folder, out_path, paths, out_rng)
        mutation += f" + {out_label}"
        kind = f"out:{_out_kind(surface, out_label)}" if kind == "out" else kind
        names += [surface.out_flag, *surface.extra_outs, f"bad input: {out_path} ("]
    previous = _previous(surface, folder, out_path, out_rng)
    subst = {role: str(p) for role, p in paths.items()} | {"in": str(folder / "in"), "out": str(out_path)}
    argv = [a.format(**subst) for a in surface.args]
    for flag, value in options.items():
        argv.extend([flag, value])
    argv.extend(extra_argv)
    return Case(surface, seed, argv, folder, mutation, kind, names, must_refuse, control, protected, previous)


def _out_case(
    surface: Surface, folder: Path, out_path: Path, paths: dict[str, Path], rng: random.Random
) -> tuple[Path, list[str], tuple[Path, ...], str]:
    """An output set against what is there: an input, the inputs' folder, a previous launch, a foreign folder.

    Returns the output path, extra arguments, the files that must not change and the label.
    """
    choices = ["input", "input-folder"]
    if surface.extra_outs:
        choices.append("extra-out-is-input")
    if surface.out_folder:
        choices += ["previous-launch", "previous-launch", "foreign-folder"]
    how = rng.choice(choices)
    role = rng.choice(sorted(paths))
    if how == "input":
        return paths[role], [], (), f"{surface.out_flag} is {role}"
    if how == "input-folder":
        return paths[role].parent, [], (), f"{surface.out_flag} holds {role}"
    if how == "extra-out-is-input":
        flag = rng.choice(surface.extra_outs)
        return out_path, [flag, str(paths[role])], (), f"{flag} is {role}"
    if how == "previous-launch":
        shutil.copytree(seed_dir() / "previous_launch", out_path)
        records = [out_path / "submitted.tsv", out_path / "applied.tsv", *sorted((out_path / "logs").iterdir())]
        return out_path, [], tuple(records), f"{surface.out_flag} is a previous launch"
    out_path.mkdir(parents=True)
    (out_path / FOREIGN_FILE).write_text("not wattplan's\n")
    return out_path, [], (out_path / FOREIGN_FILE,), f"{surface.out_flag} is a foreign non-empty folder"


def _out_kind(surface: Surface, label: str) -> str:
    """The kind of an out case from its label (``--out is a previous launch`` -> ``previous-launch``)."""
    if "previous launch" in label:
        return "previous-launch"
    if "foreign" in label:
        return "foreign-folder"
    if " holds " in label:
        return "holds-input"
    return "is-input" if label.startswith(surface.out_flag + " ") else "extra-out-is-input"


def _previous(surface: Surface, folder: Path, out_path: Path | None, rng: random.Random) -> tuple[Path, ...]:
    """The outputs an earlier run left (half the cases of a surface with ``previous``), which a failure keeps."""
    if not surface.previous or out_path is None or rng.random() < 0.5:
        return ()
    made = []
    for name in surface.previous:
        path = folder / "out" / name
        if path.exists() or path.parent != folder / "out":
            continue
        path.write_bytes(PREVIOUS_TEXT)
        made.append(path)
    return tuple(made)
