"""profiles fit: scaling, power, setting curves and pair rates from points, each checked against a hand computation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli import app
from tests.helpers.profiles import a_points, entry, point, tiny_library
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.profiling.fit import fit_library
from wattplan.planner.profiling.pair_rates import PRIOR_PAIR_ERROR, estimate_side, shrink
from wattplan.planner.profiling.points import write_points
from wattplan.planner.profiling.power_model import (
    borrowed_curve_error,
    fit_busy_fraction,
    fit_dynamic_power,
    fit_setting_curves,
)
from wattplan.planner.profiling.scaling import SPEEDUP_PRIOR_ERROR, fit_scaling, monotone_sublinear, prior_shape_fit

REL = 1e-9


def approx(x: float, rel: float = REL) -> Any:
    return pytest.approx(x, rel=rel)


# --- scaling -----------------------------------------------------------------------------------------------------


def test_amdahl_recovers_alpha_and_predicts_eight_gpus() -> None:
    # X(n) = 10 n / (1 + 0.1 (n - 1)): X(1) = 10, X(2) = 20 / 1.1, X(4) = 40 / 1.3; X(8) = 80 / 1.7 = 47.0588...
    fit = fit_scaling([1, 2, 4], [10.0, 20 / 1.1, 40 / 1.3])
    assert fit.alpha == approx(0.1, 1e-6) and fit.x1 == approx(10.0, 1e-6) and fit.cap is None
    assert fit.rate(8) == approx(80 / 1.7, 1e-6)
    assert fit.rel_error < 1e-9  # exact data: leave-one-count-out misses nothing


def test_superlinear_points_fit_linear_never_above() -> None:
    # t(n) = 1/X: 1/10, 1/25 at n = 1, 2 would need c = t1 alpha < 0; refitted with c = 0 (linear):
    # d = sum(a) / sum(a^2), a_i = 1 / (n_i t_i) = X_i / n_i = 10, 12.5 -> d = 22.5 / 256.25, X(n) = n / d.
    fit = fit_scaling([1, 2], [10.0, 25.0])
    assert fit.alpha == 0.0
    assert fit.rate(4) == approx(4 * 256.25 / 22.5)
    assert fit.rel_error == SPEEDUP_PRIOR_ERROR  # two counts: nothing to leave out


def test_data_loading_cap_is_found() -> None:
    # X1 = 10, alpha = 0.1 capped at 25: 10, 18.18, min(30.77, 25), min(47.06, 25). Plain Amdahl misses by > 5%;
    # capping the top two counts fits 1 and 2 exactly (alpha 0.1) and the cap is their rate, 25.
    fit = fit_scaling([1, 2, 4, 8], [10.0, 20 / 1.1, 25.0, 25.0])
    assert fit.cap == approx(25.0) and fit.alpha == approx(0.1) and fit.x1 == approx(10.0)
    assert fit.rate(16) == approx(25.0)


def test_issue_vgg16_speedups_saturate_at_four_gpus() -> None:
    # issue 14: measured speedups 1.85 / 3.24 / 3.28 at 2 / 4 / 8 GPUs; the cap holds the 8-GPU rate,
    # where plain Amdahl through 1, 2 and 4 would predict about 5.
    fit = fit_scaling([1, 2, 4, 8], [1.0, 1.85, 3.24, 3.28])
    assert fit.cap == approx(3.28)
    for n, x in ((2, 1.85), (4, 3.24), (8, 3.28)):
        assert fit.rate(n) == approx(x, 0.01)


def test_one_count_keeps_the_prior_shape_never_superlinear() -> None:
    # prior 10, 25, 30, 28 at 1, 2, 4, 8 -> monotone, at most linear: 10, min(25, 20) = 20, 30, max(28, 30) = 30;
    # measured 16 steps/s at 2 GPUs -> scale 16 / 20 = 0.8: 8, 16, 24, 24.
    assert monotone_sublinear({1: 10, 2: 25, 4: 30, 8: 28}) == {1: 10, 2: 20, 4: 30, 8: 30}
    fit = prior_shape_fit({1: 10, 2: 25, 4: 30, 8: 28}, 2, 16.0)
    assert [fit.rate(n) for n in (1, 2, 4, 8)] == [approx(8.0), approx(16.0), approx(24.0), approx(24.0)]
    assert fit.rel_error == SPEEDUP_PRIOR_ERROR and "prior's shape" in fit.how


# --- power and setting curves ------------------------------------------------------------------------------------


def test_dynamic_power_and_busy_fraction_by_hand() -> None:
    # idle 40 W; n = 1: P 220, u 0.9, E 1; n = 2: P 202, u 0.81, E 0.9 (q = 1 at one setting).
    # c = (180 * 1 + 162 * 0.9) / (1 + 0.81) = 325.8 / 1.81 = 180 W; u1 = (0.9 + 0.81 * 0.9) / 1.81 = 0.9;
    # k = c / u1 = 200 W: P(n) = 40 + 0.9 E(n) 200.
    assert fit_dynamic_power([(1.0, 180.0), (0.9, 162.0)]) == approx(180.0)
    assert fit_busy_fraction([(1.0, 0.9), (0.9, 0.81)]) == approx(0.9)


def test_power_limit_interpolation_and_leave_one_setting_out() -> None:
    # knots 100: (5, 100), 200: (9, 180), 250: (10, 200); at 150: X = 7, P = 140 (halfway).
    # Leave out 100: below 200 with no prior, P = min(180, 100) = 100, X = 9 * 100 / 180 = 5: no miss.
    # Leave out 200: interpolate 100..250: X = 5 + 5 * 100 / 150 = 8.333 (miss 1 - 8.333/9 = 0.0741),
    # P = 100 + 100 * 2/3 = 166.67 (miss 0.0741). Leave out 250: clamped, X 9, P 180: misses 0.1 and 0.1.
    curves = fit_setting_curves({100: (5.0, 100.0), 200: (9.0, 180.0), 250: (10.0, 200.0)}, [100, 150, 200, 250], 40.0)
    assert curves.rate(150) == approx(7.0) and curves.power(150) == approx(140.0)
    assert curves.rel_error_x == approx(0.1) and curves.rel_error_p == approx(0.1)
    # against 250 W: r(150) = 7 / 10 = 0.7, q(150) = (140 - 40) / (200 - 40) = 0.625
    assert curves.ratio(150, 250) == approx(0.7) and curves.dynamic_ratio(150, 250) == approx(0.625)


def test_outside_the_measured_settings_the_prior_anchors_else_clamps() -> None:
    # measured only 200: (9, 180); prior 100: (4, 90), 200: (8, 160), 250: (9, 190); idle 40 W. Throughput by the
    # prior's ratio, power above idle by the prior's ratio of power above idle:
    # X(100) = 9 * 4/8 = 4.5, P(100) = 40 + 140 * (90 - 40) / (160 - 40) = 98.333;
    # X(250) = 9 * 9/8 = 10.125, P(250) = 40 + 140 * 150 / 120 = 215.
    prior = {100: (4.0, 90.0), 200: (8.0, 160.0), 250: (9.0, 190.0)}
    curves = fit_setting_curves({200: (9.0, 180.0)}, [100, 200, 250], 40.0, prior, borrowed=(0.2, 0.3))
    assert (curves.rate(100), curves.power(100)) == (approx(4.5), approx(40 + 140 * 50 / 120))
    assert (curves.rate(250), curves.power(250)) == (approx(10.125), approx(215.0))
    # prior power of 130 W at 100 W would give 40 + 140 * 90/120 = 145 W, above the 100 W limit: 100
    capped = fit_setting_curves({200: (9.0, 180.0)}, [100, 200], 40.0, {100: (4.0, 130.0), 200: (8.0, 160.0)})
    assert capped.power(100) == 100.0
    assert (curves.rel_error_x, curves.rel_error_p) == (0.2, 0.3)  # one setting: the borrowed-curve error
    # no prior: above stays (9, 180); below P = min(180, 100) = 100 and X = 9 * 100 / 180 = 5
    bare = fit_setting_curves({200: (9.0, 180.0)}, [100, 200, 250], 40.0)
    assert (bare.rate(250), bare.power(250), bare.rate(100), bare.power(100)) == (9.0, 180.0, approx(5.0), 100.0)


def test_borrowed_curve_error_by_hand() -> None:
    # A: r(150) = 6/8 = 0.75, p = 140/200 = 0.7; B: r = 9/10 = 0.9, p = 150/180 = 0.8333.
    # X: |0.9/0.75 - 1| = 0.2 and |0.75/0.9 - 1| = 0.1667 -> median 0.18333;
    # P: |0.8333/0.7 - 1| = 0.190476 and |0.7/0.8333 - 1| = 0.16 -> median 0.175238.
    ex, ep = borrowed_curve_error([{150: (6.0, 140.0), 250: (8.0, 200.0)}, {150: (9.0, 150.0), 250: (10.0, 180.0)}])
    assert ex == approx((0.2 + 1 / 6) / 2) and ep == approx((1 / 0.7 * (150 / 180) - 1 + 0.16) / 2)


# --- pair rates --------------------------------------------------------------------------------------------------


def test_shrinkage_arithmetic() -> None:
    # (0.25 * 0.71 + 0.83 + 0.79) / (0.25 + 2) = 1.7975 / 2.25 = 0.798889; no prior: the mean
    assert shrink(0.71, [0.83, 0.79]) == approx(1.7975 / 2.25)
    assert shrink(None, [0.5]) == 0.5
    side = estimate_side(None, [1.1, 1.3])
    assert side.rho == 1.0 and "capped" in side.how


# --- the whole fit on a tiny library -----------------------------------------------------------------------------


def test_fit_by_hand_scaling_power_settings_and_errors() -> None:
    doc = fit_library(tiny_library(), a_points()).doc
    # Measured cells reproduce their point.
    a1 = entry(doc, "A", 1, 250)
    assert (a1["steps_per_s"], a1["power_w"], a1["basis"]["kind"]) == (10.0, 220.0, "measured")
    # Scaling through 1 and 2 exactly: 20 / (1 + alpha) = 18 -> alpha = 1/9; X(4) = 40 / (4/3) = 30, X(8) = 45.
    # Power: c = 180 W (see test_dynamic_power_and_busy_fraction_by_hand), E(4) = 30/40 = 0.75, E(8) = 0.5625:
    # P(4) = 40 + 180 * 0.75 = 175, P(8) = 40 + 180 * 0.5625 = 141.25; u(4) = 0.9 * 0.75 = 0.675.
    a4, a8 = entry(doc, "A", 4, 250), entry(doc, "A", 8, 250)
    assert (a4["steps_per_s"], a4["power_w"], a4["utilisation"]) == (approx(30.0), approx(175.0), approx(0.675))
    assert (a8["steps_per_s"], a8["power_w"]) == (approx(45.0), approx(141.25))
    # Errors at (4, 250): two counts -> e_n = 0.26, setting measured -> 0; power carries 0.26 * (175 - 40) / 175.
    assert a4["basis"]["kind"] == "fitted" and a4["basis"]["rel_error"] == approx(SPEEDUP_PRIOR_ERROR)
    assert sorted(a4["basis"]["points"]) == sorted(p.id for p in a_points())
    # 150 W on 1 GPU from the prior's curve anchored at 250: X = 10 * 6/8 = 7.5,
    # P = 40 + 180 * (140 - 40) / (200 - 40) = 152.5, above the 150 W limit: 150.
    # 2 GPUs (measured at 250 only) borrow the 1-GPU curve: X(2, 150) = 18 * 7.5/10 = 13.5,
    # P(2, 150) = 40 + 162 * (150 - 40) / (220 - 40) = 139; utilisation measured on 2 GPUs: 0.81.
    # 4 GPUs take the curve of the nearest measured count, 2: X(4, 150) = 30 * 13.5/18 = 22.5,
    # P(4, 150) = 40 + 180 * 0.75 * (139 - 40) / (202 - 40) = 122.5.
    assert entry(doc, "A", 1, 150)["steps_per_s"] == approx(7.5) and entry(doc, "A", 1, 150)["power_w"] == 150.0
    a4l = entry(doc, "A", 4, 150)
    assert (a4l["steps_per_s"], a4l["power_w"]) == (approx(22.5), approx(122.5))
    a2l = entry(doc, "A", 2, 150)
    assert (a2l["steps_per_s"], a2l["power_w"], a2l["utilisation"]) == (approx(13.5), approx(139.0), approx(0.81))
    # Error at (4, 150): borrowed-curve errors 0.18333 (X) and 0.175238 (P) (test_borrowed_curve_error_by_hand);
    # X: sqrt(0.26^2 + 0.18333^2) = 0.318137; P: sqrt((0.26 * 82.5 / 122.5)^2 + 0.175238^2) = 0.2477 -> 0.318137.
    assert a4l["basis"]["rel_error"] == approx((0.26**2 + ((0.2 + 1 / 6) / 2) ** 2) ** 0.5)
    # B had no point: prior, untouched.
    b = entry(doc, "B", 1, 250)
    assert b["basis"]["kind"] == "prior" and b["steps_per_s"] == 10.0


def test_pair_rate_from_a_measured_shared_and_exclusive_point() -> None:
    # rho_obs = 8.3 / 10 = 0.83 (exclusive A on 1 GPU at 250 W measured); with Gavel's 0.7 at weight 0.25:
    # (0.25 * 0.7 + 0.83) / 1.25 = 0.804. rho_b unobserved: the prior 1.0 with error 0.37.
    shared = point("pair", "p", job_type="A", partner_type="B", gpus=1, setting=250, steps_per_s=8.3, power_w=230.0)
    doc = fit_library(tiny_library(), [*a_points(), shared]).doc
    (pair,) = doc["pairs"]
    assert pair["rho_a"] == approx(0.804) and pair["rho_b"] == 1.0
    assert pair["basis"]["kind"] == "fitted" and pair["basis"]["rel_error"] == PRIOR_PAIR_ERROR
    assert shared.id in pair["basis"]["points"] and a_points()[0].id in pair["basis"]["points"]


def test_a_new_pair_observed_on_both_sides_is_measured() -> None:
    # A alone 10 steps/s (measured), B alone 10 steps/s (prior table); A shared 6 -> 0.6, B shared 4 -> 0.4.
    lib = tiny_library()
    lib["pairs"] = []
    pts = [
        *a_points(),
        point("pair", "pa", job_type="A", partner_type="B", gpus=1, setting=250, steps_per_s=6.0, power_w=200.0),
        point("pair", "pb", job_type="B", partner_type="A", gpus=1, setting=250, steps_per_s=4.0, power_w=200.0),
    ]
    (pair,) = fit_library(lib, pts).doc["pairs"]
    assert (pair["rho_a"], pair["rho_b"]) == (approx(0.6), approx(0.4))
    assert pair["basis"]["kind"] == "fitted"  # B's exclusive rate is the prior's, not measured


def test_new_job_type_gets_a_table_and_measured_idle_raises_the_floor() -> None:
    # C: one point, 1 GPU at 250 W: 5 steps/s, 228 W. No prior: the library's median alpha is A's 0.2 (exact
    # Amdahl): X(2) = 10 / 1.2 = 8.333, X(8) = 40 / 2.4 = 16.667. Idle point 41 W: E(2) = 8.333/10, c = 228 - 41 = 187:
    # P(2, 250) = 41 + 187 * 0.8333 = 196.83. 150 W without prior: P = min(228, 150) = 150, X = 5 * 150/228.
    pts = [
        point("exclusive", "c", job_type="C", gpus=1, setting=250, steps_per_s=5.0, power_w=228.0),
        point("idle", "idle", power_w=41.0),
        point("held_idle", "held", power_w=55.0),
    ]
    result = fit_library(tiny_library(), pts)
    doc = result.doc
    rows = [p for p in doc["profiles"] if p["type"] == "C"]
    assert sorted((p["gpus"], p["setting"]) for p in rows) == [(n, s) for n in (1, 2, 4, 8) for s in (150, 250)]
    assert entry(doc, "C", 2, 250)["steps_per_s"] == approx(10 / 1.2)
    assert entry(doc, "C", 8, 250)["steps_per_s"] == approx(40 / 2.4)
    assert entry(doc, "C", 2, 250)["power_w"] == approx(41 + 187 * (10 / 1.2) / 10)
    assert entry(doc, "C", 1, 150)["power_w"] == approx(150.0)
    assert entry(doc, "C", 1, 150)["steps_per_s"] == approx(5 * 150 / 228)
    assert {p["basis"]["kind"] for p in rows} == {"measured", "fitted"}
    (gpu,) = doc["gpu_types"]
    assert gpu["idle_power_w"] == 41.0 and gpu["held_idle_power_w"] == 55.0
    assert set(gpu["idle_basis"]["points"]) == {pts[1].id, pts[2].id}
    assert all(p["power_w"] >= 41.0 for p in doc["profiles"])


def test_every_entry_has_a_basis_and_the_output_loads_back(tmp_path: Path) -> None:
    shared = point("pair", "p", job_type="A", partner_type="B", gpus=1, setting=250, steps_per_s=8.3, power_w=230.0)
    result = fit_library(tiny_library(), [*a_points(), shared])
    for e in result.doc["profiles"] + result.doc["pairs"]:
        assert set(e["basis"]) == {"kind", "points", "rel_error", "reason"} and e["basis"]["reason"]
    path = tmp_path / "fitted.json"
    path.write_text(json.dumps(result.doc))
    lib = load_profile_library(path)
    assert len(lib.profiles) == len(result.doc["profiles"]) and len(lib.measurements) == 3
    assert lib.profile_extras[("A", "v100", 4, 250)]["basis"]["kind"] == "fitted"
    # fitting the fitted library again with no new point reproduces the table
    again = fit_library(result.doc).doc
    assert [(p["steps_per_s"], p["power_w"]) for p in again["profiles"]] == [
        (approx(p["steps_per_s"]), approx(p["power_w"])) for p in result.doc["profiles"]
    ]


def test_cli_fit_writes_a_library_and_sanity_only_writes_nothing(tmp_path: Path) -> None:
    lib, points, out = tmp_path / "lib.json", tmp_path / "points.json", tmp_path / "fitted.json"
    lib.write_text(json.dumps(tiny_library()))
    write_points(points, a_points())
    runner = CliRunner()
    result = runner.invoke(app, ["profiles", "fit", str(lib), "--measurements", str(points), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "entries by basis" in result.output and out.exists()
    kinds = [p["basis"]["kind"] for p in json.loads(out.read_text())["profiles"]]
    assert kinds.count("measured") == 2 and kinds.count("fitted") == 6
    only = tmp_path / "none.json"
    result = runner.invoke(app, ["profiles", "fit", str(lib), "--sanity-only", "--out", str(only)])
    assert result.exit_code == 0 and "superlinear" in result.output and not only.exists()
    result = runner.invoke(app, ["profiles", "fit", str(lib)])
    assert result.exit_code == 2 and "--out" in result.output
    bad = json.loads(points.read_text())
    bad["points"][0]["gpus"] = 0
    points.write_text(json.dumps(bad))
    result = runner.invoke(app, ["profiles", "fit", str(lib), "-m", str(points), "--out", str(out)])
    assert result.exit_code == 2 and "points[0].gpus" in result.output and "Traceback" not in result.output


def test_a_gpu_type_the_prior_lacks_gets_a_note_naming_the_job_types_it_cannot_run() -> None:
    """Job A measured on an a100 the prior lacks: the fit adds a100 for A alone and says that B cannot run there."""
    from dataclasses import replace

    points = [replace(p, gpu_type="a100") for p in a_points()]
    result = fit_library(tiny_library(), points)
    assert {p["type"] for p in result.doc["profiles"] if p["gpu_type"] == "a100"} == {"A"}
    (note,) = [n for n in result.notes if "not in the prior" in n]
    assert "only the 1 job type(s) measured on it can run there, not the other 1" in note
    assert "wattplan profiles prior --gpu a100" in note
    # measured on the prior's own type: no such note
    assert not [n for n in fit_library(tiny_library(), a_points()).notes if "not in the prior" in n]
