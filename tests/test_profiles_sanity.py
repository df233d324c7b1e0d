"""The sanity pass: each finding kind on a hand-built library, its repair, and the shipped library's findings."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from cli import app
from wattplan.planner.files.resources import profile_library
from wattplan.planner.profiling.sanity import count_by_kind, repair, sanity_check


def row(t: str, n: int, x: float, p: float, **extra: Any) -> dict[str, Any]:
    return {"type": t, "gpu_type": "v100", "gpus": n, "setting": 250, "steps_per_s": x, "power_w": p, **extra}


def bad_library() -> dict[str, Any]:
    """A library with one of each finding, idle 40 W.

    S scales 2.5x on 2 GPUs; L is slower on 4 GPUs than on 2 and draws more per GPU there; P draws less than idle;
    the pair runs faster shared; M is superlinear but measured.
    """
    measured = {"kind": "measured", "points": ["pt-1"], "rel_error": None, "reason": "mean of 1 point(s)"}
    return {
        "schema": "wattplan.profiles/1",
        "gpu_types": [{"name": "v100", "idle_power_w": 40, "setting_unit": "power_limit_w", "settings": [250]}],
        "profiles": [
            row("S", 1, 10.0, 200.0),
            row("S", 2, 25.0, 200.0),
            row("S", 4, 40.0, 200.0),
            row("L", 1, 10.0, 150.0),
            row("L", 2, 18.0, 150.0),
            row("L", 4, 15.0, 180.0),
            row("P", 1, 5.0, 30.0),
            row("M", 1, 10.0, 200.0, basis=measured),
            row("M", 2, 30.0, 200.0, basis=measured),
        ],
        "pairs": [{"a": "L", "b": "S", "gpu_type": "v100", "gpus": 1, "rho_a": 1.2, "rho_b": 0.9}],
    }


def test_each_finding_kind_on_a_hand_built_library() -> None:
    found = {(f.kind, f.key) for f in sanity_check(bad_library())}
    assert found == {
        ("superlinear", ("S", "v100", 2, 250)),  # 25 / 10 = 2.5 > 2 * 1.05; S on 4: 4.0 <= 4.2, 40/25 = 1.6 <= 2.1
        ("superlinear", ("M", "v100", 2, 250)),  # 3.0 > 2.1
        ("slower-with-more-gpus", ("L", "v100", 4, 250)),  # 15 < 18
        ("power-rising-while-slower", ("L", "v100", 4, 250)),  # 180 > 150 * 1.05 while slower
        ("power-below-idle", ("P", "v100", 1, 250)),  # 30 < 40
        ("pair-rate-above-one", ("L", "S", "v100", 1)),  # 1.2 > 1 (sum 2.1 > 2)
    }


def test_repair_caps_to_linear_makes_non_decreasing_and_marks_the_entries() -> None:
    fixed, changed = repair(bad_library(), sanity_check(bad_library()))
    x = {(p["type"], p["gpus"]): (p["steps_per_s"], p["power_w"], p.get("basis")) for p in fixed["profiles"]}
    # S: 10, min(25, 2 * 10) = 20, min(max(40, 20), 2 * 20) = 40; the change 25 -> 20 is a 20% error at least
    assert x[("S", 2)][0] == 20.0 and x[("S", 4)][0] == 40.0
    assert x[("S", 2)][2]["kind"] == "repaired" and x[("S", 2)][2]["rel_error"] == pytest.approx(0.2)
    assert x[("S", 4)][2] is None  # unchanged, untouched
    # L on 4: max(15, 18) = 18 steps/s, power min(180, 150) = 150 W per GPU
    assert x[("L", 4)][:2] == (18.0, 150.0) and "repaired" in x[("L", 4)][2]["reason"]
    assert x[("P", 1)][1] == 40.0  # raised to idle
    assert x[("M", 2)][0] == 30.0  # measured: flagged, never changed
    assert fixed["pairs"][0]["rho_a"] == 1.0 and fixed["pairs"][0]["basis"]["kind"] == "repaired"
    assert changed == 4  # S on 2, L on 4 (steps and power: one entry), P, the pair
    assert {f.kind for f in sanity_check(fixed)} == {"superlinear"}  # only M's, which is measured


def test_shipped_library_findings_confirm_the_issue() -> None:
    doc = json.loads(profile_library().read_text())
    findings = sanity_check(doc)
    assert count_by_kind(findings) == {
        "superlinear": 132,
        "slower-with-more-gpus": 33,
        "power-below-idle": 0,
        "power-rising-while-slower": 0,
        "pair-rate-above-one": 0,
    }
    x = {(p["type"], p["gpu_type"], p["gpus"], p["setting"]): p["steps_per_s"] for p in doc["profiles"]}
    by_key = {(f.kind, f.key): f for f in findings}
    # ResNet-18 scales 9-12x on 8 V100s (issue 14): e.g. batch size 16, 11.8x
    r18 = by_key[("superlinear", ("ResNet-18 (batch size 16)", "v100", 8, 250))]
    assert (
        r18.value
        == pytest.approx(
            x[("ResNet-18 (batch size 16)", "v100", 8, 250)] / x[("ResNet-18 (batch size 16)", "v100", 1, 250)]
        )
        and 11.8 < r18.value < 11.9
    )
    eights = [f.value for f in findings if f.kind == "superlinear" and "ResNet-18" in f.key[0] and f.key[2] == 8]
    assert 7.9 < min(eights) and max(eights) < 11.9
    # LM slower on 4 GPUs than on 2: batch size 10, 1.49x against 2.00x of one GPU
    lm = by_key[("slower-with-more-gpus", ("LM (batch size 10)", "v100", 4, 250))]
    assert (
        lm.value == x[("LM (batch size 10)", "v100", 4, 250)] and lm.limit == x[("LM (batch size 10)", "v100", 2, 250)]
    )
    assert lm.value / lm.limit == pytest.approx(1.49 / 2.00, rel=0.01)


def test_cli_sanity_only_on_the_shipped_library() -> None:
    result = CliRunner().invoke(app, ["profiles", "fit", "--sanity-only"])
    assert result.exit_code == 0, result.output
    assert "132" in result.output and "33" in result.output
