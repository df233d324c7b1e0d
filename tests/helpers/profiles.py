"""Tiny hand-made profile libraries and measured points for the profiling tests.

Two sets, each with its figures worked out by hand in the tests that use it: the prior and points of the fit
(:func:`tiny_library`, :func:`a_points`, :func:`point`, :func:`entry`; ``tests/test_profiles_fit.py``,
``tests/test_gpu_priors.py``) and the library and points of the fidelity check (:data:`CHECK_LIBRARY_DOC`,
:func:`check_point`, ``A1`` ... ``C1``, :func:`write_inputs`; ``tests/test_profiles_check.py``,
``tests/test_output_paths.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wattplan.planner.profiling.points import MeasuredPoint, Provenance, write_points

# --- the fit ------------------------------------------------------------------------------------------------------


def point(kind: str, window: str, **kw: Any) -> MeasuredPoint:
    """A measured V100 point of kind ``kind`` from window ``window`` of ``hand.csv``."""
    return MeasuredPoint(kind, "v100", Provenance("hand.csv", "0" * 64, window), **kw)  # type: ignore[arg-type]


def tiny_library() -> dict[str, Any]:
    """A prior: v100 with settings 150 and 250 W, idle 40 W.

    A is exactly Amdahl (X1 8, alpha 0.2) at 250 W and 0.75 of it at 150 W, power 140 / 200 W; B runs on one GPU:
    9 / 10 steps/s, 150 / 180 W. A and B share a GPU at rates 0.7 and 1.0.
    """
    profiles = []
    for n in (1, 2, 4, 8):
        x = 8 * n / (1 + 0.2 * (n - 1))
        profiles += [
            {"type": "A", "gpu_type": "v100", "gpus": n, "setting": 250, "steps_per_s": x, "power_w": 200.0},
            {"type": "A", "gpu_type": "v100", "gpus": n, "setting": 150, "steps_per_s": 0.75 * x, "power_w": 140.0},
        ]
    profiles += [
        {"type": "B", "gpu_type": "v100", "gpus": 1, "setting": 150, "steps_per_s": 9.0, "power_w": 150.0},
        {"type": "B", "gpu_type": "v100", "gpus": 1, "setting": 250, "steps_per_s": 10.0, "power_w": 180.0},
    ]
    return {
        "schema": "wattplan.profiles/1",
        "sources": [],
        "gpu_types": [
            {"name": "v100", "idle_power_w": 40, "setting_unit": "power_limit_w", "settings": [150, 250]},
        ],
        "profiles": profiles,
        "pairs": [{"a": "A", "b": "B", "gpu_type": "v100", "gpus": 1, "rho_a": 0.7, "rho_b": 1.0}],
        "notes": {},
    }


def a_points() -> list[MeasuredPoint]:
    """Two measured points of job A at 250 W: 10 steps/s on 1 GPU, 18 on 2."""
    return [
        point("exclusive", "a1", job_type="A", gpus=1, setting=250, steps_per_s=10.0, power_w=220.0, utilisation=0.9),
        point("exclusive", "a2", job_type="A", gpus=2, setting=250, steps_per_s=18.0, power_w=202.0, utilisation=0.81),
    ]


def entry(doc: dict[str, Any], t: str, n: int, s: int) -> dict[str, Any]:
    """The one profile row of library document ``doc`` for job type ``t`` on ``n`` GPUs at setting ``s``."""
    (row,) = [p for p in doc["profiles"] if (p["type"], p["gpus"], p["setting"]) == (t, n, s)]
    return row


# --- the fidelity check -------------------------------------------------------------------------------------------

# A tiny library: job A on 1 and 2 V100s at 250 W and on 1 at 200 W, job B on 1 at 250 W, pair {A, B} on 1.
CHECK_LIBRARY_DOC: dict[str, Any] = {
    "schema": "wattplan.profiles/1",
    "gpu_types": [{"name": "v100", "idle_power_w": 40, "setting_unit": "power_limit_w", "settings": [200, 250]}],
    "profiles": [
        {"type": "A", "gpu_type": "v100", "gpus": 1, "setting": 250, "steps_per_s": 10.0, "power_w": 200.0},
        {"type": "A", "gpu_type": "v100", "gpus": 2, "setting": 250, "steps_per_s": 18.0, "power_w": 190.0},
        {"type": "A", "gpu_type": "v100", "gpus": 1, "setting": 200, "steps_per_s": 8.0, "power_w": 160.0},
        {"type": "B", "gpu_type": "v100", "gpus": 1, "setting": 250, "steps_per_s": 5.0, "power_w": 150.0},
    ],
    "pairs": [{"a": "A", "b": "B", "gpu_type": "v100", "gpus": 1, "rho_a": 0.6, "rho_b": 0.5}],
}
"""The library the fidelity check compares its measured points with."""


def check_point(kind: str, window: str, **kw: Any) -> MeasuredPoint:
    """A measured point of kind ``kind`` from window ``window`` of ``log.csv`` (V100 unless ``gpu_type`` is given)."""
    fields = {"gpu_type": "v100"} | ({"setting_unit": "power_limit_w"} if kind in ("exclusive", "pair") else {}) | kw
    return MeasuredPoint(kind=kind, provenance=Provenance("log.csv", "0" * 64, window), **fields)


A1 = check_point("exclusive", "w1", job_type="A", gpus=1, setting=250, steps_per_s=8.0, power_w=220.0)
"""Job A alone on 1 V100 at 250 W."""
A2 = check_point("exclusive", "w2", job_type="A", gpus=2, setting=250, steps_per_s=12.0, power_w=180.0)
"""Job A alone on 2 V100s at 250 W."""
AB = check_point("pair", "w3", job_type="A", partner_type="B", gpus=1, setting=250, steps_per_s=4.0, power_w=170.0)
"""Job A sharing 1 V100 with B at 250 W."""
IDLE = check_point("idle", "w4", power_w=50.0)
"""An idle V100."""
C1 = check_point("exclusive", "w5", job_type="C", gpus=1, setting=250, steps_per_s=3.0, power_w=100.0)
"""Job C, a type the library does not have, on 1 V100 at 250 W."""


def write_inputs(tmp_path: Path) -> tuple[Path, Path]:
    """:data:`CHECK_LIBRARY_DOC` and the points ``A1``, ``A2``, ``C1`` as files: ``(lib.json, meas.json)``."""
    lib_path, meas = tmp_path / "lib.json", tmp_path / "meas.json"
    lib_path.write_text(json.dumps(CHECK_LIBRARY_DOC))
    write_points(meas, [A1, A2, C1])
    return lib_path, meas
