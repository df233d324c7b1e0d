"""Demand response live: a 30% cut of the cluster's power held for a third of the run, on the emulated cluster.

The live counterpart of ``benchmarks/demand_response.py`` (issue 44, item 4). Per trace, on ``v100:16`` at time scale
30 (the agent's median round overhead, 0.2-0.4 real s, is 6-12 emulated s against rounds of 360 s and jobs of
15-60 minutes): wattplan's agent in the runtime-bounded energy mode (``--max-jct-increase 3``, HiGHS 2 s) with a
cap file (``--power-cap-file``), twice on a fresh cluster:

1. ``free``: no cap. The cluster's draw (every GPU's DCGM power plus every node's, from the cluster's Prometheus
   every real second) over the run's middle third gives the cut: 70% of its mean;
2. ``cut``: the same run, the cap file set to that cut from a third of the free run's window to two thirds (written
   on the emulated clock, as a grid program would), then ``none``.

How the cut was followed is :func:`planner.control.cap_schedule.cap_followed` on the live draw, the replay's own
measure: seconds from the step until the draw came within the cap, then the mean and highest draw and the seconds
above it while it held. Each cluster runs in a short folder under ``/tmp`` (Slurm's sockets live under it). Writes
``OUT/FAMILY/{free,cut}/`` (the cluster report, the draw, the agent's log and state) and
``OUT/live_demand_response.json``; prints one line per family. With ``--via-http`` the cut run's cap is sent to
the agent's HTTP endpoint (``--power-cap-port``, a fresh token) at each step instead of written into its file.

Usage: ``python -m benchmarks.live_demand_response TRACE [TRACE...] --out OUT`` (root; Slurm, munge, Prometheus).
"""

from __future__ import annotations

import argparse
import csv
import http.client
import json
import secrets
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.live_compare import start_agent_and_submit, wattplan_cli
from wattplan.planner.agent.cap_endpoint import PATH as CAP_PATH
from wattplan.planner.agent.observations import GPU_POWER
from wattplan.planner.agent.prometheus import PrometheusClient
from wattplan.planner.cluster.prometheus_server import free_port
from wattplan.planner.contracts.jsonio import write_text_atomic
from wattplan.planner.control.cap_schedule import CapStep, cap_followed

SCALE = 30.0
ROUND_S = 360.0
LOAD_S = 30.0
RESTART_S = LOAD_S + 7.0 * SCALE
"""What a restart costs on the emulated cluster: the checkpoint load plus Slurm's 7 real s before a requeued job
runs again (``benchmarks/live_compare.py``)."""
CUT = 0.30
DRAW = f"sum({GPU_POWER}) + sum(wattplan_node_power_watts)"
"""The cluster's draw (W): every GPU and every node besides its GPUs, as the emulator exports them."""


def _put_cap(port: int, token: str, text: str) -> None:
    """``PUT /power-cap`` ``text`` to the agent's endpoint on this host; RuntimeError unless it answers 200."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("PUT", CAP_PATH, body=text.encode(), headers={"Authorization": f"Bearer {token}"})
        answer = conn.getresponse()
        said = answer.read().decode().strip()
    finally:
        conn.close()
    if answer.status != 200:
        raise RuntimeError(f"the cap endpoint answered {answer.status}: {said}")


def _cap_writer(
    cap_file: Path,
    steps: list[CapStep],
    start_unix: float,
    stop: threading.Event,
    endpoint: tuple[int, str] | None,
    failed: list[str],
) -> None:
    """Set each step's cap at its time (``start_unix`` + emulated s / scale), until ``stop``.

    Written into ``cap_file``, or with ``endpoint`` (port, token) sent to the agent's endpoint, which writes it
    there; a request that fails is added to ``failed``.
    """
    for step in steps:
        wait = start_unix + step.t_s / SCALE - time.time()
        if wait > 0 and stop.wait(wait):
            return
        text = "none" if step.cap_w is None else f"{step.cap_w:.1f}"
        if endpoint is None:
            write_text_atomic(cap_file, text + "\n")
            continue
        try:
            _put_cap(*endpoint, text)
        except (OSError, RuntimeError) as e:
            failed.append(f"{text} at {step.t_s:.0f} s: {e}")


def one_run(trace: Path, out: Path, steps: list[CapStep], via_http: bool = False) -> dict[str, Any]:
    """One live run of ``trace`` with the cap ``steps`` (emulated s after the submission); its figures.

    ``via_http``: the cap is sent to the agent's endpoint (``--power-cap-port``) rather than written into its file.
    """
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="wpdr-", dir="/tmp"))  # short: Slurm's sockets live under it
    scratch.chmod(0o755)
    cluster = scratch / "c"
    argv = ["cluster", "up", "--dir", str(cluster), "--gpus", "v100:16", "--time-scale", f"{SCALE:g}"]
    wattplan_cli(*argv, "--restart-s", f"{LOAD_S:g}")
    cap_file = out / "cap"
    write_text_atomic(cap_file, "none\n")
    stop = threading.Event()
    failed: list[str] = []
    try:
        manifest = json.loads((cluster / "cluster.json").read_text())
        agent_args = [
            "--until-idle", "--round-s", f"{ROUND_S:g}", "--restart-s", f"{RESTART_S:g}", "--start-s", f"{LOAD_S:g}",
            "--mode", "steered", "--max-jct-increase", "3", "--solver", "highs", "--time-limit", "2",
            "--power-cap-file", str(cap_file),
        ]  # fmt: skip
        http_cap: tuple[int, str] | None = None
        if via_http:
            token, port = secrets.token_hex(16), free_port()
            token_file = scratch / "cap-token"
            token_file.write_text(token + "\n")
            token_file.chmod(0o600)
            agent_args += ["--power-cap-port", str(port), "--power-cap-token-file", str(token_file)]
            http_cap = (port, token)
        with (out / "agent.log").open("w") as log:
            agent, start_unix = start_agent_and_submit(cluster, trace, agent_args, log, out / "agent.log")
            writer = threading.Thread(
                target=_cap_writer, args=(cap_file, steps, start_unix, stop, http_cap, failed), daemon=True
            )
            writer.start()
            code = agent.wait(timeout=4 * 3600)
        stop.set()
        if code != 0:
            raise SystemExit(f"agent exited {code}: {out / 'agent.log'}")
        if failed:
            raise SystemExit(f"the cap endpoint refused: {'; '.join(failed)}")
        end_unix = time.time()
        wattplan_cli("cluster", "report", "--dir", str(cluster), "--json", str(out / "report.json"))
        report = json.loads((out / "report.json").read_text())
        (series,) = PrometheusClient(str(manifest["prometheus_url"])).range_query(DRAW, start_unix, end_unix, 1.0)
    finally:
        stop.set()
        wattplan_cli("cluster", "down", "--dir", str(cluster))
        shutil.copy(cluster / "agent.db", out / "agent.db")
        shutil.rmtree(scratch, ignore_errors=True)
    t0, scale = float(manifest["t0_unix"]), float(manifest["time_scale"])
    start_s = (start_unix - t0) * scale
    points = [((t - t0) * scale, w) for t, w in series.points]
    power = [(a, b, w) for (a, w), (b, _) in zip(points, points[1:], strict=False)]  # each reading to the next
    with (out / "draw.csv").open("w", newline="") as f:
        csv.writer(f).writerows([("t_s", "watts"), *((round(t - start_s, 1), round(w, 1)) for t, w in points)])
    return {"report": report, "start_s": start_s, "power": power, "steps": cap_followed(power, tuple(steps), start_s)}


def middle_third(run: dict[str, Any]) -> tuple[float, float, float]:
    """``(a, b, mean draw W)`` of the run's middle third, ``a`` and ``b`` in emulated s after its submission."""
    power, start = run["power"], run["start_s"]
    end = power[-1][1]
    a, b = start + (end - start) / 3, start + 2 * (end - start) / 3
    energy = sum(w * (min(t1, b) - max(t0, a)) for t0, t1, w in power if t1 > a and t0 < b)
    return a - start, b - start, energy / (b - a)


def main() -> None:
    """Both runs of every trace; one line each, the figures in ``OUT/live_demand_response.json``."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="+", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument(
        "--via-http",
        action="store_true",
        help="Send the cut to the agent's HTTP endpoint (--power-cap-port, with a token) instead of its cap file.",
    )
    args = p.parse_args()
    rows = []
    for trace in args.traces:
        family = trace.stem
        free = one_run(trace, args.out / family / "free", [])
        a, b, mean_w = middle_third(free)
        cap_w = (1 - CUT) * mean_w
        cut = one_run(trace, args.out / family / "cut", [CapStep(a, cap_w), CapStep(b, None)], args.via_http)
        held = cut["steps"][0]
        runs = (("free", free), ("cut", cut))
        row = {
            "family": family,
            "cap_w": cap_w,
            "cap_from_s": a,
            "cap_until_s": b,
            "free_mean_w": mean_w,
            **{k: held.get(k) for k in ("followed_after_s", "mean_w", "max_w", "over_cap_s")},
            "energy_kwh": {"free": free["report"]["energy_kwh"], "cut": cut["report"]["energy_kwh"]},
            "avg_jct_s": {name: run["report"]["avg_jct_s"] for name, run in runs},
            "p95_jct_s": {name: run["report"]["p95_jct_s"] for name, run in runs},
            "completed": {name: run["report"]["jobs_completed"] for name, run in runs},
            "total": free["report"]["jobs_total"],
        }
        rows.append(row)
        print(
            f"{family}: cap {cap_w:.0f} W (70% of {mean_w:.0f} W) from {a:.0f} to {b:.0f} s: followed after "
            f"{held.get('followed_after_s')} s, mean {held.get('mean_w')} W, max {held.get('max_w')} W, "
            f"{held.get('over_cap_s')} s over; avg JCT {row['avg_jct_s']}, p95 {row['p95_jct_s']}, "
            f"completed {row['completed']} of {row['total']}",
            flush=True,
        )
    (args.out / "live_demand_response.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
