"""An operator's job list (CSV or YAML): the queue of a round as the operator knows it.

One record per job. Fields (CSV header cells or YAML keys; ``*`` required):

=================== ========================================================================================
``id`` *            the job's id (unique; a Slurm job name or the operator's own id)
``type`` *          job type: a type of the profile library (``wattplan profiles ls`` lists them)
``gpus`` *          GPUs requested (a whole number >= 1)
``remaining_steps`` training steps left (> 0); give this or ``remaining_s``
``remaining_s``     time left (s, > 0) when run alone on ``gpus`` GPUs of ``measured_on`` at its top setting;
                    turned into steps with the profile's throughput (:mod:`planner.rounds.from_jobs`)
``measured_on``     GPU type ``remaining_s`` was measured on (default: the cluster's first type with a profile)
``allowed_gpus``    GPU counts the job may run on (default: only ``gpus``): YAML a list, CSV counts separated
                    by spaces, ``;`` or ``|`` (``1 2 4``); an elastic job lists several
``weight``          weight of its progress (>= 0, default 1)
``command``         the command to run: YAML a list of words or one shell string, CSV a shell string
                    (split as a POSIX shell would, :func:`shlex.split`)
``workdir``, ``user`` where and as whom the job runs (launch renderers use them)
``env``             YAML only: a mapping of environment variables
=================== ========================================================================================

Every problem names the file, the record (``line N`` of a CSV, ``jobs[k]`` of a YAML list, with the field's
``(line N)``) and the field; unknown fields are problems too (a misspelt ``remaining_step`` must not pass silently).

What the reader trusts nothing about (issue 41):

* YAML is read by :func:`planner.files.safe_yaml.load_yaml`: no alias bomb, no duplicate key, no YAML 1.1 typing.
  Every value arrives as text and each field reads its own kind from it, so ``user: 0755`` stays ``"0755"``, an
  id ``1:30`` stays ``"1:30"`` and ``command: yes`` runs ``yes``. Numbers are plain decimals
  (:data:`~planner.files.csv_frames.DECIMAL`: no ``1_000``, no ``0x10``, no ``inf``).
* A CSV header that names a column twice is refused (``duplicate-column``, both positions), as is a cell under a
  header cell without a name; a lookup by name would take one copy silently.
* A text field (``id``, ``type``, ``measured_on``, ``workdir``, ``user``) holding a control character (NUL, escape,
  a line break) is refused where it is read: such an id reached Slurm names, file names and terminals.
* A field that takes one value refuses a list or a mapping, and an ``env`` value must be text (not a list).
"""

from __future__ import annotations

import dataclasses
import math
import shlex
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wattplan.planner.contracts.jsonio import read_text
from wattplan.planner.contracts.problems import InputError, Problem, capped
from wattplan.planner.files.csv_frames import DECIMAL, parse_csv_frame, repeated_columns
from wattplan.planner.files.safe_yaml import YamlList, YamlMap, load_yaml, with_lines

FIELDS = (
    "id",
    "type",
    "gpus",
    "remaining_steps",
    "remaining_s",
    "measured_on",
    "allowed_gpus",
    "weight",
    "command",
    "workdir",
    "user",
    "env",
)
REQUIRED = ("id", "type", "gpus")
TEXT_FIELDS = ("id", "type", "measured_on", "workdir", "user")
"""Fields of one line of text: no control character, no list, no mapping."""
SCALAR_FIELDS = (*TEXT_FIELDS, "gpus", "remaining_steps", "remaining_s", "weight")
"""Fields of one value (the others may be lists or mappings in YAML)."""
MAX_GPUS = 100_000
"""Most GPUs one job may ask for (the instance schema's limit)."""


@dataclass(frozen=True, slots=True)
class JobRequest:
    """One job of an operator's list, checked field by field (the module docstring gives each field)."""

    id: str
    type: str
    gpus: int
    remaining_steps: float | None = None
    remaining_s: float | None = None
    measured_on: str | None = None
    allowed_gpus: tuple[int, ...] | None = None
    weight: float = 1.0
    command: tuple[str, ...] | None = None
    workdir: str | None = None
    user: str | None = None
    env: tuple[tuple[str, str], ...] | None = None
    where: str = ""
    """The record's place in its file (``line 3``, ``jobs[2]``), for later problems."""
    lines: tuple[tuple[str, int], ...] = ()
    """The line of each field of a YAML record (a CSV record is one line: ``where`` says it)."""

    @property
    def counts(self) -> tuple[int, ...]:
        """The GPU counts it may run on: ``allowed_gpus`` if given, else the request alone."""
        return self.allowed_gpus or (self.gpus,)

    def at(self, name: str) -> str:
        """The path of field ``name`` for a problem: ``line 3.gpus`` (CSV), ``jobs[2].gpus (line 7)`` (YAML)."""
        line = dict(self.lines).get(name)
        return f"{self.where}.{name}" if line is None else f"{self.where}.{name} (line {line})"


def _text(value: Any) -> str | None:
    """A cell as stripped text; None for an empty cell or a missing YAML value."""
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _control(text: str) -> str | None:
    """The first control character of ``text`` (Unicode category Cc, or a line or paragraph separator), else None."""
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            return ch
    return None


def _one_value(record: Mapping[str, Any], where: str, problems: list[Problem]) -> None:
    """A problem for each single-value field given a list or mapping, or text holding a control character."""
    for name in SCALAR_FIELDS:
        value = record.get(name)
        if isinstance(value, list | Mapping):
            kind = "list" if isinstance(value, list) else "mapping"
            problems.append(Problem("bad-field", f"{where}.{name}", f"one value is needed, got a {kind}"))
        elif name in TEXT_FIELDS and isinstance(value, str) and (ch := _control(value)) is not None:
            problems.append(
                Problem(
                    "bad-field",
                    f"{where}.{name}",
                    f"holds the control character U+{ord(ch):04X}: names and paths are one line of printable text",
                )
            )


def _whole(value: Any, where: str, name: str, problems: list[Problem]) -> int | None:
    text = _text(value)
    if text is None:
        return None
    if isinstance(value, bool) or not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_GPUS:
        problems.append(
            Problem("bad-field", f"{where}.{name}", f"must be a whole number in [1, {MAX_GPUS}], got {text!r}")
        )
        return None
    return int(text)


def _positive(value: Any, where: str, name: str, problems: list[Problem], allow_zero: bool = False) -> float | None:
    text = _text(value)
    if text is None:
        return None
    plain = not isinstance(value, bool) and DECIMAL.fullmatch(text) is not None  # no 1_000, 0x10, inf
    number = float(text) if plain else math.nan
    ok = math.isfinite(number) and (number >= 0 if allow_zero else number > 0) and number <= 1e15
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        problems.append(
            Problem("bad-field", f"{where}.{name}", f"must be a finite number {bound} (at most 1e15), got {text!r}")
        )
        return None
    return number


def _counts(value: Any, where: str, problems: list[Problem]) -> tuple[int, ...] | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    items: list[Any]
    if isinstance(value, list):
        items = value
    else:
        items = str(value).replace(";", " ").replace("|", " ").replace(",", " ").split()
    out: list[int] = []
    for k, item in enumerate(items):
        n = _whole(item, where, f"allowed_gpus[{k}]", problems)
        if n is not None:
            out.append(n)
    if len(out) != len(items):
        return None
    return tuple(sorted(set(out))) or None


def _command(value: Any, where: str, problems: list[Problem]) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, list):
        if not value or not all(isinstance(w, str) and w for w in value):
            problems.append(Problem("bad-field", f"{where}.command", "a list of non-empty words is needed"))
            return None
        return tuple(value)
    try:
        words = shlex.split(str(value))
    except ValueError as exc:
        problems.append(Problem("bad-field", f"{where}.command", f"not a shell command line ({exc})"))
        return None
    return tuple(words) or None


def _env(value: Any, where: str, problems: list[Problem]) -> tuple[tuple[str, str], ...] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and k for k in value):
        problems.append(Problem("bad-field", f"{where}.env", "a mapping of variable names to values is needed"))
        return None
    bad = [k for k, v in value.items() if isinstance(v, list | Mapping)]
    for name in bad:
        problems.append(Problem("bad-field", f"{where}.env.{name}", "a variable's value is one piece of text"))
    if bad:
        return None
    return tuple(sorted((k, "" if v is None else str(v)) for k, v in value.items())) or None


def job_request(record: Mapping[str, Any], where: str) -> tuple[JobRequest | None, list[Problem]]:
    """One record (field name -> raw value) as a :class:`JobRequest`, or None and every problem it has."""
    problems: list[Problem] = []
    for key in record:
        if key not in FIELDS:
            problems.append(
                Problem("unknown-field", f"{where}.{key}", f"not a job-list field (fields: {', '.join(FIELDS)})")
            )
    for key in REQUIRED:
        if _text(record.get(key)) is None:
            problems.append(Problem("missing-field", f"{where}.{key}", "required field is missing or empty"))
    before = len(problems)
    _one_value(record, where, problems)
    if len(problems) > before:  # the field readers below take text
        return None, problems
    gpus = _whole(record.get("gpus"), where, "gpus", problems)
    steps = _positive(record.get("remaining_steps"), where, "remaining_steps", problems)
    seconds = _positive(record.get("remaining_s"), where, "remaining_s", problems)
    given = [name for name in ("remaining_steps", "remaining_s") if _text(record.get(name)) is not None]
    if len(given) != 1:
        say = "both are given" if given else "neither is given"
        problems.append(
            Problem("remaining", f"{where}.remaining_steps", f"give remaining_steps or remaining_s ({say})")
        )
    allowed = _counts(record.get("allowed_gpus"), where, problems)
    weight = _positive(record.get("weight"), where, "weight", problems, allow_zero=True)
    command = _command(record.get("command"), where, problems)
    env = _env(record.get("env"), where, problems)
    if problems or gpus is None:
        return None, problems
    return (
        JobRequest(
            id=str(_text(record["id"])),
            type=str(_text(record["type"])),
            gpus=gpus,
            remaining_steps=steps,
            remaining_s=seconds,
            measured_on=_text(record.get("measured_on")),
            allowed_gpus=allowed,
            weight=1.0 if weight is None else weight,
            command=command,
            workdir=_text(record.get("workdir")),
            user=_text(record.get("user")),
            env=env,
            where=where,
        ),
        [],
    )


def _csv_records(text: str, source: str) -> Iterator[tuple[str, dict[str, Any]]]:
    frame = parse_csv_frame(text.encode("utf-8"), source)
    if frame.header is None:
        raise InputError(
            source, [Problem("empty", "(file)", frame.header_issue or "no header line: an empty job list")]
        )
    head = f"line {frame.header_line}"
    problems = [
        Problem(
            "duplicate-column",
            f"{head}.{name}",
            f"column {name!r} is column {first} and again column {again}: which one is meant? keep one",
        )
        for name, first, again in repeated_columns(frame.header)
    ]
    problems += [Problem("bad-row", f"line {i.line}", i.message) for i in frame.issues]
    if problems:
        raise InputError(source, problems)
    header = [h.strip() for h in frame.header]
    chunk = frame.whole()
    for row, line in zip(chunk.cells.itertuples(index=False), chunk.lines, strict=True):
        unnamed = [k for k, (h, cell) in enumerate(zip(header, row, strict=True), start=1) if not h and cell.strip()]
        if unnamed:
            message = f"column {unnamed[0]} has no name in the header ({head}) but holds {row[unnamed[0] - 1]!r}"
            raise InputError(source, [Problem("unnamed-column", f"line {int(line)}", message)])
        yield f"line {int(line)}", {h: cell for h, cell in zip(header, row, strict=True) if h}


def _yaml_items(text: str, source: str) -> YamlList:
    """The records of a YAML job list: a list of mappings, or a mapping whose ``jobs`` is one."""
    doc = load_yaml(text, source)
    if isinstance(doc, YamlMap):
        extra = [key for key in doc if key != "jobs"]
        if extra:
            message = f"{extra[0]!r} is not a job-list key: the file is a list of jobs, or a mapping with 'jobs:'"
            raise InputError(source, with_lines([Problem("unknown-field", extra[0], message)], doc))
        items = doc.get("jobs")
    else:
        items = doc
    if not isinstance(items, YamlList):
        raise InputError(
            source, [Problem("not-a-job-list", "(file)", "a list of jobs (or a mapping with 'jobs:') is needed")]
        )
    for k, item in enumerate(items):
        if not isinstance(item, YamlMap):
            line = items.item_lines[k]
            raise InputError(source, [Problem("bad-record", f"jobs[{k}] (line {line})", "each job is a mapping")])
    return items


def _yaml_records(items: YamlList) -> Iterator[tuple[str, dict[str, Any]]]:
    for k, item in enumerate(items):
        yield f"jobs[{k}]", dict(item)


def _as_root(items: YamlList) -> YamlMap:
    """``{"jobs": items}`` with lines, so that a problem's ``jobs[k].field`` finds its line."""
    root = YamlMap(items.line)
    root["jobs"] = items
    root.key_lines["jobs"] = items.line
    return root


def read_job_list(path: Path) -> tuple[JobRequest, ...]:
    """The jobs of a CSV (``.csv``) or YAML (``.yaml``, ``.yml``) job list, in file order.

    Raises :class:`~planner.contracts.problems.InputError` naming the file with every problem (a bad or missing
    field, an unknown field, a repeated id, no job at all).
    """
    source = str(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".yaml", ".yml"):
        raise InputError(source, [Problem("bad-format", "(file)", "a job list is a .csv, .yaml or .yml file")])
    text = read_text(path)
    items: YamlList | None = None
    if suffix == ".csv":
        records = _csv_records(text, source)
    else:
        items = _yaml_items(text, source)
        records = _yaml_records(items)
    jobs: list[JobRequest] = []
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    unknown: set[str] = set()
    for k, (where, record) in enumerate(records):
        job, found = job_request(record, where)
        if job is not None and items is not None:
            job = dataclasses.replace(job, lines=tuple(items[k].key_lines.items()))
        for problem in found:  # an unknown header cell is one problem, not one per row
            name = problem.path.rpartition(".")[2]
            if problem.code != "unknown-field" or name not in unknown:
                problems.append(problem)
            if problem.code == "unknown-field":
                unknown.add(name)
        if job is None:
            continue
        if job.id in seen:
            problems.append(Problem("duplicate-id", f"{where}.id", f"job id {job.id!r} is also at {seen[job.id]}"))
            continue
        seen[job.id] = job.at("id")
        jobs.append(job)
    if problems:
        raise InputError(source, capped(problems if items is None else with_lines(problems, _as_root(items))))
    if not jobs:
        raise InputError(source, [Problem("empty", "(file)", "the job list holds no job")])
    return tuple(jobs)
