"""Fidelity check and leave-one-out: every number against a hand computation on tiny hand-built data."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from tests.helpers.profiles import A1, A2, AB, C1, CHECK_LIBRARY_DOC, IDLE, check_point, write_inputs
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.profile_library.library import ProfileLibrary, library_from_doc
from wattplan.planner.profiling.check import FidelityReport, FidelityRow, check, parse_type_map
from wattplan.planner.profiling.leave_one_out import borrow, donors, held_out_cases, summarise
from wattplan.planner.profiling.points import point_to_doc, write_points

runner = CliRunner()


def lib() -> ProfileLibrary:
    return library_from_doc(CHECK_LIBRARY_DOC, "tiny")


def rows(report: FidelityReport, quantity: str) -> list[FidelityRow]:
    return [r for r in report.rows if r.quantity == quantity]


def one(report: FidelityReport, quantity: str, gpus: int | None = None) -> FidelityRow:
    (row,) = [r for r in rows(report, quantity) if gpus is None or r.gpus == gpus]
    return row


def test_check_against_hand_computation() -> None:
    report = check(lib(), [A1, A2, AB, IDLE])
    # throughput: n=1 (10 - 8) / 8 = +0.25; n=2 (18 - 12) / 12 = +0.5
    assert one(report, "throughput", 1).rel_error == pytest.approx(0.25)
    assert one(report, "throughput", 2).rel_error == pytest.approx(0.5)
    # speedup: predicted 18/10 = 1.8, measured 12/8 = 1.5 -> (1.8 - 1.5) / 1.5 = +0.2
    s = one(report, "speedup")
    assert (s.predicted, s.measured, s.rel_error) == pytest.approx((1.8, 1.5, 0.2))
    assert set(s.points) == {A1.id, A2.id}
    # power: n=1 (200 - 220) / 220 = -0.0909; n=2 (190 - 180) / 180 = +0.0556
    assert one(report, "power", 1).rel_error == pytest.approx(-20 / 220)
    assert one(report, "power", 2).rel_error == pytest.approx(10 / 180)
    # energy per step n=2: predicted 2 * 190 / 18 = 21.11 J, measured 2 * 180 / 12 = 30 J -> -0.2963
    e = one(report, "energy_per_step", 2)
    assert (e.predicted, e.measured) == pytest.approx((380 / 18, 30.0))
    assert e.rel_error == pytest.approx(380 / 18 / 30 - 1)
    # pair rate: measured 4 / 8 = 0.5 (shared over the measured exclusive), library rho_a 0.6 -> +0.2
    r = one(report, "pair_rate")
    assert (r.predicted, r.measured, r.rel_error, r.partner) == pytest.approx((0.6, 0.5, 0.2, "B"))
    # pair power: 40 + 0.6 (200 - 40) + 0.5 (150 - 40) = 191 W against 170 W -> +21/170
    assert one(report, "pair_power").rel_error == pytest.approx(21 / 170)
    # idle: library 40 W, measured 50 W -> -0.2
    assert one(report, "idle").rel_error == pytest.approx(-0.2)
    assert report.unmatched == ()
    by_q = {s.quantity: s for s in report.summary()}
    # throughput errors +0.25 and +0.5: median |err| 0.375, worst +0.5
    assert (by_q["throughput"].count, by_q["throughput"].median_abs_error) == (2, pytest.approx(0.375))
    assert by_q["throughput"].worst_error == pytest.approx(0.5)
    # energy per step n=1: 200/10 = 20 J against 220/8 = 27.5 J -> -0.2727; n=2's -0.2963 is the worst
    assert one(report, "energy_per_step", 1).rel_error == pytest.approx(20 / 27.5 - 1)
    assert by_q["energy_per_step"].worst_error == pytest.approx(380 / 18 / 30 - 1)


def test_points_of_one_configuration_are_pooled() -> None:
    other = check_point("exclusive", "w6", job_type="A", gpus=1, setting=250, steps_per_s=12.0, power_w=180.0)
    row = one(check(lib(), [A1, other]), "throughput")
    # mean (8 + 12) / 2 = 10 steps/s = the library's 10 -> error 0
    assert row.measured == pytest.approx(10.0) and row.rel_error == pytest.approx(0.0)
    assert set(row.points) == {A1.id, other.id}


def test_unmatched_points_are_reported_not_dropped() -> None:
    odd = check_point("exclusive", "w7", job_type="A", gpus=4, setting=250, steps_per_s=20.0, power_w=150.0)
    lonely_pair = check_point(
        "pair", "w8", job_type="B", partner_type="A", gpus=1, setting=250, steps_per_s=2.0, power_w=170.0
    )
    p100 = check_point("idle", "w9", gpu_type="p100", power_w=30.0)
    report = check(lib(), [A1, C1, odd, lonely_pair, p100])
    missing = {(u.quantity, u.points) for u in report.unmatched}
    assert ("throughput", (C1.id,)) in missing and ("power", (C1.id,)) in missing
    assert ("throughput", (odd.id,)) in missing
    assert ("pair_rate", (lonely_pair.id,)) in missing  # no measured exclusive B to divide by
    assert ("idle", (p100.id,)) in missing
    reasons = " ".join(u.reason for u in report.unmatched)
    assert "no job type 'C'" in reasons and "no GPU type 'p100'" in reasons and "4 v100 at 250" in reasons
    assert {s.quantity: s.unmatched for s in report.summary()}["throughput"] == 2
    assert [r.points for r in rows(report, "throughput")] == [(A1.id,)]


def test_mapping_renames_measured_job_types() -> None:
    report = check(lib(), [C1], mapping={"C": "A"})
    # C as A: (10 - 3) / 3 = +2.333
    assert one(report, "throughput").rel_error == pytest.approx(7 / 3)
    assert parse_type_map(["resnet50 = A", "C=B"], {"A", "B"}) == {"resnet50": "A", "C": "B"}
    with pytest.raises(InputError) as exc:
        parse_type_map(["nothing", "x=Z", "y=A"], {"A"})
    assert [(p.code, p.path) for p in exc.value.problems] == [("bad-map", "--map[0]"), ("unknown-job-type", "--map[1]")]


def test_shape_mode_compares_ratios_to_the_top_setting() -> None:
    low = check_point("exclusive", "w10", job_type="A", gpus=1, setting=200, steps_per_s=6.0, power_w=176.0)
    report = check(lib(), [A1, low, A2], shape=True)
    assert rows(report, "throughput") == [] and rows(report, "power") == []
    # throughput: measured 6/8 = 0.75, library 8/10 = 0.8 -> +0.0667
    t = one(report, "throughput_shape")
    assert (t.setting, t.predicted, t.measured, t.rel_error) == pytest.approx((200, 0.8, 0.75, 0.8 / 0.75 - 1))
    # power: measured 176/220 = 0.8, library 160/200 = 0.8 -> 0
    assert one(report, "power_shape").rel_error == pytest.approx(0.0)
    # energy per step: measured (176/6)/(220/8) = 1.0667, library (160/8)/(200/10) = 1.0 -> -0.0625
    e = one(report, "energy_shape")
    assert (e.measured, e.rel_error) == pytest.approx((176 / 6 / 27.5, -0.0625))
    # speedup is a ratio: still compared; A on 2 GPUs has one setting: no shape, reported
    assert one(report, "speedup").rel_error == pytest.approx(0.2)
    assert [(u.quantity, u.points) for u in report.unmatched] == [("throughput_shape", (A2.id,))]


def test_gpu_level_quantities() -> None:
    held = check_point("held_idle", "w11", power_w=55.0)
    node = check_point("node", "w12", power_w=230.0)
    top = check_point("top_limit", "w13", power_w=300.0)
    report = check(lib(), [held, node, top])
    # held-idle: no held_idle_power_w, the idle 40 W stands in: (40 - 55) / 55
    assert one(report, "held_idle").rel_error == pytest.approx(-15 / 55)
    # node: planner default 200 W against 230 W; top limit: highest setting 250 W against 300 W
    assert one(report, "node_power").rel_error == pytest.approx(-30 / 230)
    assert one(report, "top_limit").rel_error == pytest.approx(-50 / 300)


def test_borrowed_curve_by_hand() -> None:
    # true: t(200) = 10 s, P = 150 W; t(250) = 8 s, P = 200 W -> E(200) = 1500 J, E(250) = 1600 J: optimum 200 W
    true = {200: (10.0, 150.0), 250: (8.0, 200.0), 300: (7.0, 250.0)}
    donor = {200: (15.0, 150.0), 250: (10.0, 220.0)}  # 300 W not measured: left out, s_max = 250
    res = borrow(true, donor)
    low, high = res.limits
    # time ratio at 200: donor 15/10 = 1.5, true 10/8 = 1.25 -> +0.2
    assert (low.time_ratio_pred, low.time_ratio_true, low.time_ratio_error) == pytest.approx((1.5, 1.25, 0.2))
    # energy predicted: 150 * 1.5 * 8 = 1800 J at 200 (+0.2), 220 * 1 * 8 = 1760 J at 250 (+0.1): borrowed optimum 250
    assert (low.energy_pred, high.energy_pred) == pytest.approx((1800.0, 1760.0))
    assert (low.energy_error, high.energy_error, high.power_error) == pytest.approx((0.2, 0.1, 0.1))
    # regret: E_true(250) / E_true(200) - 1 = 1600 / 1500 - 1 = 0.0667
    assert (res.s_true_opt, res.s_borrowed_opt, res.regret) == (200, 250, pytest.approx(1600 / 1500 - 1))


def test_donors_and_summary() -> None:
    ws = [("c", "s", 32), ("c", "s", 64), ("c", "s", 128), ("i", "r", 64), ("i", "r", 256)]
    # 32 and 128 are both a factor 2 from 64: the tie goes to the larger
    assert donors(("c", "s", 64), ws, "batch") == [("c", "s", 128)]
    assert donors(("c", "s", 128), ws, "model") == [("i", "r", 256)]
    curves = {
        ("c", "s", 32): {200: (10.0, 150.0), 250: (8.0, 200.0)},
        ("c", "s", 64): {200: (15.0, 150.0), 250: (10.0, 220.0)},
    }
    cases = held_out_cases(curves, "v100", ["batch"])
    assert [(c.workload[2], c.donor[2]) for c in cases] == [(32, 64), (64, 32)]
    (s,) = summarise(cases)
    # 32 from 64: regret 1/15 (above); 64 from 32: E_true 64 = 2250 J at 200, 2200 J at 250 (optimum 250);
    # predicted from 32: 150 * 1.25 * 10 = 1875 at 200, 2000 at 250 -> picks 200: regret 2250 / 2200 - 1 = 0.0227
    assert [c.result.regret for c in cases] == pytest.approx([1 / 15, 2250 / 2200 - 1])
    assert s.worst_regret == pytest.approx(1 / 15) and s.worst_case.workload == ("c", "s", 32)
    assert s.median_regret == pytest.approx((1 / 15 + 2250 / 2200 - 1) / 2)
    # time-ratio errors at 200 W: +0.2 and 1.25/1.5 - 1; the median of two |errors| is their mean
    assert s.median_time_ratio_error == pytest.approx((0.2 + 1 / 6) / 2)


def test_cli_check_writes_json_and_csv(tmp_path: Path) -> None:
    lib_path, meas = write_inputs(tmp_path)
    out_json, out_csv = tmp_path / "f.json", tmp_path / "f.csv"
    result = runner.invoke(
        app, ["profiles", "check", str(lib_path), str(meas), "--json", str(out_json), "--csv", str(out_csv)]
    )
    assert result.exit_code == 0, result.output
    assert "speedup" in result.output and "unmatched" in result.output
    doc = json.loads(out_json.read_text())
    summary = {s["quantity"]: s for s in doc["summary"]}
    # throughput +0.25 and +0.5 (above); C has no library type: 1 unmatched
    assert summary["throughput"]["median_abs_error"] == pytest.approx(0.375)
    assert summary["throughput"]["unmatched"] == 1
    with open(out_csv, newline="") as f:
        lines = list(csv.DictReader(f))
    assert {line["status"] for line in lines} == {"matched", "unmatched"}
    speed = [line for line in lines if line["quantity"] == "speedup"]
    assert float(speed[0]["rel_error"]) == pytest.approx(0.2)
    # --map C=A makes C's point A's: nothing unmatched
    mapped = runner.invoke(
        app, ["profiles", "check", str(lib_path), str(meas), "--map", "C=A", "--json", str(out_json)]
    )
    assert mapped.exit_code == 0, mapped.output
    assert json.loads(out_json.read_text())["unmatched"] == []


def test_cli_check_bad_input_exits_2(tmp_path: Path) -> None:
    lib_path, meas = write_inputs(tmp_path)
    bad_map = runner.invoke(app, ["profiles", "check", str(lib_path), str(meas), "--map", "C=Nope"])
    assert bad_map.exit_code == 2 and "--map[0]" in bad_map.output
    broken = tmp_path / "broken.json"
    doc = {"schema": "wattplan.measurements/1", "points": [point_to_doc(A1) | {"power_w": -1}]}
    broken.write_text(json.dumps(doc))
    result = runner.invoke(app, ["profiles", "check", str(lib_path), str(broken)])
    assert result.exit_code == 2 and "points[0].power_w" in result.output
    empty = tmp_path / "empty.json"
    write_points(empty, [])
    assert runner.invoke(app, ["profiles", "check", str(lib_path), str(empty)]).exit_code == 2


ZEUS = Path(__file__).resolve().parents[1] / "instances" / "sources" / "zeus"


def zeus_curve(gpu: str, dataset: str, network: str, batch: int) -> dict[int, tuple[float, float]]:
    """Power limit -> (mean time per epoch, mean power) over the optimizer rows, read with plain csv."""
    sums: dict[int, list[tuple[float, float]]] = {}
    with open(ZEUS / f"summary_power_{gpu}.csv", newline="") as f:
        for r in csv.DictReader(f):
            if (r["dataset"], r["network"], int(r["batch_size"])) == (dataset, network, batch):
                sums.setdefault(int(r["power_limit"]), []).append(
                    (float(r["time_per_epoch"]), float(r["average_power"]))
                )
    return {s: (sum(t for t, _ in v) / len(v), sum(p for _, p in v) / len(v)) for s, v in sums.items()}


def test_real_zeus_borrowing_regret() -> None:
    # DeepSpeech2 b24 on V100 borrowing NCF b32's curve: the energy per epoch E = P t at each limit
    true = zeus_curve("v100", "librispeech", "deepspeech2", 24)
    donor = zeus_curve("v100", "movielens-1m", "ncf", 32)
    e_true = {s: t * p for s, (t, p) in true.items()}
    t_top = true[250][0]
    e_pred = {s: p * (t / donor[250][0]) * t_top for s, (t, p) in donor.items()}
    s_true, s_b = min(e_true, key=e_true.__getitem__), min(e_pred, key=e_pred.__getitem__)
    res = borrow(true, donor)
    assert (res.s_true_opt, res.s_borrowed_opt) == (s_true, s_b)
    assert res.regret == pytest.approx(e_true[s_b] / e_true[s_true] - 1, rel=1e-12)
    assert res.regret > 0.5  # the worst V100 case RESULTS.md quotes (55%)


def test_real_zeus_windows_in_shape_mode() -> None:
    from wattplan.planner.files.resources import profile_library
    from wattplan.planner.profile_library.library import load_profile_library
    from wattplan.planner.profiling.zeus_windows import read_zeus_windows

    points = read_zeus_windows(ZEUS / "profile_data" / "V100+resnet50+gpu0.csv", "resnet50", "v100", 40)
    report = check(
        load_profile_library(profile_library()), points, {"resnet50": "ResNet-50 (batch size 64)"}, shape=True
    )
    (row,) = [r for r in rows(report, "throughput_shape") if r.setting == 100]
    # measured: 40 steps / 53.8665 s over 40 steps / 26.6745 s = 26.6745 / 53.8665 = 0.4952
    assert row.measured == pytest.approx(26.674534152960405 / 53.86649834597483, rel=1e-12)
    # library: Gavel X * t(250) / t(100) over Gavel X = the Zeus ResNet-50 b64 ratio t(250) / t(100)
    curve = zeus_curve("v100", "imagenet", "resnet50", 64)
    assert row.predicted == pytest.approx(curve[250][0] / curve[100][0], rel=1e-9)
    # power ratio: (5327.103 J / 53.8665 s) / (6065.03 J / 26.6745 s) measured, P(100) / P(250) predicted
    (pw,) = [r for r in rows(report, "power_shape") if r.setting == 100]
    assert pw.measured == pytest.approx(
        (5327.103000000003 / 53.86649834597483) / (6065.030000000028 / 26.674534152960405)
    )
    assert pw.predicted == pytest.approx(curve[100][1] / curve[250][1], rel=1e-9)
