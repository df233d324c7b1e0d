"""``wattplan instance sweep``: reproducible benchmark rounds, their manifest, and the sampled family."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cli import app
from wattplan.planner.bench.instance_sets import MANIFEST_FIELDS, RoundSources, SweepSpec, sweep, sweep_spec
from wattplan.planner.bench.round_families import (
    LONG_FRACTION,
    TRACE_GPU_TYPES,
    JobPopulation,
    best_round_steps,
    candidate_times,
    cluster_for,
    cluster_nodes,
    long_choices,
    long_draws,
    long_round,
    make_round,
    read_philly_population_trace,
    sampled_round,
)
from wattplan.planner.contracts.instance_checks import instance_problems
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.core.economics import full_power_w
from wattplan.planner.files.resources import PHILLY_TRACE, profile_library, shipped
from wattplan.planner.profile_library.library import load_profile_library
from wattplan.planner.rounds.builder import RoundOptions, build_round, queued_jobs
from wattplan.planner.rounds.cluster_spec import parse_cluster_spec
from wattplan.planner.rounds.traces import read_trace

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture(scope="module")
def sources() -> RoundSources:
    """The shipped profile library and traces, read once for the module."""
    return RoundSources(load_profile_library(profile_library()))


def _manifest(folder: Path) -> list[dict[str, str]]:
    with open(folder / "manifest.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _spec(out: Path, **options: object) -> SweepSpec:
    args: dict[str, object] = {"sizes": "20,150", "budgets": "0.3,1.0", "seeds": "0,1", "family": "sampled"}
    args.update(options)
    return sweep_spec(out, **args)  # type: ignore[arg-type]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


# --------------------------------------------------------------------------------------------
# Reproducibility and the manifest


@pytest.mark.slow
@pytest.mark.parametrize("family", ["sampled", "trace", "long"])
def test_two_sweeps_write_identical_files(tmp_path: Path, sources: RoundSources, family: str) -> None:
    rows_a = sweep(_spec(tmp_path / "a", family=family), sources=sources)
    rows_b = sweep(_spec(tmp_path / "b", family=family), sources=RoundSources(sources.lib))  # traces read again
    assert rows_a == rows_b
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert a == b and len(a) == 2 * 2 * 2 + 1
    assert [r["sha256"] for r in _manifest(tmp_path / "a")] == [r["sha256"] for r in _manifest(tmp_path / "b")]


@pytest.mark.slow
def test_rerun_into_the_same_folder_overwrites_identically(tmp_path: Path, sources: RoundSources) -> None:
    spec = _spec(tmp_path, sizes="30", seeds="3")
    sweep(spec, sources=sources)
    first = _files(tmp_path)
    sweep(spec, sources=sources)
    assert _files(tmp_path) == first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary files left


@pytest.mark.slow
@pytest.mark.parametrize("family", ["sampled", "trace", "long"])
def test_manifest_matches_the_files(tmp_path: Path, sources: RoundSources, family: str) -> None:
    spec = _spec(tmp_path, family=family)
    sweep(spec, sources=sources)
    rows = _manifest(tmp_path)
    assert list(rows[0]) == list(MANIFEST_FIELDS)
    assert [(int(r["size"]), float(r["budget_fraction"]), int(r["seed"])) for r in rows] == spec.items()
    listed = {r["file"] for r in rows}
    assert listed == {p.name for p in tmp_path.glob("*.json")}
    for r in rows:
        path = tmp_path / r["file"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == r["sha256"]
        n, b, s = int(r["size"]), float(r["budget_fraction"]), int(r["seed"])
        assert r["file"] == f"{family}-n{n}-b{b:.2f}-s{s}.json" and r["family"] == family
        doc = json.loads(path.read_text())
        assert instance_problems(doc) == []
        inst = load_instance(path)  # schema, finite numbers and meaning, as `wattplan instance check`
        assert len(inst.jobs) == n == int(r["jobs"])
        assert len({j.id for j in inst.jobs}) == n
        assert inst.round.budget_j == math.floor(b * full_power_w(inst) * inst.round.duration_s)
        assert float(r["budget_j"]) == inst.round.budget_j
        assert r["gpus"] == str(sum(g.total_gpus for g in inst.gpu_types))
        assert r["gpu_types"] == ",".join(f"{g.name}:{g.total_gpus}" for g in inst.gpu_types)
        assert r["nodes"] == str(sum(g.nodes for g in inst.gpu_types))
        src = doc["source"]
        assert src["sweep"] == family and src["size"] == n
        assert src["budget_fraction_of_full_power"] == b
        if family in ("sampled", "long"):
            assert src["seed"] == s
            assert all(j.id.startswith(family[0]) and len(j.id) == 7 for j in inst.jobs)


@pytest.mark.slow  # over 3 s: make test, not test-fast
def test_sampled_seed_and_size_change_the_jobs(tmp_path: Path, sources: RoundSources) -> None:
    sweep(_spec(tmp_path, sizes="40,80", budgets="0.6", seeds="0,1"), sources=sources)
    jobs = {p.name: load_instance(p).jobs for p in tmp_path.glob("*.json")}
    assert jobs["sampled-n40-b0.60-s0.json"] != jobs["sampled-n40-b0.60-s1.json"]
    ids = {j.id for j in jobs["sampled-n80-b0.60-s0.json"]}
    assert ids == {f"s{i:06d}" for i in range(80)}


def test_v100_only_mix(tmp_path: Path, sources: RoundSources) -> None:
    for family in ("sampled", "trace"):
        sweep(_spec(tmp_path / family, family=family, gpu_mix="v100:1", seeds="0"), sources=sources)
        for r in _manifest(tmp_path / family):
            inst = load_instance(tmp_path / family / r["file"])
            assert [g.name for g in inst.gpu_types] == ["v100"]
            assert {p.gpu_type for p in inst.profiles} == {"v100"} and {p.gpu_type for p in inst.pairs} <= {"v100"}
            assert r["gpu_types"] == f"v100:{r['gpus']}"
            assert inst.gpu_types[0].nodes == max(1, round(int(r["size"]) / 4))


def test_cluster_sizes() -> None:
    assert cluster_nodes(2000) == (("v100", 333), ("p100", 167))
    assert cluster_for(2000) == (333, 167)
    assert cluster_nodes(1) == (("v100", 1), ("p100", 1))  # at least one node of each type
    assert cluster_nodes(100, (("v100", 1.0),), 4) == (("v100", 25),)
    assert cluster_nodes(100, (("v100", 1.0), ("p100", 1.0)), 2) == (("v100", 25), ("p100", 25))
    assert cluster_nodes(10, (("p100", 1.0), ("v100", 100.0)), 1) == (("p100", 1), ("v100", 10))
    # the benchmark's rule: nodes = max(2, round(n / 4)), V100 = round(2/3 of them), P100 the rest
    for n in range(1, 3000, 37):
        nodes = max(2, round(n / 4))
        v100 = max(1, round(nodes * 2 / 3))
        assert cluster_for(n) == (v100, max(1, nodes - v100))


# --------------------------------------------------------------------------------------------
# The families


def test_trace_queues_are_the_round_builders(sources: RoundSources) -> None:
    pool = sources.pool()
    name = sorted(pool.traces)[0]
    jobs = pool.traces[name]
    times = candidate_times(jobs)
    for k in (0, len(times) // 2, len(times) - 1):
        at, ids = pool.queues()[name][k]
        assert at == times[k]
        assert ids == frozenset(j.id for j in queued_jobs(jobs, sources.lib, TRACE_GPU_TYPES, at)[0])


def test_trace_round_of_one_snapshot_is_the_trace_at_that_time(sources: RoundSources) -> None:
    pool = sources.pool()
    inst, snaps, nodes = make_round(pool, 120, 0.6)
    assert len(snaps) == 1 and len(inst.jobs) == 120 and inst.extra["source"]["benchmark"] == "solve_scaling"
    s = snaps[0]
    cluster = parse_cluster_spec(",".join(f"{g}:{c * 8}" for g, c in nodes))
    direct = build_round(pool.traces[s.trace], cluster, sources.lib, RoundOptions(at_s=s.at_s, max_jobs=120))
    assert direct.jobs == inst.jobs


def test_trace_family_refuses_a_size_beyond_the_queues(tmp_path: Path, sources: RoundSources) -> None:
    with pytest.raises(InputError) as err:
        sweep(_spec(tmp_path, family="trace", sizes="50,100000", seeds="0"), sources=sources)
    assert err.value.source == "--sizes"
    assert [p.path for p in err.value.problems] == ["--sizes"]
    assert "100000" in err.value.problems[0].message and "--family sampled" in err.value.problems[0].message
    assert not tmp_path.exists() or not list(tmp_path.iterdir())  # nothing written


def test_sampled_type_frequencies_follow_the_population(sources: RoundSources) -> None:
    population = sources.population()
    expected = population.type_frequencies()
    n = 2000
    jobs = population.sample(n, seed=7)
    got = Counter(j.type for j in jobs)
    assert set(got) <= set(expected)
    for job_type, p in expected.items():
        sd = math.sqrt(p * (1 - p) / n)
        assert abs(got[job_type] / n - p) <= 5 * sd + 1e-3, job_type
    # the requested GPU counts too, and the draws are i.i.d. records (type and request together)
    req = Counter(j.requested_gpus for j in jobs)
    share_1 = float(np.mean(population.requested_gpus == 1))
    assert abs(req[1] / n - share_1) <= 5 * math.sqrt(share_1 * (1 - share_1) / n)
    total_variation = 0.5 * sum(abs(got[t] / n - p) for t, p in expected.items())
    assert total_variation < 0.1


def test_sampled_jobs_keep_their_records(sources: RoundSources) -> None:
    population = sources.population()
    n, seed = 150, 3
    picks = np.random.default_rng(seed).integers(0, len(population), size=n)
    inst = sampled_round(population, n, seed, 0.6, cluster_nodes(n), sources.lib)
    by_id = {j.id: j for j in inst.jobs}
    for i, k in enumerate(picks):
        job = by_id[f"s{i:06d}"]
        assert job.type == population.types[population.type_index[k]]
        total = population.total_steps[k]
        assert job.remaining_steps == pytest.approx(population.remaining_fraction[k] * total, rel=1e-12)
        assert max(job.gpus) <= 2 * max(1, int(population.requested_gpus[k]))


def test_population_covers_every_shipped_trace(sources: RoundSources) -> None:
    population = sources.population()
    shares = population.shares()
    assert "philly.csv" in shares and len(shares) == len(list(shipped("sources/gavel/traces").glob("*.trace"))) + 1
    assert all(c > 0 for c in shares.values())
    assert float(population.remaining_fraction.min()) > 0 and float(population.remaining_fraction.max()) <= 1
    assert len(population) == sum(shares.values())


@pytest.mark.slow
def test_fast_philly_reader_is_read_trace(sources: RoundSources) -> None:
    assert read_philly_population_trace(sources.lib) == read_trace(shipped(PHILLY_TRACE), sources.lib, "philly", 0)


def test_population_of_a_small_trace_set(sources: RoundSources) -> None:
    jobs = sources.pool().traces[sorted(sources.pool().traces)[0]][:400]
    population = JobPopulation.build(sources.lib, [("x.trace", jobs)])
    queued = sum(len(queued_jobs(jobs, sources.lib, TRACE_GPU_TYPES, at)[0]) for at in candidate_times(jobs))
    assert len(population) == queued and population.snapshots == (len(candidate_times(jobs)),)


def _option_fractions(inst) -> list[list[float]]:
    """Per job, ``pi = X t / R`` of every exclusive option that fits the cluster (the progress coefficients)."""
    from wattplan.planner.core.economics import exclusive_outcomes

    return [[o.progress for _, _, _, o in exclusive_outcomes(inst, job)] for job in inst.jobs]


def test_long_rounds_move_each_job_by_its_drawn_fraction(sources: RoundSources) -> None:
    n, seed = 300, 5
    nodes = cluster_nodes(n)
    inst = long_round(sources.lib, n, seed, 0.6, nodes)
    draws = long_draws(sources.lib, [g for g, _ in nodes], n, seed)
    lo, hi = LONG_FRACTION
    by_id = {j.id: j for j in inst.jobs}
    assert len(inst.jobs) == n and set(by_id) == {f"l{i:06d}" for i in range(n)}
    for i, (job_type, gpus, f) in enumerate(draws):
        job = by_id[f"l{i:06d}"]
        assert job.type == job_type and gpus in job.gpus and lo <= f < hi
        assert best_round_steps(inst, job) / job.remaining_steps == pytest.approx(f, rel=1e-12)
    fractions = _option_fractions(inst)
    best = [max(fs) for fs in fractions]
    assert lo * (1 - 1e-9) <= min(best) and max(best) <= hi * (1 + 1e-9)
    assert max(best) / min(best) > 20  # spread over the range, log-uniformly: 2 decades
    logs = np.log10(best)
    assert abs(float(np.mean(logs)) - (-3.0)) < 0.15  # the mean of log10 f is -3 for log-uniform [1e-4, 1e-2)
    coefficients = [x for fs in fractions for x in fs]
    assert min(coefficients) > 1e-8 and max(coefficients) < hi * (1 + 1e-9)  # the badly scaled case
    assert len({j.type for j in inst.jobs}) >= 10 and {max(j.gpus) for j in inst.jobs} >= {1, 2, 4, 8}


def test_long_draws_are_deterministic_and_follow_the_library(sources: RoundSources) -> None:
    gpu_types = ["v100", "p100"]
    a = long_draws(sources.lib, gpu_types, 50, 3)
    assert a == long_draws(sources.lib, gpu_types, 50, 3) and a != long_draws(sources.lib, gpu_types, 50, 4)
    choices = long_choices(sources.lib, gpu_types)
    assert choices["A3C"] == (1,) and choices["ResNet-18 (batch size 128)"] == (1, 2, 4, 8)
    assert all((t in choices and g in choices[t]) for t, g, _ in a)
    assert long_draws(sources.lib, gpu_types, 20, 3) == a[:20]  # a smaller round is a prefix of the draws


def test_long_rounds_pass_instance_check(tmp_path: Path) -> None:
    out = tmp_path / "long"
    result = _cli("instance", "sweep", "--family", "long", "--out", out, "--sizes", "12", "--budgets", "0.3")
    assert result.exit_code == 0, result.output
    rows = _manifest(out)
    assert [r["file"] for r in rows] == ["long-n12-b0.30-s0.json"] and rows[0]["family"] == "long"
    checked = _cli("instance", "check", out / rows[0]["file"])
    assert checked.exit_code == 0 and "ok: 12 jobs" in checked.output, checked.output


# --------------------------------------------------------------------------------------------
# MPS


def test_mps_is_readable_by_highs(tmp_path: Path, sources: RoundSources) -> None:
    highspy = pytest.importorskip("highspy")
    from wattplan.formulations.round_model import build_round_model

    spec = _spec(tmp_path, sizes="8", budgets="0.6", seeds="0", mps=True)
    sweep(spec, sources=sources)
    rows = _manifest(tmp_path)
    assert list(rows[0])[-2:] == ["mps_file", "mps_sha256"]
    row = rows[0]
    mps = tmp_path / row["mps_file"]
    assert mps.name == "sampled-n8-b0.60-s0.mps"
    assert hashlib.sha256(mps.read_bytes()).hexdigest() == row["mps_sha256"]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(mps)) == highspy.HighsStatus.kOk
    lm = build_round_model(load_instance(tmp_path / row["file"])).lm
    assert h.getNumCol() == lm.num_cols


# --------------------------------------------------------------------------------------------
# Command line


def _cli(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def test_cli_writes_a_sweep(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    result = _cli("instance", "sweep", "--out", out, "--sizes", "10,25", "--budgets", "0.5", "--seeds", "0")
    assert result.exit_code == 0, result.output
    assert "wrote 2 instances" in result.output
    rows = _manifest(out)
    assert [r["file"] for r in rows] == ["trace-n10-b0.50-s0.json", "trace-n25-b0.50-s0.json"]
    assert "mps_file" not in rows[0]
    assert not list(out.glob("*.mps"))


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--sizes", "0", "below 1"),
        ("--sizes", "ten", "not a whole number"),
        ("--budgets", "1.5", "(0, 1]"),
        ("--budgets", "0", "(0, 1]"),
        ("--seeds", "-1", "below 0"),
        ("--gpu-mix", "a100:1", "unknown GPU type"),
        ("--gpu-mix", "v100:0", "> 0"),
        ("--jobs-per-node", "0", "> 0"),
        ("--jobs-per-node", "1e-6", "[0.25, 64]"),  # wrote 5e7-node instances the schema refuses
        ("--jobs-per-node", "65", "[0.25, 64]"),
        ("--jobs-per-node", "nan", "[0.25, 64]"),
        ("--sizes", "10,,20", "empty item"),  # empty items were dropped silently
        ("--budgets", "0.5,", "empty item"),
        ("--gpu-mix", "v100:1,,p100:1", "empty item"),
    ],
)
def test_cli_bad_option_exits_2_naming_it(tmp_path: Path, option: str, value: str, words: str) -> None:
    result = _cli("instance", "sweep", "--out", tmp_path / "o", option, value)
    assert result.exit_code == 2, result.output
    assert option in result.output and words in result.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("family", ["sampled", "long"])
def test_sizes_above_the_ceiling_are_refused_up_front(tmp_path: Path, family: str) -> None:
    # 2,000,000 sampled jobs ended in MemoryError after 51 s
    with pytest.raises(InputError) as info:
        _spec(tmp_path / "o", sizes="100000,100001,2000000", family=family)
    assert [(p.code, p.path) for p in info.value.problems] == [("too-large", "--sizes")] * 2
    assert "100,000" in info.value.problems[0].message and "100001 jobs" in info.value.problems[0].message
    assert _spec(tmp_path / "o", sizes="100000", family=family).sizes == (100000,)


def test_a_cluster_beyond_the_schema_is_refused_naming_jobs_per_node(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        _spec(tmp_path / "o", sizes="20,100000", jobs_per_node=0.25, gpu_mix="v100:1")
    assert [(p.code, p.path) for p in info.value.problems] == [("too-many-nodes", "--jobs-per-node")]
    assert "400,000 nodes" in info.value.problems[0].message


def test_an_instance_the_schema_refuses_is_not_written(
    tmp_path: Path, sources: RoundSources, monkeypatch: pytest.MonkeyPatch
) -> None:
    import wattplan.planner.bench.instance_sets as instance_sweep

    spec = _spec(tmp_path / "o", sizes="12", budgets="0.3", seeds="0", family="long")
    monkeypatch.setattr(instance_sweep, "cluster_nodes", lambda n, mix, jpn: (("v100", 200_000),))
    with pytest.raises(InputError) as info:
        sweep(spec, sources=sources)
    assert info.value.source == "--jobs-per-node"
    assert [p.path for p in info.value.problems] == ["long-n12-b0.30-s0.json: gpu_types[0].nodes"]
    assert not list((tmp_path / "o").glob("*.json")) and not (tmp_path / "o" / "manifest.csv").exists()


def test_cli_trace_family_too_large(tmp_path: Path) -> None:
    result = _cli("instance", "sweep", "--out", tmp_path / "o", "--sizes", "100000", "--budgets", "0.3")
    assert result.exit_code == 2
    assert "--sizes" in result.output and "sampled" in result.output and "100000" in result.output


def test_benchmark_script_imports_the_rounds() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "solve_scaling.py"), "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "--sizes" in done.stdout
