"""Job lists, cluster files and the rounds that follow trust nothing they read (issue 41).

A safe YAML reader (no alias bomb, no duplicate key, no YAML 1.1 typing, bounded depth, lines in every problem),
CSV headers without repeated columns, control characters refused in ids, every check of ``instance check`` run on
the instance made from a job list before anything is written (each problem at the job list's line and field), a
linear duplicate-host check, ``instance next`` refusing a plan that is not valid for its instance, and a failed
``plan JOBS --cluster`` leaving the previous instance file in place.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from wattplan.planner.contracts.instance_io import load_instance
from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.rounds.cluster_file import read_cluster_file
from wattplan.planner.rounds.job_list import read_job_list

RESNET = "ResNet-50 (batch size 64)"
CLUSTER_YAML = "round_s: 300\ngpu_types:\n  - name: v100\n    nodes: [v-a, v-b]\n"

BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]" for prev, name in zip("abcdefgh", "bcdefghi", strict=True)),
        "jobs:",
        "  - id: *i",
        f"    type: {RESNET}",
        "    gpus: 1",
        "    remaining_steps: 5",
    ]
)
"""Nine anchors of nine aliases each: 9**9 "lol"s as a job's id, in 400 bytes (the audit's 411-byte bomb)."""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _codes(exc: pytest.ExceptionInfo[InputError]) -> dict[str, str]:
    return {p.path: p.code for p in exc.value.problems}


def _job_yaml(**fields: str) -> str:
    base = {"id": "a", "type": RESNET, "gpus": "1", "remaining_steps": "5"} | fields
    return "jobs:\n  - " + "\n    ".join(f"{k}: {v}" for k, v in base.items()) + "\n"


# -- the YAML reader ---------------------------------------------------------------------------------------------


def test_alias_bomb_is_refused_at_once_without_expanding(tmp_path: Path) -> None:
    assert len(BOMB.encode()) < 450
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as exc:
            read_job_list(_write(tmp_path, "jobs.yaml", BOMB))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    (problem,) = exc.value.problems
    assert problem.code == "yaml-alias" and "(line 5)" in problem.path  # the first alias past the bound
    assert peak < 20 * 2**20  # refused before anything is expanded (yaml.safe_load's result took 2.7 GB to read)


def test_few_aliases_still_read(tmp_path: Path) -> None:
    from wattplan.planner.files.safe_yaml import load_yaml

    text = f"""common: &env {{NCCL_DEBUG: INFO}}
jobs:
  - {{id: a, type: {RESNET}, gpus: 1, remaining_steps: 5, env: *env}}
  - {{id: b, type: {RESNET}, gpus: 1, remaining_steps: 5, env: *env}}
"""
    with pytest.raises(InputError) as exc:  # the top-level key is not a job-list key: said so, with its line
        read_job_list(_write(tmp_path, "jobs.yaml", text))
    assert _codes(exc) == {"common (line 1)": "unknown-field"}
    doc = load_yaml(text, "x.yaml")
    assert doc["jobs"][1]["env"] == {"NCCL_DEBUG": "INFO"}


def test_recursive_alias_and_alias_keys_are_refused() -> None:
    from wattplan.planner.files.safe_yaml import load_yaml

    for text, code in (
        ("a: &x [1, *x]\n", "yaml-alias"),
        ("a: &k b\n*k : 2\n", "yaml-key"),
        ("? [1]\n: 2\n", "yaml-key"),
    ):
        with pytest.raises(InputError) as exc:
            load_yaml(text, "x.yaml")
        assert [p.code for p in exc.value.problems] == [code], text


def test_duplicate_keys_name_the_key_and_both_lines(tmp_path: Path) -> None:
    text = "power_cap_kw: 6\ngpu_types:\n  - {name: v100, nodes: 1}\npower_cap_kw: 600\n"
    with pytest.raises(InputError) as exc:
        read_cluster_file(_write(tmp_path, "cluster.yaml", text))
    (problem,) = exc.value.problems
    assert problem.code == "duplicate-key" and problem.path == "power_cap_kw (line 4)"
    assert "lines 1 and 4" in problem.message
    with pytest.raises(InputError) as exc:
        read_job_list(_write(tmp_path, "jobs.yaml", _job_yaml() + "    gpus: 2\n"))
    assert _codes(exc) == {"jobs[0].gpus (line 6)": "duplicate-key"}


def test_yaml_1_1_typing_does_not_change_values(tmp_path: Path) -> None:
    text = _job_yaml(id="1:30", user="0755", command="yes", env="{ON: yes, MODE: 0o17, WHEN: 2001-12-14}")
    (job,) = read_job_list(_write(tmp_path, "jobs.yaml", text))
    assert job.id == "1:30"  # not 90 (sexagesimal)
    assert job.user == "0755"  # not "493" (octal)
    assert job.command == ("yes",)  # not True
    assert dict(job.env or ()) == {"ON": "yes", "MODE": "0o17", "WHEN": "2001-12-14"}  # not True, 15, a date
    hosts = "gpu_types:\n  - {name: v100, nodes: [0755, on, 1_000, 0x1f]}\n"
    cluster = read_cluster_file(_write(tmp_path, "c.yaml", hosts))
    assert cluster.groups[0].hosts == ("0755", "on", "1_000", "0x1f")  # not 493, True, 1000, 31


@pytest.mark.parametrize("value", ["0x10", "1_000", ".inf", "!!float 5", "[1]", "{a: 1}"])
def test_numbers_are_plain_decimals_read_by_the_field(tmp_path: Path, value: str) -> None:
    with pytest.raises(InputError) as exc:
        read_job_list(_write(tmp_path, "jobs.yaml", _job_yaml(remaining_steps=value)))
    (problem,) = exc.value.problems
    assert problem.path.startswith("jobs[0].remaining_steps") or problem.code == "yaml-tag", problem
    assert "(line 5)" in problem.path


def test_deep_nesting_is_a_problem_not_a_recursion_error(tmp_path: Path) -> None:
    flow = "jobs: " + "[" * 3000 + "]" * 3000 + "\n"  # libyaml's scanner may refuse it first, at its own bound
    block = "jobs:\n" + "".join(f"{'  ' * k}- k{k}:\n" for k in range(1, 200))
    for text, codes in ((flow, {"too-deep", "not-yaml"}), (block, {"too-deep"})):
        with pytest.raises(InputError) as exc:
            read_job_list(_write(tmp_path, "jobs.yaml", text))
        (problem,) = exc.value.problems
        assert problem.code in codes and "line" in problem.path, problem
    from wattplan.planner.files.safe_yaml import MAX_DEPTH

    assert str(MAX_DEPTH) in problem.message


def test_syntax_errors_and_second_documents_name_the_line(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        read_cluster_file(_write(tmp_path, "c.yaml", "gpu_types:\n  - {name: v100, nodes: [a\n"))
    assert exc.value.problems[0].code == "not-yaml" and exc.value.problems[0].path.startswith("line 3")
    with pytest.raises(InputError) as exc:
        read_cluster_file(_write(tmp_path, "c.yaml", CLUSTER_YAML + "---\npower_cap_kw: 600\n"))
    assert _codes(exc) == {"line 5": "several-documents"}


def test_line_of_walks_the_document() -> None:
    from wattplan.planner.files.safe_yaml import YamlList, YamlMap, line_of, load_yaml

    doc = load_yaml("a:\n  b: [x,\n    y]\nc: 1\n", "x.yaml")
    assert isinstance(doc, YamlMap) and isinstance(doc["a"]["b"], YamlList)
    assert (line_of(doc, "a.b[1]"), line_of(doc, "c"), line_of(doc, "zz")) == (3, 4, None)


def test_yaml_problems_carry_their_lines(tmp_path: Path) -> None:
    text = _job_yaml(gpus="0") + f"  - id: b\n    type: {RESNET}\n    gpus: 1\n    remaining_step: 5\n"
    with pytest.raises(InputError) as exc:
        read_job_list(_write(tmp_path, "jobs.yaml", text))
    assert _codes(exc) == {
        "jobs[0].gpus (line 4)": "bad-field",
        "jobs[1].remaining_step (line 9)": "unknown-field",
        "jobs[1].remaining_steps (line 6)": "remaining",
    }
    with pytest.raises(InputError) as exc:
        read_cluster_file(_write(tmp_path, "c.yaml", CLUSTER_YAML + "    down: [v-c]\n"))
    assert _codes(exc) == {"gpu_types[0].down[0] (line 5)": "unknown-host"}


# -- CSV headers and text fields -----------------------------------------------------------------------------------


def test_csv_repeated_column_is_refused_with_both_positions(tmp_path: Path) -> None:
    text = f"id,type,gpus,remaining_steps,gpus\na,{RESNET},1,5,8\n"
    with pytest.raises(InputError) as exc:
        read_job_list(_write(tmp_path, "jobs.csv", text))
    (problem,) = exc.value.problems
    assert (problem.code, problem.path) == ("duplicate-column", "line 1.gpus")
    assert "column 3 and again column 5" in problem.message


def test_csv_cell_under_an_unnamed_column_is_refused(tmp_path: Path) -> None:
    text = f"id,type,gpus,remaining_steps,\na,{RESNET},1,5,\nb,{RESNET},1,5,oops\n"
    with pytest.raises(InputError) as exc:
        read_job_list(_write(tmp_path, "jobs.csv", text))
    assert _codes(exc) == {"line 3": "unnamed-column"}


@pytest.mark.parametrize(("char", "field"), [("\x00", "id"), ("\x1b[2J", "id"), ("\n", "type"), ("\x07", "user")])
def test_control_characters_in_text_fields_are_refused_at_read_time(tmp_path: Path, char: str, field: str) -> None:
    record = {"id": "a", "type": RESNET, "gpus": "1", "remaining_steps": "5", "user": "ana"}
    record[field] = f"x{char}y"
    text = "jobs:\n  - " + "\n    ".join(f"{k}: {json.dumps(v)}" for k, v in record.items()) + "\n"
    with pytest.raises(InputError) as exc:
        read_job_list(_write(tmp_path, "jobs.yaml", text))
    (problem,) = exc.value.problems
    assert problem.code == "bad-field" and problem.path.startswith(f"jobs[0].{field} (line ")
    assert "control character" in problem.message


def test_nul_in_a_csv_job_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        read_job_list(_write(tmp_path, "jobs.csv", f"id,type,gpus,remaining_steps\na\x00b,{RESNET},1,5\n"))
    assert _codes(exc) == {"line 2.id": "bad-field"}


# -- every check of `instance check` before anything is written ----------------------------------------------------

REFUSED_BY_INSTANCE_CHECK = [
    ("jobs.csv", f"id,type,gpus,remaining_steps,weight\na,{RESNET},1,5,1e9\n", "line 2.weight", "schema"),
    ("jobs.csv", f"id,type,gpus,remaining_s\na,{RESNET},1,1e15\n", "line 2.remaining_s", "schema"),
    ("jobs.csv", f"id,type,gpus,remaining_steps,workdir\na,{RESNET},1,5,rel/dir\n", "line 2.workdir", "bad-workdir"),
    ("jobs.csv", f"id,type,gpus,remaining_steps,user\na,{RESNET},1,5,-x\n", "line 2.user", "bad-user"),
    ("jobs.csv", f"id,type,gpus,remaining_steps,command\na,{RESNET},1,5,'' x\n", "line 2.command[0]", "bad-command"),
    ("jobs.yaml", _job_yaml(env="{'1X': v}"), "jobs[0].env.1X (line 6)", "bad-env-name"),
    ("jobs.yaml", _job_yaml(env='{X: "a\\0b"}'), "jobs[0].env.X (line 6)", "bad-command"),
    ("jobs.yaml", _job_yaml(command='["a\\0", b]'), "jobs[0].command[0] (line 6)", "bad-command"),
    ("jobs.yaml", _job_yaml(workdir="rel/dir"), "jobs[0].workdir (line 6)", "bad-workdir"),
]


@pytest.mark.parametrize(("name", "text", "path", "code"), REFUSED_BY_INSTANCE_CHECK)
def test_from_jobs_refuses_what_instance_check_refuses_at_its_line(
    tmp_path: Path, name: str, text: str, path: str, code: str
) -> None:
    jobs = _write(tmp_path, name, text)
    cluster = _write(tmp_path, "cluster.yaml", CLUSTER_YAML)
    out = tmp_path / "inst.json"
    r = CliRunner().invoke(app, ["instance", "from-jobs", str(jobs), "--cluster", str(cluster), "-o", str(out)])
    assert r.exit_code == 2, r.output
    assert name in r.output and code in r.output and path.partition(" ")[0] in r.output, r.output
    assert not out.exists()  # nothing written
    from wattplan.planner.rounds.from_jobs import read_operator_instance

    with pytest.raises(InputError) as exc:
        read_operator_instance(jobs, cluster, None)
    assert exc.value.source == str(jobs) and _codes(exc).get(path) == code, exc.value.problems


def test_cluster_file_faults_are_reported_against_the_cluster_file(tmp_path: Path) -> None:
    jobs = _write(tmp_path, "jobs.csv", f"id,type,gpus,remaining_steps\na,{RESNET},1,5\n")
    big_cap = "round_s: 86400\npower_cap_kw: 1e9\ngpu_types:\n  - {name: v100, nodes: 1}\n"
    cluster = _write(tmp_path, "cluster.yaml", big_cap)
    from wattplan.planner.rounds.from_jobs import read_operator_instance

    with pytest.raises(InputError) as exc:  # B = cap x T = 8.64e16 J: above the instance schema's 1e15
        read_operator_instance(jobs, cluster, None)
    assert exc.value.source == str(cluster) and _codes(exc) == {"power_cap_kw (line 2)": "schema"}


def test_a_cluster_with_no_usable_gpu_says_so_at_the_job(tmp_path: Path) -> None:
    jobs = _write(tmp_path, "jobs.csv", f"id,type,gpus,remaining_steps\na,{RESNET},1,5\n")
    cluster = _write(tmp_path, "cluster.yaml", "gpu_types:\n  - {name: v100, nodes: [h], down: [h]}\n")
    from wattplan.planner.rounds.from_jobs import read_operator_instance

    with pytest.raises(InputError) as exc:  # it made an instance `instance check` refuses (unknown-job-type)
        read_operator_instance(jobs, cluster, None)
    assert _codes(exc) == {"line 2.gpus": "no-capacity"} and "v100: 0" in exc.value.problems[0].message


def test_what_from_jobs_writes_passes_instance_check(tmp_path: Path) -> None:
    text = _job_yaml(id='"1:30"', user="0755", workdir="/home/u", command='"python train.py"', env="{A: '1'}")
    jobs = _write(tmp_path, "jobs.yaml", text)
    cluster = _write(tmp_path, "cluster.yaml", CLUSTER_YAML)
    out = tmp_path / "inst.json"
    r = CliRunner().invoke(app, ["instance", "from-jobs", str(jobs), "--cluster", str(cluster), "-o", str(out)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["instance", "check", str(out)])
    assert r.exit_code == 0, r.output
    (job,) = load_instance(out).jobs
    assert (job.id, job.user) == ("1:30", "0755")


# -- the duplicate-host check is linear ----------------------------------------------------------------------------


def test_a_100000_node_cluster_file_is_checked(tmp_path: Path) -> None:
    hosts = [f"gpu-{i}" for i in range(100_000)]
    text = "gpu_types:\n  - name: v100\n    nodes: [" + ", ".join([*hosts, "gpu-7"]) + "]\n"
    text += "    down: [" + ", ".join(hosts[::2]) + "]\n"
    path = _write(tmp_path, "cluster.yaml", text)
    started = time.perf_counter()
    with pytest.raises(InputError) as exc:
        read_cluster_file(path)
    elapsed = time.perf_counter() - started
    assert exc.value.problems == [
        Problem(
            "duplicate-host",
            "gpu_types[0].nodes[100000] (line 3)",
            "host 'gpu-7' is listed twice (first as gpu_types[0].nodes[7])",
        )
    ]
    path.write_text(text.replace(", gpu-7]", "]", 1))
    cluster = read_cluster_file(path)
    assert len(cluster.groups[0].usable_hosts) == 50_000
    print(f"100,000 hosts, 50,000 down: read and checked twice in {elapsed + time.perf_counter() - started:.2f} s")


# -- instance next checks the plan it carries forward --------------------------------------------------------------


@pytest.fixture(scope="module")
def first_round(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A plan of a small job list (greedy: fast) and the instance written beside it."""
    tmp = tmp_path_factory.mktemp("round")
    jobs = _write(tmp, "jobs.csv", f"id,type,gpus,remaining_steps\na,{RESNET},1,50000\nb,{RESNET},2,50000\n")
    cluster = _write(tmp, "cluster.yaml", CLUSTER_YAML)
    plan = tmp / "plan.json"
    args = ["plan", str(jobs), "--cluster", str(cluster), "--solver", "greedy", "-q", "-o", str(plan)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    return plan, tmp / "plan.instance.json"


def _edited_plan(plan: Path, tmp_path: Path, edit: str) -> Path:
    doc = json.loads(plan.read_text())
    running = next(j for j in doc["jobs"] if j["state"] == "run")
    if edit == "node":
        running["placement"][0]["node"] = "v100-9"
    else:
        running["gpus"] = 4
    out = tmp_path / f"plan-{edit}.json"
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.parametrize(("edit", "code"), [("node", "placement-bad-node"), ("gpus", "count-not-allowed")])
def test_instance_next_refuses_a_plan_not_valid_for_its_instance(
    first_round: tuple[Path, Path], tmp_path: Path, edit: str, code: str
) -> None:
    plan, inst = first_round
    bad = _edited_plan(plan, tmp_path, edit)
    out = tmp_path / "next.json"
    r = CliRunner().invoke(app, ["instance", "next", str(bad), "--instance", str(inst), "-o", str(out)])
    assert r.exit_code == 2, r.output
    assert code in r.output and bad.name in r.output, r.output
    assert not out.exists()
    r = CliRunner().invoke(app, ["instance", "next", str(plan), "--instance", str(inst), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert CliRunner().invoke(app, ["instance", "check", str(out)]).exit_code == 0


# -- a failed `plan JOBS --cluster` keeps the previous instance ----------------------------------------------------


def test_failed_plan_from_a_job_list_keeps_the_previous_instance(tmp_path: Path) -> None:
    jobs = _write(tmp_path, "jobs.csv", f"id,type,gpus,remaining_steps\na,{RESNET},1,50000\n")
    cluster = _write(tmp_path, "cluster.yaml", CLUSTER_YAML)
    plan = tmp_path / "x.json"
    base = ["plan", str(jobs), "--cluster", str(cluster), "--solver", "greedy", "-q", "-o", str(plan)]
    r = CliRunner().invoke(app, base)
    assert r.exit_code == 0, r.output
    written = (tmp_path / "x.instance.json").read_bytes()
    before = plan.read_bytes()
    jobs.write_text(f"id,type,gpus,remaining_steps\na,{RESNET},1,50000\nb,{RESNET},1,7\n")  # the next round's list
    bogus = _write(tmp_path, "answer.sol", "this is no solution\n")
    r = CliRunner().invoke(app, [*base, "--from-solution", str(bogus)])
    assert r.exit_code == 1, r.output
    assert (tmp_path / "x.instance.json").read_bytes() == written  # still the instance of the plan beside it
    assert plan.read_bytes() == before
    jobs.write_text(f"id,type,gpus,remaining_steps,user\na,{RESNET},1,50000,-bad\n")  # refused by the checks
    r = CliRunner().invoke(app, base)
    assert r.exit_code == 2 and "line 2.user" in r.output, r.output
    assert (tmp_path / "x.instance.json").read_bytes() == written


@pytest.mark.parametrize(
    "text",
    [
        "a: 0755\nb: [1:30, yes, ~, '']\nc: {d: &x e, f: *x}\n",
        "a: 1\na: 2\n",
        "a: !!binary aGk=\n",
        "a: &x [1, *x]\n",
        "a: [1\n",
        "---\na: 1\n---\nb: 2\n",
        "- " * 100 + "x\n",
        'a: "\\x01"\nb: \x01\n',
    ],
)
def test_pure_python_parser_reads_as_libyaml_does(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """Without libyaml (a PyYAML built without it) the same rules hold, from the pure-Python parser's events."""
    import yaml

    from wattplan.planner.files import safe_yaml

    def outcome() -> object:
        try:
            return safe_yaml.load_yaml(text, "x.yaml")
        except InputError as exc:
            return [(p.code, p.path.partition(",")[0]) for p in exc.problems]

    fast = outcome()
    monkeypatch.setattr(safe_yaml, "_Parser", yaml.SafeLoader)
    assert outcome() == fast


@pytest.mark.parametrize(("value", "said"), [("", "empty value"), ("lib\x00.json", "NUL")])
def test_an_empty_or_nul_profiles_option_is_refused_naming_it(tmp_path: Path, value: str, said: str) -> None:
    """``--profiles ''`` became ``.`` ("bad input: .", naming nothing); a NUL raised "embedded null byte", exit 1."""
    jobs, cluster = tmp_path / "jobs.csv", tmp_path / "cluster.yaml"
    jobs.write_text("id,type,gpus,remaining_s\na,ResNet-50 (batch size 64),1,600\n")
    cluster.write_text("gpu_types:\n- {name: v100, nodes: [gpu1]}\n")
    out = tmp_path / "i.json"
    args = ["instance", "from-jobs", str(jobs), "--cluster", str(cluster), "--profiles", value, "-o", str(out)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2 and "--profiles" in r.output and said in r.output and not out.exists(), r.output


def test_an_unmanaged_node_given_as_a_list_is_a_located_problem(tmp_path: Path) -> None:
    """Found by the 300-case audit: ``unmanaged: [{node: [a], gpus: [0]}]`` raised TypeError (an unhashable list)."""
    path = tmp_path / "cluster.yaml"
    path.write_text("gpu_types:\n- {name: v100, nodes: [gpu1]}\nunmanaged:\n- {node: [gpu1], gpus: [0]}\n")
    with pytest.raises(InputError) as caught:
        read_cluster_file(path)
    assert any(p.path.startswith("unmanaged[0].node") for p in caught.value.problems), caught.value.problems
