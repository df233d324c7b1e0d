"""The Prometheus client, the observations, the Prometheus server and the cluster report.

The slow tests run Debian's real Prometheus (skipped without it, failed under ``WATTPLAN_REQUIRE_SLURM=1``)
scraping a tiny exporter whose text the test changes in three phases; each phase is held until Prometheus has
scraped it and scraped once more after the phase's mark time, so every sample of the next phase is later than the
mark and the expected energies are exact.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from wattplan.planner.agent import observations as obs
from wattplan.planner.agent.prometheus import (
    PrometheusClient,
    PrometheusError,
    Sample,
    Series,
    backoff_delays,
    parse_matrix,
    parse_vector,
    with_retries,
)
from wattplan.planner.cluster import prometheus_server
from wattplan.planner.cluster.layout import ClusterLayout, write_json_atomic
from wattplan.planner.cluster.report import ReportError, cluster_report

PROGRAM = "/usr/bin/prometheus"
REQUIRED = os.environ.get("WATTPLAN_REQUIRE_SLURM") == "1"


def _free_port() -> int:
    return prometheus_server.free_port()


# ---------------------------------------------------------------------------------------------- tiny HTTP servers


class _Server:
    """A ThreadingHTTPServer on 127.0.0.1 whose answer is ``self.answer`` (status, body, delay_s)."""

    def __init__(self, body: bytes = b"", status: int = 200, delay_s: float = 0.0):
        self.answer = (status, body, delay_s)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                status, body, delay = owner.answer
                if delay:
                    time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/plain; version=0.0.4")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (the time-out test)

            do_GET = _reply
            do_POST = _reply

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port: int = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _gpu(metric: str, gpu: int, value: float, jobs: str) -> str:
    job = f',hpc_job="{jobs}"' if jobs else ""
    return (
        f'{metric}{{gpu="{gpu}",UUID="GPU-{gpu}",device="nvidia{gpu}",modelName="Tesla V100",'
        f'Hostname="n0"{job}}} {value}\n'
    )


def exporter_text(phase: int, energy_mj: list[float], jobs: list[str], steps: dict[str, int], node_j: float) -> str:
    """Three GPUs of node n0 (energy counters, power, util), the jobs' steps and the node's energy counter."""
    power = [150.0, 250.0, 40.0] if phase == 1 else [200.0, 260.0, 50.0]
    util = [90.0, 80.0, 0.0]
    lines = ["# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"]
    for i in range(3):
        lines.append(_gpu("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", i, energy_mj[i], jobs[i]))
        lines.append(_gpu("DCGM_FI_DEV_POWER_USAGE", i, power[i], jobs[i]))
        lines.append(_gpu("DCGM_FI_DEV_GPU_UTIL", i, util[i], jobs[i]))
    for job, done in steps.items():
        lines.append(f'wattplan_job_steps_done{{hpc_job="{job}",job_type="resnet"}} {done}\n')
    lines.append(f'wattplan_node_energy_joules_total{{Hostname="n0"}} {node_j}\n')
    lines.append(f"test_phase {phase}\n")
    return "".join(lines)


PHASES = [
    # energy (mJ) of GPUs 0, 1, 2; their hpc_job labels; steps done; node energy (J)
    ([1_000_000, 2_000_000, 500_000], ["11", "12,13", ""], {"11": 100, "12": 10, "13": 20}, 1000.0),
    ([1_600_000, 2_900_000, 560_000], ["11", "12,13", ""], {"11": 200, "12": 15, "13": 30}, 1500.0),
    # GPU 0's counter resets; job 13 ends, so GPU 1 is job 12's alone
    ([100_000, 3_200_000, 590_000], ["11", "12", ""], {"11": 300, "12": 25}, 1800.0),
]


@dataclass
class Live:
    """A running exporter and Prometheus, and the mark time of each phase (Unix s)."""

    exporter: _Server
    process: prometheus_server.PrometheusProcess
    client: PrometheusClient
    marks: list[float]


def _wait(what: str, ready: Any, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _value(client: PrometheusClient, query: str) -> float | None:
    found = client.instant(query)
    return found[0].value if found else None


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    if not os.access(PROGRAM, os.X_OK):
        if REQUIRED:
            pytest.fail(f"WATTPLAN_REQUIRE_SLURM=1 but {PROGRAM} is missing (apt-get install prometheus)")
        pytest.skip(f"{PROGRAM} is missing (apt-get install prometheus)")
    exporter = _Server(exporter_text(1, *PHASES[0]).encode())
    layout = ClusterLayout(tmp_path_factory.mktemp("cluster"))
    process = prometheus_server.start(layout, exporter.port, program=PROGRAM, timeout_s=120)
    client = PrometheusClient(process.url, timeout_s=30)
    marks: list[float] = []
    try:
        for phase, data in enumerate(PHASES, start=1):
            exporter.answer = (200, exporter_text(phase, *data).encode(), 0.0)
            _wait(f"phase {phase}", lambda p=phase: _value(client, "test_phase") == p)
            mark = time.time()
            _wait("a scrape after the mark", lambda m=mark: (_value(client, 'timestamp(up{job="dcgm"})') or 0) > m)
            marks.append(mark)
        yield Live(exporter, process, client, marks)
    finally:
        prometheus_server.stop(process.pid)
        exporter.close()


# ---------------------------------------------------------------------------------------------- real Prometheus


@pytest.mark.slow
def test_server_is_ready_and_writes_its_config(live: Live) -> None:
    assert live.client.ready()
    assert prometheus_server.running(live.process.pid)
    config = (live.process.log.parent.parent / "prometheus" / "prometheus.yml").read_text()
    assert "honor_labels: true" in config and f"127.0.0.1:{live.exporter.port}" in config
    assert "scrape_interval: 1000ms" in config


@pytest.mark.slow
def test_instant_and_range_queries(live: Live) -> None:
    t1, t2, t3 = live.marks
    gpu1 = 'max by (Hostname, gpu) (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="1"})'
    (at_t1,) = live.client.instant(gpu1, at_unix=t1)
    assert at_t1.value == 2_000_000 and at_t1.labels == {"Hostname": "n0", "gpu": "1"}
    assert at_t1.t_unix == pytest.approx(t1, abs=1e-3)
    (series,) = live.client.range_query(gpu1, t1, t3 + 1.0, 0.5)  # a scrape of phase 3 follows t3
    values = [v for _, v in series.points]
    assert set(values) <= {2_000_000, 2_900_000, 3_200_000} and values[0] == 2_000_000 and values[-1] == 3_200_000
    assert values == sorted(values)
    # raw samples read in small chunks are the same as in one piece: none repeated, none lost on a boundary
    whole = live.client.raw(obs.GPU_ENERGY, t1 - 3, t3)
    chunked = live.client.raw(obs.GPU_ENERGY, t1 - 3, t3, chunk_s=0.7)
    assert sorted(whole, key=lambda s: sorted(s.labels.items())) == sorted(
        chunked, key=lambda s: sorted(s.labels.items())
    )
    assert len(whole) == 4 and all(len(s.points) >= 1 for s in whole)  # GPU 1 has two series (13 left)
    steps = {s.labels["hpc_job"]: s.value for s in live.client.instant("wattplan_job_steps_done", t3)}
    assert steps == {"11": 300, "12": 25}  # job 13's series went stale when it left the scrape


@pytest.mark.slow
def test_observation_energy_apportioning_and_reset(live: Live) -> None:
    t1, t2, t3 = live.marks
    o = obs.observe(live.client, t1, t3, weights={"12": 2.0, "13": 1.0}, lookback_s=30)
    gpus = {g.key.gpu: g for g in o.gpus}
    # GPU 0: +600 J, then a reset to 100 J counted from 0: 700 J; GPU 1: +900 J +300 J; GPU 2 (idle): +60 J +30 J
    assert gpus["0"].energy_j == pytest.approx(700) and gpus["0"].resets == 1
    assert gpus["1"].energy_j == pytest.approx(1200) and gpus["1"].jobs == ("12", "13")
    assert gpus["2"].energy_j == pytest.approx(90) and gpus["2"].idle_j == pytest.approx(90)
    assert o.idle_gpu_j == pytest.approx(90) and o.gpu_energy_j == pytest.approx(1990)
    # the shared GPU's 900 J split 2:1 while 12 and 13 shared it; its last 300 J are job 12's alone
    jobs = {j.job_id: j for j in o.jobs}
    assert jobs["11"].energy_j == pytest.approx(700)
    assert jobs["12"].energy_j == pytest.approx(600 + 300)
    assert jobs["13"].energy_j == pytest.approx(300)
    assert (jobs["11"].steps_t0, jobs["11"].steps_t1, jobs["11"].job_type) == (100, 300, "resnet")
    assert (jobs["13"].steps_t0, jobs["13"].steps_t1) == (20, None)
    assert [(n.hostname, n.energy_j) for n in o.nodes] == [("n0", pytest.approx(800))]
    # power: samples after t1 are phase 1's 150 W (the scrape after the mark), then 200 W
    assert 150 < (gpus["0"].mean_power_w or 0) < 200 and gpus["1"].mean_util_pct == pytest.approx(80)
    last = obs.observe(live.client, t2, t3, lookback_s=30)
    assert [g.mean_power_w for g in last.gpus] == [pytest.approx(200), pytest.approx(260), pytest.approx(50)]
    assert [round(g.energy_j, 6) for g in last.gpus] == [100, 300, 30]
    assert o.scrape.ok and o.scrape.targets == o.scrape.targets_up == 1, o.scrape
    assert any("reset" in n for n in o.notes)
    # default weights: equal split
    equal = obs.observe(live.client, t1, t2, lookback_s=30)
    assert {j.job_id: round(j.energy_j, 6) for j in equal.jobs} == {"11": 600, "12": 450, "13": 450}


@pytest.mark.slow
def test_scrape_health_says_when_data_is_missing(live: Live) -> None:
    t3 = live.marks[-1]
    later = obs.observe(live.client, t3 + 60, t3 + 120, lookback_s=30)
    assert not later.scrape.ok and "has no DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION samples" in later.scrape.reason
    other = obs.observe(live.client, live.marks[0], t3, job_label="nope", lookback_s=30)
    assert not other.scrape.ok and "no target of scrape job 'nope'" in other.scrape.reason


@pytest.mark.slow
def test_server_refuses_a_taken_port_with_its_log(tmp_path: Path) -> None:
    if not os.access(PROGRAM, os.X_OK):
        pytest.skip(f"{PROGRAM} is missing")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(prometheus_server.PrometheusStartError, match="exited with status") as err:
            prometheus_server.start(ClusterLayout(tmp_path), 9, port=taken.getsockname()[1], program=PROGRAM)
    assert "address already in use" in str(err.value)


def test_server_start_without_the_program(tmp_path: Path) -> None:
    with pytest.raises(prometheus_server.PrometheusStartError, match="cannot run"):
        prometheus_server.start(ClusterLayout(tmp_path), 9, program=str(tmp_path / "no-prometheus"))


def test_stop_leaves_no_process_and_never_signals_another_program() -> None:
    sleeper = shutil.which("sleep")
    assert sleeper
    import subprocess

    from wattplan.planner.cluster.processes import command_line

    proc = subprocess.Popen([sleeper, "30"], start_new_session=True)
    try:
        # Until the child has exec'd, its command line is this test's (seen on a busy CI machine): wait for it.
        deadline = time.monotonic() + 60
        while "sleep" not in (command_line(proc.pid) or "") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not prometheus_server.stop(proc.pid)  # not a prometheus: left alone
        assert proc.poll() is None
        seen = command_line(proc.pid)
        assert prometheus_server.stop(proc.pid, program="sleep"), f"pid {proc.pid} runs {seen!r}"
        assert proc.wait(timeout=60) is not None and not prometheus_server.running(proc.pid)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_started_server_stops(tmp_path: Path) -> None:
    if not os.access(PROGRAM, os.X_OK):
        pytest.skip(f"{PROGRAM} is missing")
    p = prometheus_server.start(ClusterLayout(tmp_path), 9, program=PROGRAM, timeout_s=120)
    assert PrometheusClient(p.url).ready()
    assert prometheus_server.stop(p.pid)
    assert not prometheus_server.running(p.pid)
    deadline = time.monotonic() + 120  # gone from /proc once reaped (a zombie for a moment on a loaded machine)
    while Path(f"/proc/{p.pid}").exists() and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(p.pid, os.WNOHANG)
        time.sleep(0.1)
    assert not Path(f"/proc/{p.pid}").exists()
    assert not prometheus_server.stop(p.pid)


# ---------------------------------------------------------------------------------------------- client errors


def test_unreachable_prometheus_is_retried_with_backoff() -> None:
    client = PrometheusClient(f"http://127.0.0.1:{_free_port()}", timeout_s=2)
    with pytest.raises(PrometheusError, match="cannot reach Prometheus") as one:
        client.instant("up")
    assert one.value.retryable
    slept: list[float] = []
    with pytest.raises(PrometheusError, match=r"^4 attempt\(s\) failed; the last: cannot reach"):
        with_retries(lambda: client.instant("up"), attempts=4, base_s=0.5, max_s=8, sleep=slept.append)
    assert slept == [0.5, 1.0, 2.0]


def test_backoff_is_capped_per_sleep_and_in_total() -> None:
    assert backoff_delays(6, 1.0, 4.0, 100.0) == [1.0, 2.0, 4.0, 4.0, 4.0]
    assert backoff_delays(6, 1.0, 4.0, 7.0) == [1.0, 2.0, 4.0]
    assert backoff_delays(1, 1.0, 4.0, 7.0) == []


def test_retries_stop_at_the_first_answer_and_on_errors_that_will_not_pass() -> None:
    calls: list[int] = []

    def flaky() -> int:
        calls.append(1)
        if len(calls) < 3:
            raise PrometheusError("down", retryable=True)
        return 42

    slept: list[float] = []
    assert with_retries(flaky, attempts=5, base_s=0.1, sleep=slept.append) == 42
    assert slept == [0.1, 0.2]

    def bad_query() -> int:
        raise PrometheusError("HTTP 400", retryable=False)

    with pytest.raises(PrometheusError, match="^HTTP 400$"):
        with_retries(bad_query, sleep=slept.append)
    assert slept == [0.1, 0.2]


@pytest.mark.parametrize(
    ("status", "body", "message", "retryable"),
    [
        (200, b"<html>not json</html>", "the answer is not JSON", False),
        (200, b"[1, 2]", "JSON but not an object", False),
        (
            400,
            b'{"status":"error","errorType":"bad_data","error":"parse error: unexpected <EOF>"}',
            "HTTP 400: parse error: unexpected <EOF>",
            False,
        ),
        (503, b"Service Unavailable", "HTTP 503: Service Unavailable", True),
        (200, b'{"status":"error","error":"boom"}', "status 'error': boom", False),
        (200, b'{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}', "result type 'scalar'", False),
        (200, b'{"status":"success","data":{"resultType":"vector","result":{}}}', "not a list", False),
        (
            200,
            b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1_0"]}]}}',
            "sample value '1_0' is not a number",
            False,
        ),
        (
            200,
            b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1},"value":[1,"1"]}]}}',
            "metric must be an object of text labels",
            False,
        ),
        (200, b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}}', "time, ", False),
    ],
)
def test_malformed_answers_are_clear_errors(status: int, body: bytes, message: str, retryable: bool) -> None:
    server = _Server(body, status)
    try:
        with pytest.raises(PrometheusError) as err:
            PrometheusClient(server.url, timeout_s=5).instant("up")
        assert message in str(err.value) and err.value.retryable is retryable
    finally:
        server.close()


def test_a_slow_answer_times_out() -> None:
    server = _Server(b"{}", 200, delay_s=1.0)
    try:
        with pytest.raises(PrometheusError, match="did not answer within 0.2 s") as err:
            PrometheusClient(server.url, timeout_s=0.2).instant("up")
        assert err.value.retryable
    finally:
        server.close()


def test_special_values_and_matrix_parsing() -> None:
    body = json.dumps(
        {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [
                    {"metric": {"i": "a"}, "value": [10.5, "NaN"]},
                    {"metric": {"i": "b"}, "value": [10.5, "+Inf"]},
                    {"metric": {"i": "c"}, "value": [10.5, "-Inf"]},
                    {"metric": {"i": "d"}, "value": [10.5, "1.5e3"]},
                ],
            },
        }
    ).encode()
    values = [s.value for s in parse_vector(body)]
    assert math.isnan(values[0]) and values[1:] == [math.inf, -math.inf, 1500.0]
    matrix = json.dumps(
        {
            "status": "success",
            "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[2, "3"], [1, "1"]]}]},
        }
    ).encode()
    assert parse_matrix(matrix) == (Series({}, ((1.0, 1.0), (2.0, 3.0))),)
    with pytest.raises(PrometheusError, match="not http"):
        PrometheusClient("localhost:9090")


# ---------------------------------------------------------------------------------------------- pure observation math


def _stream(*points: tuple[float, float, str]) -> list[tuple[float, float, tuple[str, ...]]]:
    return [(t, v, obs.job_ids(j)) for t, v, j in points]


def test_counter_window_baseline_resets_and_from_zero() -> None:
    s = _stream((0, 100, "1"), (5, 150, "1"), (10, 170, "1"), (15, 20, "1"), (20, 50, "1"), (25, 90, "1"))
    w = obs.counter_window(s, 5, 20)
    assert [(i.t_unix, i.joules) for i in w.increments] == [(10, 20), (15, 20), (20, 30)]
    assert w.resets == 1 and w.baseline and w.joules == 70
    late = _stream((12, 40, "1"), (14, 50, "1"))
    assert obs.counter_window(late, 10, 20).joules == 10  # baseline: its first sample
    assert obs.counter_window(late, 10, 20, from_zero=True).joules == 50
    assert not obs.counter_window(late, 10, 20).baseline


def test_idle_time_counts_the_steady_idle_increments_of_powered_gpus() -> None:
    """Idle power is idle energy over idle time while on, steady: not right after a job or a boot.

    Window (10, 40], real s, a scrape every 10 s. GPU 0 of n0 (3 W): idle 10-20 (30 J), job 7 20-30 (230 J), idle
    30-40 (30 J, but the first idle increment after the job: it may hold the job's end): 30 J over 10 s. GPU 1 of
    n0: off 10-20 (0 W, 0 J), booting 20-30 (20 J, the first after off), idle 30-40 (30 J): 30 J over 10 s. GPU 0
    of n1 (2 W) was read late at 20 (0 J: its counter had not moved though it reads 2 W), then 40 J at 30 and 20 J
    at 40: 60 J over 30 s, 2 W (counting only the increments with energy would make it 60 J over 20 s, 3 W).
    Per node: n0 60 J over 20 GPU-seconds, 20 / 30 of a GPU-window; n1 60 J over 1.0.
    """
    energy = [
        Series({"Hostname": "n0", "gpu": "0"}, ((10, 0.0), (20, 30_000.0), (40, 290_000.0))),
        Series({"Hostname": "n0", "gpu": "0", "hpc_job": "7"}, ((30, 260_000.0),)),
        Series({"Hostname": "n0", "gpu": "1"}, ((10, 5_000.0), (20, 5_000.0), (30, 25_000.0), (40, 55_000.0))),
        Series({"Hostname": "n1", "gpu": "0"}, ((10, 0.0), (20, 0.0), (30, 40_000.0), (40, 60_000.0))),
    ]
    power = [
        Series({"Hostname": "n0", "gpu": "0"}, ((20, 3.0), (30, 250.0), (40, 3.0))),
        Series({"Hostname": "n0", "gpu": "1"}, ((20, 0.0), (30, 3.0), (40, 3.0))),
        Series({"Hostname": "n1", "gpu": "0"}, ((20, 2.0), (30, 2.0), (40, 2.0))),
    ]
    up = [Sample({"instance": "a:1"}, 40, 1.0)]
    seen = obs.build_observation(10, 40, energy, power, [], [], [], [], up)
    by_gpu = {(g.key.hostname, g.key.gpu): (g.idle_on_j, g.idle_s) for g in seen.gpus}
    assert by_gpu == {("n0", "0"): (30.0, 10.0), ("n0", "1"): (30.0, 10.0), ("n1", "0"): (60.0, 30.0)}
    assert seen.job("7") is not None and seen.job("7").energy_j == 230.0  # type: ignore[union-attr]
    assert {g.key: g.idle_j for g in seen.gpus}[obs.GpuKey("n0", "0")] == 60.0  # the report's idle energy: all of it
    assert seen.idle_by_node() == {"n0": (60.0, pytest.approx(20.0 / 30.0)), "n1": (60.0, 1.0)}
    # Without power samples a GPU is on while its counter moves: n1's late read then looks like time off.
    blind = obs.build_observation(10, 40, energy, [], [], [], [], [], up)
    assert {(g.key.hostname, g.key.gpu): g.idle_s for g in blind.gpus}[("n1", "0")] == 10.0
    # A counter with no sample before the window, counted from 0 (an emulator's): its first increment's span is not
    # known (the counter started at some earlier time), so it is not metered; the next two are: 40 J over 20 s.
    late = [Series({"Hostname": "n2", "gpu": "0"}, ((15, 50_000.0), (25, 70_000.0), (35, 90_000.0)))]
    fresh = obs.build_observation(10, 40, late, [], [], [], [], [], up, from_zero=True)
    assert fresh.idle_gpu_j == 90.0 and (fresh.gpus[0].idle_on_j, fresh.gpus[0].idle_s) == (40.0, 20.0)


def test_shares_by_weights_equal_otherwise() -> None:
    assert obs.shares(("a", "b"), {"a": 300.0, "b": 100.0}) == {"a": 0.75, "b": 0.25}
    assert obs.shares(("a", "b"), {"a": 300.0}) == {"a": 0.5, "b": 0.5}
    assert obs.shares(("a", "b"), {"a": 300.0, "b": 0.0}) == {"a": 0.5, "b": 0.5}
    assert obs.shares(("a",), None) == {"a": 1.0}
    assert obs.job_ids(" 13,12 ,,12") == ("12", "13") and obs.job_ids(None) == ()


def test_scrape_health_reasons() -> None:
    up = [Sample({"instance": "a:1"}, 10, 1.0)]
    assert obs.scrape_health(up, 9.5, 10, 5, "dcgm").ok
    assert "is 6.0 s old" in obs.scrape_health(up, 4, 10, 5, "dcgm").reason
    down = [*up, Sample({"instance": "b:2"}, 10, 0.0)]
    assert "could not scrape b:2 (up = 0)" in obs.scrape_health(down, 9.5, 10, 5, "dcgm").reason


def test_series_without_gpu_labels_are_noted_not_fatal() -> None:
    notes: list[str] = []
    merged = obs.merge_streams([Series({"__name__": "x", "gpu": "0"}, ((1.0, 1.0),))], ("Hostname", "gpu"), notes)
    assert merged == {} and "without label(s) Hostname, gpu" in notes[0]


# ---------------------------------------------------------------------------------------------- the report


class FakePrometheus:
    """Answers the report's queries from hand-made series (Unix times 1000..1200)."""

    def __init__(self, fail: bool = False):
        self.fail = fail

    def raw(self, selector: str, start_unix: float, end_unix: float) -> tuple[Series, ...]:
        if self.fail:
            raise PrometheusError("cannot reach Prometheus at http://x", retryable=True)
        gpu = {"Hostname": "n0"}
        data = {
            obs.GPU_ENERGY: [
                Series({**gpu, "gpu": "0", "hpc_job": "11"}, ((1005, 0.0), (1050, 1_800_000.0), (1100, 3_600_000.0))),
                Series({**gpu, "gpu": "0"}, ((1110, 3_700_000.0),)),  # idle after 11: 100 J
                Series({**gpu, "gpu": "1", "hpc_job": "12,13"}, ((1010, 0.0), (1050, 7_200_000.0))),
                Series({**gpu, "gpu": "1", "hpc_job": "13"}, ((1060, 8_200_000.0),)),
                Series({**gpu, "gpu": "2"}, ((1001, 0.0), (1200, 360_000.0))),
            ],
            obs.NODE_ENERGY: [Series(gpu, ((1001, 0.0), (1200, 36_000.0)))],
            obs.STEPS_DONE: [
                Series({"hpc_job": "11"}, ((1005, 1.0), (1100, 500.0))),
                Series({"hpc_job": "12"}, ((1010, 1.0), (1050, 300.0))),
                Series({"hpc_job": "13"}, ((1060, 1.0), (1200, 50.0))),
            ],
        }
        return tuple(data.get(selector, []))

    def instant(self, query: str, at_unix: float | None = None) -> tuple[Sample, ...]:
        if query == obs.STEPS_DONE and at_unix == 1200:
            return (Sample({"hpc_job": "13", "job_type": "bert"}, 1200, 50.0),)
        if query.startswith("up{"):
            return (Sample({"instance": "127.0.0.1:1"}, at_unix or 0, 1.0),)
        return ()


SUBMITTED = """slurm_job_id,trace_job_id,job_type,gpus,total_steps,arrival_s,submit_unix,managed
11,t-a,resnet,1,500,0,1000.5,true
12,t-b,resnet,1,300,100,1010,true
13,t-c,bert,1,400,150,1015,false
14,t-d,bert,1,400,200,1020,true
,t-e,bert,1,400,200,1020,true
"""


def _folder(tmp_path: Path) -> ClusterLayout:
    layout = ClusterLayout(tmp_path)
    write_json_atomic(layout.manifest, {"t0_unix": 1000.0, "time_scale": 10.0})
    layout.submit_dir.mkdir(exist_ok=True)
    (layout.submit_dir / "submitted.csv").write_text(SUBMITTED)
    write_json_atomic(layout.emu_dir / "done" / "11.json", {"end_unix": 1100.0, "steps": 500})
    write_json_atomic(layout.emu_dir / "done" / "12.json", {"end_unix": 1050.0, "steps": 300})
    return layout


def test_report_on_a_hand_made_folder(tmp_path: Path) -> None:
    r = cluster_report(_folder(tmp_path), "http://unused", client=FakePrometheus(), end_unix=1200)
    json.dumps(r, allow_nan=False)
    # GPU energy: 3600 + 100 J (GPU 0), 7200 + 1000 J (GPU 1), 360 J (GPU 2); node 36000 J; 1 kWh = 3.6e6 J
    assert r["gpu_energy_kwh"] == pytest.approx(12260 / 3.6e6)
    assert r["node_energy_kwh"] == pytest.approx(36000 / 3.6e6)
    assert r["energy_kwh"] == pytest.approx(48260 / 3.6e6)
    assert r["gpu_idle_energy_kwh"] == pytest.approx(460 / 3.6e6)
    # scale 10: job 11 ends at (1100 - 1000) * 10 = 1000 s, arrived at 0; job 12 ends at 500 s, arrived at 100
    assert (r["jobs_total"], r["jobs_completed"]) == (4, 2)
    assert r["avg_jct_s"] == pytest.approx(700) and r["p95_jct_s"] == pytest.approx(400 + 0.95 * 600)
    jobs = {j["id"]: j for j in r["jobs"]}
    assert jobs["11"] | {"energy_kwh": None} == {
        "id": "11",
        "trace_job_id": "t-a",
        "job_type": "resnet",
        "gpus": 1,
        "managed": True,
        "arrival_s": 0.0,
        "submit_s": pytest.approx(5.0),
        "start_s": pytest.approx(50.0),
        "end_s": pytest.approx(1000.0),
        "jct_s": pytest.approx(1000.0),
        "energy_kwh": None,
        "steps": 500.0,
        "total_steps": 500,
        "state": "completed",
    }
    assert jobs["11"]["energy_kwh"] == pytest.approx(3600 / 3.6e6)
    assert jobs["12"]["energy_kwh"] == pytest.approx(3600 / 3.6e6)  # half of the shared 7200 J
    assert jobs["13"]["energy_kwh"] == pytest.approx(4600 / 3.6e6)  # the other half, then 1000 J alone
    assert (jobs["13"]["state"], jobs["13"]["end_s"], jobs["13"]["jct_s"], jobs["13"]["start_s"]) == (
        "running",
        None,
        None,
        pytest.approx(600.0),
    )
    assert (jobs["14"]["state"], jobs["14"]["start_s"], jobs["14"]["energy_kwh"]) == ("not-started", None, 0.0)
    assert any("no slurm_job_id" in w for w in r["warnings"])
    weighted = cluster_report(
        _folder(tmp_path), "", client=FakePrometheus(), end_unix=1200, weights={"12": 3.0, "13": 1.0}
    )
    assert {j["id"]: round(j["energy_kwh"] * 3.6e6, 6) for j in weighted["jobs"]} == {
        "11": 3600,
        "12": 5400,
        "13": 2800,
        "14": 0,
    }


def test_report_without_prometheus_keeps_what_the_files_say(tmp_path: Path) -> None:
    slept: list[float] = []
    r = cluster_report(_folder(tmp_path), "", client=FakePrometheus(fail=True), end_unix=1200, sleep=slept.append)
    assert r["energy_kwh"] is None and r["gpu_energy_kwh"] is None and r["node_energy_kwh"] is None
    assert r["avg_jct_s"] == pytest.approx(700) and r["jobs_completed"] == 2
    assert all(j["energy_kwh"] is None and j["start_s"] is None for j in r["jobs"])
    assert any("3 attempt(s) failed" in w and "energies and start times are unknown" in w for w in r["warnings"])
    assert len(slept) == 2


def test_report_needs_a_manifest_and_warns_on_bad_files(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="cluster.json is missing"):
        cluster_report(ClusterLayout(tmp_path), "", client=FakePrometheus())
    layout = _folder(tmp_path)
    (layout.emu_dir / "done" / "12.json").write_text("{not json")
    r = cluster_report(layout, "", client=FakePrometheus(), end_unix=1200)
    jobs = {j["id"]: j for j in r["jobs"]}
    assert jobs["12"]["state"] == "completed" and jobs["12"]["jct_s"] is None
    assert any("12.json cannot be read" in w for w in r["warnings"])
    assert any("job 12 completed but its JCT is unknown" in w for w in r["warnings"])
