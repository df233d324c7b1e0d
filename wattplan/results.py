"""Results as pandas DataFrames in tidy long form: what ``simulate``, ``frontier`` and ``bench`` wrote.

:func:`read_results` reads an output folder of any of the three commands (a replay writes one folder per policy,
``out/<policy>/``; a frontier keeps one replay per point under ``runs/``; a one-policy replay of an older version
wrote its files at the top, and that layout is read too), and returns :class:`Results`:

* ``summary``: one row per replay (per policy, or per frontier point), every number of its ``summary.json``, with a
  ``policy`` column (and ``label`` for frontier points);
* ``rounds``: one row per replayed round and policy of a folder the round-based replay wrote (``rounds.csv`` with
  ``policy`` and ``label``; that replay was removed and the loop's replays write none, so it is empty for them); the
  nodes on are one integer column per GPU type, ``nodes_on_<type>`` (an older file's packed ``nodes_on`` string,
  ``v100:3 p100:1``, is unpacked into them);
* ``jobs``: one row per job and policy (``jobs.csv`` with ``policy`` and ``label``);
* ``frontier``: the frontier's rows (``frontier.csv``), when the folder is a frontier's;
* ``runs``, ``bench``, ``per_instance``: a bench's ``runs.csv``, ``summary.csv`` and ``per_instance.csv``.

Units are the files' own (every column name carries its unit: ``_s``, ``_j``, ``_w``, ``_kwh``). Empty frames have
no rows but keep the ``policy`` column. Only reading: nothing here plans or replays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from wattplan.planner.contracts.problems import InputError, Problem

REPLAY_FILES = ("summary.json", "rounds.csv", "jobs.csv")


@dataclass
class Results:
    """The DataFrames of one output folder (module docstring); ``kind`` is ``replay``, ``frontier`` or ``bench``."""

    folder: Path
    kind: str
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    rounds: pd.DataFrame = field(default_factory=pd.DataFrame)
    jobs: pd.DataFrame = field(default_factory=pd.DataFrame)
    frontier: pd.DataFrame = field(default_factory=pd.DataFrame)
    runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    bench: pd.DataFrame = field(default_factory=pd.DataFrame)
    per_instance: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def policies(self) -> list[str]:
        """The policies replayed, in the order of ``summary``."""
        if "policy" not in self.summary:
            return []
        return list(dict.fromkeys(self.summary["policy"].dropna()))


def unpack_nodes_on(rounds: pd.DataFrame) -> pd.DataFrame:
    """``rounds`` with ``nodes_on`` unpacked: one integer column per GPU type, ``nodes_on_<type>``.

    ``nodes_on`` is ``v100:3 p100:1`` (types separated by spaces or commas), as files before the
    ``nodes_on_<type>`` columns had it; a type with no node on is 0. The packed column is kept.
    """
    if "nodes_on" not in rounds or rounds.empty:
        return rounds
    packed = rounds["nodes_on"].fillna("").astype(str)
    parsed = [dict(_pairs(text)) for text in packed]
    types = sorted({t for row in parsed for t in row})
    out = rounds.copy()
    for t in types:
        out[f"nodes_on_{t}"] = [row.get(t, 0) for row in parsed]
    return out


def _pairs(text: str) -> list[tuple[str, int]]:
    out = []
    for item in text.replace(",", " ").split():
        name, _, count = item.partition(":")
        if name and count.isdigit():
            out.append((name, int(count)))
    return out


def _replay_folder(
    folder: Path, policy: str | None, label: str | None
) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """One replay's summary, rounds and jobs, each tagged with its policy (and frontier label)."""
    summary = _summary(folder / "summary.json")
    name = policy or summary.get("policy") or folder.name
    tags = {"policy": name} | ({"label": label} if label is not None else {})
    rounds = unpack_nodes_on(_csv(folder / "rounds.csv"))
    jobs = _csv(folder / "jobs.csv")
    for frame in (rounds, jobs):
        for key, value in reversed(list(tags.items())):
            if key in frame:  # the file's own column (files since the policy column): first, as the tags
                frame.insert(0, key, frame.pop(key))
            else:
                frame.insert(0, key, value)
    return {**tags, **{k: v for k, v in summary.items() if not isinstance(v, dict | list)}}, rounds, jobs


def _summary(path: Path) -> dict[str, Any]:
    """A replay's ``summary.json``: an object, else :class:`InputError` naming the file (never a raw JSON error)."""
    from wattplan.planner.contracts.jsonio import read_json

    doc = read_json(path)
    if not isinstance(doc, dict):
        what = f"not a replay summary: a JSON object was expected, found {type(doc).__name__}"
        raise InputError(str(path), [Problem("bad-results", "(file)", what)])
    return doc


def _csv(path: Path) -> pd.DataFrame:
    if not path.exists():
        return pd.DataFrame()
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(str(path), [Problem("bad-results", "(file)", f"not a results CSV: {exc}")]) from None


def _replays(found: list[tuple[Path, str | None, str | None]], folder: Path, kind: str) -> Results:
    summaries, rounds, jobs = [], [], []
    for where, policy, label in found:
        s, r, j = _replay_folder(where, policy, label)
        summaries.append(s)
        rounds.append(r)
        jobs.append(j)
    frames = [f for f in rounds if not f.empty]
    job_frames = [f for f in jobs if not f.empty]
    return Results(
        folder,
        kind,
        summary=pd.DataFrame(summaries),
        rounds=pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({"policy": []}),
        jobs=pd.concat(job_frames, ignore_index=True) if job_frames else pd.DataFrame({"policy": []}),
    )


def read_results(folder: str | Path) -> Results:
    """The :class:`Results` of a ``simulate``, ``frontier`` or ``bench`` output folder (module docstring).

    Raises :class:`~planner.contracts.problems.InputError` naming the folder when it holds none of them.
    """
    root = Path(folder)
    if not root.is_dir():
        raise InputError(str(root), [Problem("no-results", "(folder)", "not a folder")])
    if (root / "runs.csv").exists() and (root / "summary.csv").exists():
        return Results(
            root,
            "bench",
            runs=_csv(root / "runs.csv"),
            bench=_csv(root / "summary.csv"),
            per_instance=_csv(root / "per_instance.csv"),
        )
    if (root / "frontier.csv").exists():
        points = sorted(p.parent for p in (root / "runs").glob("*/summary.json")) if (root / "runs").is_dir() else []
        found: list[tuple[Path, str | None, str | None]] = [(p, None, p.name) for p in points]
        out = _replays(found, root, "frontier")
        out.frontier = _csv(root / "frontier.csv")
        return out
    policies = sorted(p.parent for p in root.glob("*/summary.json"))
    if policies:
        order = _comparison_order(root)
        policies.sort(key=lambda p: order.get(p.name, len(order)))
        return _replays([(p, p.name, None) for p in policies], root, "replay")
    if (root / "summary.json").exists():  # a one-policy replay of an older version
        return _replays([(root, None, None)], root, "replay")
    what = "no summary.json, frontier.csv or runs.csv: not an output folder of simulate, frontier or bench"
    raise InputError(str(root), [Problem("no-results", "(folder)", what)])


def _comparison_order(root: Path) -> dict[str, int]:
    """Policy -> position in ``comparison.json`` (the order the replay ran them), if the file is there."""
    path = root / "comparison.json"
    if not path.exists():
        return {}
    from wattplan.planner.contracts.jsonio import read_json

    rows = read_json(path)
    if not isinstance(rows, list):
        return {}
    return {str(r.get("policy")): k for k, r in enumerate(rows) if isinstance(r, dict)}
