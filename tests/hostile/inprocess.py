"""Surfaces that are not a command line: what the agent reads from the cluster, and the Python API (issue 41).

The agent's surfaces mutate one of the documents it reads (``squeue --json``, ``sinfo --json``, ``scontrol show
job -d``), run the document's parser, then one whole agent round against a fake Slurm that answers with it, and
record every call the round sent. Their oracle: the parser returns or refuses with a ``SlurmError``; the round
never raises; and no call names a job that did not opt in (its comment is exactly the documented
``wattplan:type=...;steps=...``, checked here by an implementation of its own), nor releases a job an
administrator held (``Reason=JobHeldAdmin``). The Prometheus surface runs the answer's parser: a read, or a
``PrometheusError``. The Prometheus server surface asks a fake server (a thread on a local port) that answers,
hangs, trickles, closes, resets, fails, redirects or stalls, through the agent's bounded client and retries: a
read or a ``PrometheusError``, within the budget (2 s) and a slack of 1.5 s, else ``unsafe-action``.

The API's surfaces call ``wattplan.plan`` (an instance path, an :class:`Instance` object with a bad field, or a job
list and cluster file) then ``PlanResult.write``, and ``wattplan.simulate``, with mutated keyword values and paths.
Their oracle: a result, or an :class:`InputError` naming the keyword or file; any other exception is a traceback.

A case's command line (``Case.argv``) holds ``key=value`` words: the surface's template, then the options drawn.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import re
import socket
import struct
import threading
import time
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hostile import mutate
from tests.hostile.surfaces import Case, Input, Option, Surface

AGENT_TYPES = ("ResNet-18 (batch size 64)", "Transformer (batch size 64)")
ACTION_VERBS = ("release", "hold", "uhold", "requeuehold", "requeue", "update", "suspend", "resume", "notify")


@dataclass
class Outcome:
    """What an in-process case did: 0 (a result) or 2 (a clear refusal), what it printed, what was wrong."""

    code: int
    output: str
    exception: BaseException | None = None
    unsafe: str | None = None


# ---------------------------------------------------------------------------------------------- the agent

_OPT_IN_TYPE = re.compile(r"[;=\x00-\x1f\x7f]")


def opted_in(comment: object) -> bool:
    """Whether a Slurm comment opts a job in, read by the documented rule (planner/agent/slurm_queue.py).

    ``wattplan:`` exactly at the start, then ``;``-separated ``key=value`` items, ``type`` and ``steps`` each once
    and no other key; the type non-empty without ``;``, ``=`` or control characters; the steps 1 to 18 ASCII
    digits, >= 1. Written apart from the product so that a looser product reader is caught.
    """
    if not isinstance(comment, str) or not comment.startswith("wattplan:"):
        return False
    fields: dict[str, str] = {}
    for part in comment[len("wattplan:") :].split(";"):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in ("type", "steps") or key in fields:
            return False
        fields[key] = value.strip()
    if set(fields) != {"type", "steps"}:
        return False
    steps = fields["steps"]
    return (
        bool(fields["type"])
        and not _OPT_IN_TYPE.search(fields["type"])
        and re.fullmatch(r"[0-9]{1,18}", steps) is not None
        and int(steps) >= 1
    )


class FakeSlurm:
    """Answers the agent's commands from the case's files; every other call succeeds and is recorded."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.seen: list[tuple[str, ...]] = []

    def _text(self, name: str) -> str:
        return (self.folder / name).read_bytes().decode("utf-8", "surrogateescape")

    def __call__(self, argv: Sequence[str]) -> Any:
        from wattplan.planner.agent.commands import CommandResult

        args = tuple(argv)
        self.seen.append(args)
        answers = {
            ("squeue", "--json"): "squeue.json",
            ("sinfo", "--json"): "sinfo.json",
            ("scontrol", "show", "job", "-d"): "scontrol.txt",
        }
        if args in answers:
            return CommandResult(args, 0, self._text(answers[args]), "")
        if args[:2] == ("scontrol", "show"):
            return CommandResult(args, 1, "", "unexpected query")
        return CommandResult(args, 0, "", "")


def _action_ids(argv: tuple[str, ...]) -> list[str]:
    """The job ids a Slurm call acts on (``scontrol VERB ID,ID``, ``scontrol update JobId=ID ...``, ``scancel``)."""
    if argv[:1] == ("scancel",):
        return [w for a in argv[1:] if not a.startswith("-") for w in a.split(",")]
    if argv[:1] != ("scontrol",) or len(argv) < 3:
        return []
    if argv[1] == "update":
        return [a.split("=", 1)[1] for a in argv[2:] if a.lower().startswith("jobid=")]
    if argv[1] in ACTION_VERBS:
        return [w for a in argv[2:] for w in a.split(",") if w]
    return []


def unsafe_actions(queue_text: str, seen: Sequence[tuple[str, ...]]) -> str | None:
    """The first call that acts on a job that did not opt in, or releases an administrator's hold; else None."""
    try:
        jobs = json.loads(queue_text).get("jobs")
    except (ValueError, AttributeError, RecursionError):  # the agent refuses such a document: no job to check
        jobs = None
    jobs = jobs if isinstance(jobs, list) else []
    by_id = {str(j.get("job_id")): j for j in jobs if isinstance(j, dict)}
    for argv in seen:
        for job_id in _action_ids(argv):
            job = by_id.get(job_id)
            if job is None or not opted_in(job.get("comment")):
                return f"{' '.join(argv)[:160]!r} acts on job {job_id!r}, which did not opt in"
            if argv[1:2] == ("release",) and job.get("state_reason") == "JobHeldAdmin":
                return f"{' '.join(argv)[:160]!r} releases job {job_id}, held by an administrator"
    return None


def _agent_round(case: Case) -> Outcome:
    """Parse the mutated document, then play one agent round against it (module docstring)."""
    from wattplan.planner.agent.commands import SlurmError
    from wattplan.planner.agent.loop import Agent, AgentConfig
    from wattplan.planner.agent.slurm_detail import read_job_gpus
    from wattplan.planner.agent.slurm_queue import read_nodes, read_queue
    from wattplan.planner.agent.store import AgentStore
    from wattplan.planner.contracts.request import PlanRequest
    from wattplan.planner.contracts.rules import RoundRules
    from wattplan.planner.profile_library.library import load_profile_library

    parsers = {"agent squeue": (read_queue, "squeue.json"), "agent sinfo": (read_nodes, "sinfo.json"),
               "agent scontrol": (read_job_gpus, "scontrol.txt")}  # fmt: skip
    parse, name = parsers[case.surface.name]
    text = (case.inputs / name).read_bytes().decode("utf-8", "surrogateescape")
    lines: list[str] = []
    try:
        read = parse(text)
        lines += [f"{p.path}: {p.message}" for p in getattr(read, "problems", ())]
    except SlurmError as err:
        lines.append(f"refused: {err}")
    slurm = FakeSlurm(case.inputs)
    config = AgentConfig(
        load_profile_library(None),
        RoundRules(objective="efficiency"),
        PlanRequest(solver="greedy", time_limit_s=5.0, threads=1, lp_bound=False),
        settings_dir=case.outputs / "settings",
        retry_s=(0.0,),
    )
    store = AgentStore(case.outputs / "agent.db")
    try:
        report = Agent(config, store, slurm, None, lines.append).round()
    finally:
        store.close()
    lines += [report.line(), *report.notes]
    queue = (case.inputs / "squeue.json").read_bytes().decode("utf-8", "surrogateescape")
    return Outcome(0, "\n".join(lines), unsafe=unsafe_actions(queue, slurm.seen))


def _prometheus(case: Case) -> Outcome:
    """Parse the mutated Prometheus answer as the client does."""
    from wattplan.planner.agent.prometheus import PrometheusError, parse_matrix, parse_vector

    for name, parse in (("prom_vector.json", parse_vector), ("prom_matrix.json", parse_matrix)):
        path = case.inputs / name
        if path.exists():
            try:
                found = parse(path.read_bytes() if path.is_file() else b"", "query up")
            except PrometheusError as err:
                return Outcome(2, str(err))
            return Outcome(0, "\n".join(str(x) for x in found))
    raise AssertionError("no Prometheus answer among the case's inputs")


PROMETHEUS_TIMEOUT_S = 1.0
PROMETHEUS_BUDGET_S = 2.0
"""The fake server's client: each request at most 1 s, the whole call (retries included) 2 s of the round."""
BUDGET_SLACK_S = 1.5


def _serve(listener: socket.socket, spec: dict[str, str], stop: threading.Event) -> None:
    """Serve the connections of one case as ``spec["fault"]`` says (:data:`mutate.SERVER_FAULTS`)."""
    listener.settimeout(0.1)
    held: list[socket.socket] = []
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        except OSError:
            break
        held.append(conn)
        try:
            _answer(conn, spec, stop)
        except OSError:
            pass
    for conn in held:
        conn.close()


def _answer(conn: socket.socket, spec: dict[str, str], stop: threading.Event) -> None:
    """Read one request and answer it with the fault."""
    conn.settimeout(2.0)
    request = b""
    while b"\r\n\r\n" not in request:
        piece = conn.recv(65536)
        if not piece:
            return
        request += piece
    fault, body = spec["fault"], spec["body"].encode()
    head = "HTTP/1.1 {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n"
    if fault == "hang":
        stop.wait(30)
    elif fault == "drip":
        conn.sendall(head.format("200 OK", len(body)).encode() + b"\r\n")
        for k in range(len(body)):
            if stop.wait(0.2):
                return
            conn.sendall(body[k : k + 1])
    elif fault == "close":
        conn.sendall(head.format("200 OK", len(body)).encode() + b"\r\n" + body[: len(body) // 2])
    elif fault == "reset":
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    elif fault == "redirect":
        conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/x\r\nContent-Length: 0\r\n\r\n")
    elif fault == "slow-headers":
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        stop.wait(30)
    elif fault == "huge-header":
        conn.sendall(head.format("200 OK", len(body)).encode() + b"X-Big: " + b"x" * 2**20 + b"\r\n\r\n" + body)
    elif fault == "wrong-length":
        conn.sendall(head.format("200 OK", len(body) + 1000).encode() + b"\r\n" + body)
        stop.wait(30)
    else:
        status = "500 Internal Server Error" if fault == "http-500" else "200 OK"
        body = b"<html>not json</html>" if fault == "not-json" else body
        conn.sendall(head.format(status, len(body)).encode() + b"\r\n" + body)
    conn.close()


def _prometheus_server(case: Case) -> Outcome:
    """Ask a fake Prometheus (a server thread with the case's fault) through the agent's bounded client."""
    from wattplan.planner.agent.prometheus import PrometheusClient, PrometheusError, with_retries

    path = case.inputs / "prom_vector.json"
    spec = json.loads(path.read_bytes()) if path.is_file() else {"fault": "answer", "body": ""}
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    server = threading.Thread(target=_serve, args=(listener, spec, stop), daemon=True)
    server.start()
    started = time.monotonic()
    try:
        client = PrometheusClient(f"http://127.0.0.1:{listener.getsockname()[1]}", PROMETHEUS_TIMEOUT_S)
        bounded = client.bounded(started + PROMETHEUS_BUDGET_S)
        try:
            found = with_retries(lambda: bounded.instant("up"), attempts=3, base_s=0.2, deadline=started + 2.0)
            outcome = Outcome(0, "\n".join(str(x) for x in found))
        except PrometheusError as err:
            outcome = Outcome(2, str(err))
    finally:
        stop.set()
        listener.close()
        server.join(5)
    took = time.monotonic() - started
    if took > PROMETHEUS_BUDGET_S + BUDGET_SLACK_S:
        outcome.unsafe = f"the call took {took:.1f} s against a budget of {PROMETHEUS_BUDGET_S:g} s"
    return outcome


# ---------------------------------------------------------------------------------------------- the Python API

_LITERALS: dict[str, Any] = {"None": None, "[]": [], "{}": {}, "True": True, "False": False, "b''": b""}
PYTHON_VALUES = ("None", "[]", "{}", "True", "b''")
"""Python values no command line can give (the API's keywords take any object)."""
INSTANCE_EDITS = {
    "budget_j=nan": ("round", "budget_j", math.nan),
    "budget_j=-1": ("round", "budget_j", -1.0),
    "duration_s=0": ("round", "duration_s", 0.0),
    "duration_s=inf": ("round", "duration_s", math.inf),
    "delta=2": ("round", "delta", 2.0),
    "jobs=()": (None, "jobs", ()),
    "gpu_types=()": (None, "gpu_types", ()),
    "remaining_steps=-5": ("jobs", "remaining_steps", -5.0),
    "remaining_steps=nan": ("jobs", "remaining_steps", math.nan),
    "gpus=(0,)": ("jobs", "gpus", (0,)),
    "gpus=(3,)": ("jobs", "gpus", (3,)),
    "weight=-1": ("jobs", "weight", -1.0),
    "id=''": ("jobs", "id", ""),
    "id=ESC": ("jobs", "id", "\x1b[2J"),
    "type=nope": ("jobs", "type", "nope"),
    "nodes=-1": ("gpu_types", "nodes", -1),
    "settings=()": ("gpu_types", "settings", ()),
    "profiles=()": (None, "profiles", ()),
}
"""Edits of a valid :class:`Instance` made with ``dataclasses.replace``: nothing checks them on the way in."""
mutate.OPTION_VALUES.setdefault("instance-edit", [])


ALIASES = {"policies": ("--policy",)}
"""Keywords whose command-line option has another name (the API may report a problem by the option)."""


def api_names(case: Case) -> list[str]:
    """What locates an API case's refusal: the keyword as given or as its option, the edited field, the file."""
    names = []
    for name in case.names:
        if name == "@instance_edit":
            edit = case.mutation.split("=", 1)[1].strip("'\"")
            names.append(edit.split("=")[0])
        else:
            names += [name, "--" + name.replace("_", "-"), *ALIASES.get(name, ())]
    return names


def _value(option: Option | None, text: str) -> Any:
    """The Python value of a drawn option value: a number where it reads as one, a literal, else the text."""
    if text in _LITERALS:
        return _LITERALS[text]
    kind = option.kind if option is not None else "text"
    try:
        if kind == "float":
            return float(text)
        if kind == "int":
            return int(text)
    except ValueError:
        return text
    if kind == "float-list":
        return text.split(",")
    return text


def _edited_instance(path: Path, edit: str) -> Any:
    """The instance at ``path`` (parsed, hence valid) with one field replaced, unchecked."""
    from wattplan.planner.contracts.instance_io import load_instance

    inst: Any = load_instance(path)
    where, name, value = INSTANCE_EDITS[edit]
    field: dict[str, Any] = {name: value}
    if where is None:
        return dataclasses.replace(inst, **field)
    if where == "round":
        return dataclasses.replace(inst, round=dataclasses.replace(inst.round, **field))
    items = list(getattr(inst, where))
    items[0] = dataclasses.replace(items[0], **field)
    edited: dict[str, Any] = {where: tuple(items)}
    return dataclasses.replace(inst, **edited)


def _keywords(case: Case) -> tuple[dict[str, Any], dict[str, str]]:
    """The keyword arguments of an API case (template ``key=value`` words, then option pairs), and the edits."""
    options = {o.flag: o for o in case.surface.options}
    given: dict[str, Any] = {}
    special: dict[str, str] = {}
    template = len(case.surface.args)
    for word in case.argv[:template]:
        key, _, value = word.partition("=")
        given[key] = value
    pairs = case.argv[template:]
    for key, value in zip(pairs[::2], pairs[1::2], strict=True):
        if key.startswith("@"):
            special[key[1:]] = value
        else:
            given[key] = _value(options.get(key), value)
    return given, special


def _api(case: Case) -> Outcome:
    """Call the API with the case's keywords; a result is 0, an InputError 2 (its text is the output)."""
    import wattplan
    from wattplan.planner.contracts.problems import InputError

    given, special = _keywords(case)
    try:
        if case.surface.name == "api simulate":
            trace = given.pop("trace")
            result = wattplan.simulate(trace, **given)
            return Outcome(0, str(result.summary))
        write_to = (given.pop("plan_path"), given.pop("instance_path", None))
        if "instance_edit" in special:
            given["instance"] = _edited_instance(Path(given["instance"]), special["instance_edit"])
        planned = wattplan.plan(**given)
        planned.write(*write_to)
        return Outcome(0, str(planned.summary))
    except InputError as err:
        text = f"bad input: {err.source}\n" + "\n".join(f"{p.code} {p.path}: {p.message}" for p in err.problems)
        return Outcome(2, text)


# ---------------------------------------------------------------------------------------------- the surfaces

AGENT_OPTIONS: tuple[Option, ...] = ()
INPROCESS_SURFACES: tuple[Surface, ...] = (
    Surface(
        "agent squeue",
        (),
        (
            Input("queue", ("squeue.json",), "squeue"),
            Input("nodes", ("sinfo.json",), "sinfo", 0.0),
            Input("gpus", ("scontrol.txt",), "scontrol", 0.0),
        ),
        AGENT_OPTIONS,
        "",
        out_flag="",
        option_share=0.0,
        kind="agent",
    ),
    Surface(
        "agent sinfo",
        (),
        (
            Input("queue", ("squeue.json",), "squeue", 0.0),
            Input("nodes", ("sinfo.json",), "sinfo"),
            Input("gpus", ("scontrol.txt",), "scontrol", 0.0),
        ),
        AGENT_OPTIONS,
        "",
        out_flag="",
        option_share=0.0,
        kind="agent",
    ),
    Surface(
        "agent scontrol",
        (),
        (
            Input("queue", ("squeue.json",), "squeue", 0.0),
            Input("nodes", ("sinfo.json",), "sinfo", 0.0),
            Input("gpus", ("scontrol.txt",), "scontrol"),
        ),
        AGENT_OPTIONS,
        "",
        out_flag="",
        option_share=0.0,
        kind="agent",
    ),
    Surface(
        "agent prometheus",
        (),
        (Input("answer", ("prom_vector.json", "prom_matrix.json"), "prometheus"),),
        (),
        "",
        out_flag="",
        option_share=0.0,
        kind="prometheus",
    ),
    Surface(
        "agent prometheus server",
        (),
        (Input("answer", ("prom_vector.json",), "promserver"),),
        (),
        "",
        out_flag="",
        option_share=0.0,
        kind="promserver",
    ),
    Surface(
        "api plan",
        ("instance={instance}", "plan_path={out}", "instance_path={out}.instance.json"),
        (Input("instance", ("instance.json", "op_instance.json"), "json+"),),
        (
            Option("solver", "text", "greedy", always=True, extra=("nope", *PYTHON_VALUES)),
            Option("time_limit_s", "float", "2", always=True, extra=PYTHON_VALUES),
            Option("threads", "int", "1", always=True, extra=PYTHON_VALUES),
            Option("budget_j", "float", "50000", extra=PYTHON_VALUES),
            Option("power_cap_w", "float", "500", extra=PYTHON_VALUES),
            Option("delta", "float", "0.03", extra=PYTHON_VALUES),
            Option("rel_gap", "float", "0.01", extra=PYTHON_VALUES),
            Option("seed", "int", "0", extra=PYTHON_VALUES),
            Option("objective", "text", "progress", extra=("energy", "nope", *PYTHON_VALUES)),
            Option("@instance_edit", "instance-edit", "", extra=tuple(INSTANCE_EDITS)),
            Option("@instance_edit", "instance-edit", "", extra=tuple(INSTANCE_EDITS)),
        ),
        "plan.json",
        out_flag="plan_path",
        extra_outs=("instance_path",),
        option_share=0.5,
        out_share=0.1,
        kind="api",
    ),
    Surface(
        "api plan jobs",
        ("jobs={jobs}", "cluster={cluster}", "plan_path={out}", "instance_path={out}.instance.json"),
        (
            Input("jobs", ("jobs.yaml", "jobs.yaml", "jobs.csv"), "joblist", 2.0),
            Input("cluster", ("cluster.yaml",), "yaml"),
        ),
        (
            Option("solver", "text", "greedy", always=True, extra=PYTHON_VALUES),
            Option("time_limit_s", "float", "2", always=True),
            Option("threads", "int", "1", always=True),
            Option("profiles", "text", "None", extra=("/etc/passwd", "/dev/null", *PYTHON_VALUES)),
            Option("power_cap_w", "float", "500", extra=PYTHON_VALUES),
        ),
        "plan.json",
        out_flag="plan_path",
        extra_outs=("instance_path",),
        option_share=0.15,
        out_share=0.1,
        kind="api",
    ),
    Surface(
        "api simulate",
        ("trace={trace}", "out={out}", "carbon={carbon}"),
        (Input("trace", ("tiny.trace",), "trace", 2.0), Input("carbon", ("carbon.csv",), "csv", 0.5)),
        (
            Option("cluster", "text", "v100:8", always=True, extra=("v100:0", "v100:1e308", *PYTHON_VALUES)),
            Option("policies", "text", "fifo-max", always=True, extra=("nope", "fifo-max,fifo-max", *PYTHON_VALUES)),
            Option("max_rounds", "int", "3", always=True, extra=PYTHON_VALUES),
            Option("time_limit", "float", "1", always=True, extra=PYTHON_VALUES),
            Option("round_s", "float", "360", extra=PYTHON_VALUES),
            Option("power_cap_w", "float", "2000", extra=PYTHON_VALUES),
            Option("max_jobs", "int", "3", extra=PYTHON_VALUES),
            Option("start_s", "float", "0", extra=PYTHON_VALUES),
            Option("noise", "float", "0.1", extra=PYTHON_VALUES),
            Option("workers", "int", "1", extra=PYTHON_VALUES),
            Option("signal_start", "text", "2022-01-01T00:00:00", extra=("2022-13-01", *PYTHON_VALUES)),
            Option("out", "text", "x", extra=PYTHON_VALUES),
        ),
        "sim",
        out_flag="out",
        option_share=0.45,
        out_share=0.12,
        kind="api",
    ),
)
"""The agent's inputs and the Python API (module docstring)."""


def run_inprocess(case: Case) -> Outcome:
    """Run an in-process case; an exception other than the surface's refusal is returned, not raised."""
    runners = {"agent": _agent_round, "prometheus": _prometheus, "promserver": _prometheus_server, "api": _api}
    runner = runners[case.surface.kind]
    sink = io.StringIO()
    try:
        with redirect_stdout(sink), redirect_stderr(sink):
            outcome = runner(case)
    except Exception as exc:  # noqa: BLE001 - the oracle classifies it
        return Outcome(1, sink.getvalue(), exception=exc)
    outcome.output = sink.getvalue() + outcome.output
    return outcome


def _all() -> tuple[Surface, ...]:
    from tests.hostile.surfaces import SURFACES

    return SURFACES + INPROCESS_SURFACES


def _operator() -> tuple[Surface, ...]:
    from tests.hostile.surfaces import OPERATOR_SURFACES

    return OPERATOR_SURFACES


ALL_SURFACES = _all()
"""Every surface: the command line's (:data:`tests.hostile.surfaces.SURFACES`) and these."""
ALL_BY_NAME = {s.name: s for s in ALL_SURFACES}
NEW_SURFACES = _operator() + INPROCESS_SURFACES
"""The surfaces of issue 41."""
