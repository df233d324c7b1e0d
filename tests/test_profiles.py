"""Profile library: numbers recomputed by hand from the shipped source files.

The helpers below read ``instances/sources`` with plain ``json``/``csv`` and share no code
with :mod:`planner.profile_library.build`, so a wrong formula in the builder cannot hide here.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

from wattplan.planner.files.resources import profile_library
from wattplan.planner.profile_library.build import (
    DEFAULT_SOURCE_DIR,
    build_profile_library,
    write_profile_library,
)
from wattplan.planner.profile_library.mapping import FAMILY_TO_ZEUS, job_family, nearest_batch_size

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "instances" / "sources"
GAVEL_TYPES = ("v100", "p100")
REL = 1e-12  # the builder averages with math.fsum; a different summation order moves the last bits


def gavel() -> dict[str, Any]:
    return json.loads((SOURCES / "gavel" / "simulation_throughputs.json").read_text())


def zeus_rows(gpu: str) -> list[dict[str, str]]:
    with open(SOURCES / "zeus" / f"summary_power_{gpu}.csv", newline="") as f:
        return list(csv.DictReader(f))


def zeus_mean(gpu: str, dataset: str, network: str, batch: int, limit: int) -> tuple[float, float]:
    """(mean time_per_epoch (s), mean average_power (W)) over the optimizer rows."""
    rows = [
        r
        for r in zeus_rows(gpu)
        if (r["dataset"], r["network"]) == (dataset, network)
        and (int(r["batch_size"]), int(r["power_limit"])) == (batch, limit)
    ]
    assert rows
    n = len(rows)
    return sum(float(r["time_per_epoch"]) for r in rows) / n, sum(float(r["average_power"]) for r in rows) / n


@pytest.fixture(scope="module")
def lib() -> dict[str, Any]:
    return build_profile_library()


def profile(lib: dict[str, Any], job_type: str, gpu: str, n: int, s: int) -> dict[str, Any]:
    (row,) = [
        p for p in lib["profiles"] if (p["type"], p["gpu_type"], p["gpus"], p["setting"]) == (job_type, gpu, n, s)
    ]
    return row


def consolidated_types(d: dict[str, Any], gpu: str) -> set[str]:
    return {k.rsplit("', ", 1)[0][2:] for k in d[gpu]}


def test_defaults_point_into_the_repo() -> None:
    assert DEFAULT_SOURCE_DIR == SOURCES
    assert profile_library() == REPO / "instances" / "profiles" / "gavel_zeus_v100_p100.json"


def test_resnet50_v100_two_gpus_at_150w(lib: dict[str, Any]) -> None:
    """ResNet-50 (batch size 64), 2 V100s, power limit 150 W.

    Gavel: X = 7.922054367597505 steps/s (whole job, 2 GPUs, default = top limit).
    Zeus imagenet/resnet50, batch 64 (exact match in log2), one optimizer row (adadelta):
    t(250 W) = 3754.3233 s/epoch, t(150 W) = 4359.3967 s/epoch, P(150 W) = 145.9157 W.
    steps_per_s = 7.922054 * 3754.3233 / 4359.3967 = 6.822493 steps/s; power_w = 145.9157 W per GPU.
    """
    x = gavel()["v100"]["('ResNet-50 (batch size 64)', 2)"]["null"]
    assert x == 7.922054367597505
    t_top, _ = zeus_mean("v100", "imagenet", "resnet50", 64, 250)
    t_150, p_150 = zeus_mean("v100", "imagenet", "resnet50", 64, 150)
    row = profile(lib, "ResNet-50 (batch size 64)", "v100", 2, 150)
    assert row["steps_per_s"] == pytest.approx(x * t_top / t_150, rel=REL)
    assert row["steps_per_s"] == pytest.approx(6.822493072865562, rel=1e-9)
    assert row["power_w"] == pytest.approx(p_150, rel=REL)
    assert row["power_w"] == pytest.approx(145.91565972278718, rel=1e-9)
    top = profile(lib, "ResNet-50 (batch size 64)", "v100", 2, 250)
    assert top["steps_per_s"] == pytest.approx(x, rel=REL)


def test_optimizer_rows_are_averaged(lib: dict[str, Any]) -> None:
    """ResNet-18 (batch size 16), 1 V100, 150 W -> Zeus cifar100/shufflenetv2 batch 16.

    Two optimizer rows per limit (adadelta, adam):
    t(250) = (125.9 + 119.7233) / 2 = 122.8117 s, t(150) = (122.6833 + 114.73) / 2 = 118.7067 s,
    P(150) = (42.0002 + 42.6616) / 2 = 42.3309 W.
    steps_per_s = 32.3534 steps/s * 122.8117 / 118.7067 = 33.4722 steps/s.
    """
    x = gavel()["v100"]["('ResNet-18 (batch size 16)', 1)"]["null"]
    t_top = (125.90000000000002 + 119.72333333333334) / 2
    t_150 = (122.68333333333334 + 114.73) / 2
    p_150 = (42.00017233421401 + 42.66156151652766) / 2
    assert zeus_mean("v100", "cifar100", "shufflenetv2", 16, 150) == pytest.approx((t_150, p_150), rel=REL)
    row = profile(lib, "ResNet-18 (batch size 16)", "v100", 1, 150)
    assert row["steps_per_s"] == pytest.approx(x * t_top / t_150, rel=REL)
    assert row["power_w"] == pytest.approx(p_150, rel=REL)


def test_p100_cyclegan_uses_median_batch(lib: dict[str, Any]) -> None:
    """CycleGAN, 1 P100, 125 W -> Zeus imagenet/resnet50 at its median batch size.

    ResNet-50 batch sizes measured on both V100 and P100: 8, 16, 32, 64, 128 -> median 32.
    Gavel X = 2.40267 steps/s; t(250) = 6981.02 s, t(125) = 7654.17 s, P(125) = 113.978 W.
    steps_per_s = 2.40267 * 6981.02 / 7654.17 = 2.19137 steps/s.
    """
    (m,) = [e for e in lib["mapping"] if e["type"] == "CycleGAN"]
    assert (m["zeus_dataset"], m["zeus_network"], m["zeus_batch_size"]) == ("imagenet", "resnet50", 32)
    x = gavel()["p100"]["('CycleGAN', 1)"]["null"]
    t_top, _ = zeus_mean("p100", "imagenet", "resnet50", 32, 250)
    t_125, p_125 = zeus_mean("p100", "imagenet", "resnet50", 32, 125)
    row = profile(lib, "CycleGAN", "p100", 1, 125)
    assert row["steps_per_s"] == pytest.approx(x * t_top / t_125, rel=REL)
    assert row["steps_per_s"] == pytest.approx(2.4026681703106223 * 6981.02 / 7654.17, rel=1e-12)
    assert row["power_w"] == pytest.approx(113.9780544967083, rel=REL)
    assert not [p for p in lib["profiles"] if p["gpu_type"] == "p100" and p["setting"] == 100]


def test_pair_resnet18_resnet50_v100(lib: dict[str, Any]) -> None:
    """ResNet-18 (bs 16) with ResNet-50 (bs 64) on 1 V100.

    Gavel entry of the string-smaller type, ResNet-18: [20.3656, 4.0687] steps/s shared;
    alone 32.3534 and 4.3948 steps/s. rho_a = 20.3656 / 32.3534 = 0.62947,
    rho_b = 4.0687 / 4.3948 = 0.92581 (dimensionless).
    """
    d = gavel()["v100"]
    a, b = "ResNet-18 (batch size 16)", "ResNet-50 (batch size 64)"
    a_sh, b_sh = d[f"('{a}', 1)"][f"('{b}', 1)"]
    (pair,) = [p for p in lib["pairs"] if (p["a"], p["b"], p["gpu_type"], p["gpus"]) == (a, b, "v100", 1)]
    assert pair["rho_a"] == a_sh / d[f"('{a}', 1)"]["null"] == pytest.approx(0.6294722819117186)
    assert pair["rho_b"] == b_sh / d[f"('{b}', 1)"]["null"] == pytest.approx(0.9258065643762527)
    assert not [p for p in lib["pairs"] if (p["a"], p["b"]) == (b, a)]


def test_pairs_are_canonical_and_rates_at_most_one(lib: dict[str, Any]) -> None:
    keys = [(p["a"], p["b"], p["gpu_type"], p["gpus"]) for p in lib["pairs"]]
    assert len(keys) == len(set(keys))
    assert all(p["a"] <= p["b"] for p in lib["pairs"])
    assert all(0 < p["rho_a"] <= 1 and 0 < p["rho_b"] <= 1 for p in lib["pairs"])


def test_idle_power_and_no_profile_below_it(lib: dict[str, Any]) -> None:
    """Idle power = floor of the lowest Zeus average power: V100 34.75 W -> 34, P100 33.29 W -> 33."""
    idle = {g["name"]: g["idle_power_w"] for g in lib["gpu_types"]}
    assert idle == {"v100": 34, "p100": 33}
    for gpu in GAVEL_TYPES:
        assert idle[gpu] == math.floor(min(float(r["average_power"]) for r in zeus_rows(gpu)))
    assert all(p["power_w"] >= idle[p["gpu_type"]] for p in lib["profiles"])
    assert all(p["steps_per_s"] > 0 for p in lib["profiles"])


def test_settings_are_power_limits(lib: dict[str, Any]) -> None:
    by = {g["name"]: g for g in lib["gpu_types"]}
    assert by["v100"]["settings"] == [100, 125, 150, 175, 200, 225, 250]
    assert by["p100"]["settings"] == [125, 150, 175, 200, 225, 250]
    assert {g["setting_unit"] for g in lib["gpu_types"]} == {"power_limit_w"}
    assert all(p["setting"] in by[p["gpu_type"]]["settings"] for p in lib["profiles"])


def test_impossible_pairs_absent(lib: dict[str, Any]) -> None:
    """Gavel marks impossible pairs with 0 steps/s; none may appear, and all are counted."""
    d = gavel()
    kept = {(p["a"], p["b"], p["gpu_type"], p["gpus"]) for p in lib["pairs"]}
    for gpu in GAVEL_TYPES:
        zero: set[tuple[str, str, int]] = set()
        for key, entry in d[gpu].items():
            a, n = key[2:-1].rsplit("', ", 1)
            for other, shared in entry.items():
                if other != "null" and 0 in shared:
                    b = other[2:-1].rsplit("', ", 1)[0]
                    zero.add((min(a, b), max(a, b), int(n)))
        assert zero and not {(a, b, gpu, n) for a, b, n in zero} & kept
        assert lib["notes"]["pairs_dropped_impossible"][gpu] == len(zero)
    absent = ("ResNet-50 (batch size 128)", "ResNet-50 (batch size 64)", "v100", 1)
    assert absent not in kept
    # Gavel measured no co-location on more than one GPU: every multi-GPU pair entry is 0.
    assert {p["gpus"] for p in lib["pairs"]} == {1}


def test_every_gavel_type_is_mapped(lib: dict[str, Any]) -> None:
    d = gavel()
    types = consolidated_types(d, "v100") | consolidated_types(d, "p100")
    assert len(types) == 26
    mapped = {m["type"]: m for m in lib["mapping"]}
    assert set(mapped) == types
    for t in types:
        w = FAMILY_TO_ZEUS[job_family(t)]
        assert (mapped[t]["zeus_dataset"], mapped[t]["zeus_network"]) == (w.dataset, w.network)
        assert mapped[t]["why"]
        for gpu in GAVEL_TYPES:  # the chosen Zeus row exists on every GPU type
            assert zeus_mean(gpu, w.dataset, w.network, mapped[t]["zeus_batch_size"], 250)
    expected = {
        "ResNet-18 (batch size 16)": 16, "ResNet-50 (batch size 128)": 128,
        "Transformer (batch size 32)": 24, "Transformer (batch size 256)": 24,
        "LM (batch size 5)": 8, "LM (batch size 10)": 12, "LM (batch size 80)": 72,
        "Recommendation (batch size 8192)": 8192, "A3C": 128, "CycleGAN": 32,
    }  # fmt: skip
    assert {t: mapped[t]["zeus_batch_size"] for t in expected} == expected


def test_every_profile_key_present(lib: dict[str, Any]) -> None:
    d = gavel()
    settings = {g["name"]: g["settings"] for g in lib["gpu_types"]}
    keys = {(p["type"], p["gpu_type"], p["gpus"], p["setting"]) for p in lib["profiles"]}
    assert len(keys) == len(lib["profiles"]) == lib["notes"]["profiles"]
    want = {
        (k.rsplit("', ", 1)[0][2:], gpu, int(k.rsplit("', ", 1)[1][:-1]), s)
        for gpu in GAVEL_TYPES
        for k, entry in d[gpu].items()
        if entry["null"] > 0
        for s in settings[gpu]
    }
    assert keys == want


def test_nearest_batch_size_log2_ties_go_larger() -> None:
    assert nearest_batch_size(64, [8, 12, 16, 24]) == 24
    assert nearest_batch_size(12, [8, 18]) == 18  # 12/8 == 18/12
    assert nearest_batch_size(6, [4, 9]) == 9
    assert nearest_batch_size(5, [4, 8]) == 4


def test_shipped_file_equals_build(lib: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "lib.json"
    write_profile_library(lib, out)
    assert out.read_bytes() == profile_library().read_bytes()
    assert json.loads(profile_library().read_text()) == lib
    assert [p.name for p in tmp_path.iterdir()] == ["lib.json"]  # no temp file left behind
