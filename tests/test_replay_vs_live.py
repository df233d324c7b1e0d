"""``benchmarks/replay_vs_live.py``: a replay's error against its live run, and the folders it reads."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.replay_vs_live import line, main


def _summary(path: Path, energy: float, avg: float, p95: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"energy_kwh": energy, "avg_jct_s": avg, "p95_jct_s": p95}))


def test_the_error_is_the_replays_against_live() -> None:
    replay = {"energy_kwh": 9.5, "avg_jct_s": 1100.0, "p95_jct_s": 2000.0}
    live = {"energy_kwh": 10.0, "avg_jct_s": 1000.0, "p95_jct_s": 2000.0}
    assert line("r", replay, live) == "r: energy -5.0%, avg JCT +10.0%, p95 +0.0% (9.500 against 10.000 kWh)"


def test_runs_are_matched_to_their_replays_by_folder_name(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    run = tmp_path / "live" / "fam-x-a"
    _summary(run / "managed.json", 10.0, 1000.0, 2000.0)
    replays = tmp_path / "replays"
    _summary(replays / "fam-x-a" / "sim" / "wattplan" / "summary.json", 10.5, 1000.0, 1900.0)
    _summary(replays / "fam-x-a" / "sim" / "slurm-powersave" / "summary.json", 12.0, 900.0, 1800.0)
    _summary(tmp_path / "unmanaged.json", 12.0, 1000.0, 2000.0)
    argv = [
        "replay_vs_live.py",
        "--replays",
        str(replays),
        str(run),
        "--unmanaged",
        f"fam={tmp_path / 'unmanaged.json'}",
    ]
    monkeypatch.setattr("sys.argv", argv)
    main()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "fam-x-a: energy +5.0%, avg JCT +0.0%, p95 -5.0% (10.500 against 10.000 kWh)"
    assert out[1].startswith("  slurm-powersave (live ") and out[1].endswith(
        "energy +0.0%, avg JCT -10.0%, p95 -10.0% (12.000 against 12.000 kWh)"
    )
