"""Shared launch pieces: quoting, names, host maps, the unit model, the placeholder, atomic output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.launch_helpers import HOSTILE_IDS, hand_plan, launch_instance
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.launch.hosts import HostMap, load_host_map
from wattplan.planner.launch.output import MANIFEST, write_folder
from wattplan.planner.launch.quoting import (
    checked_token,
    comment_text,
    is_dns1123_label,
    safe_name,
    sh_quote,
    sh_words,
)
from wattplan.planner.launch.render import PLACEHOLDER_ARGV, PLACEHOLDER_EXIT, LaunchFile, build_model

# ----------------------------------------------------------------------------- quoting


def test_hostile_words_come_back_unchanged_from_bash(tmp_path: Path) -> None:
    words = [*HOSTILE_IDS, "", "-n", "--", "a\tb", "*", "~", "!!", "\\", "'", '"', "\x01\x7f"]
    script = tmp_path / "echo.sh"
    script.write_text("printf '%s\\0' " + sh_words(words) + "\n")
    out = subprocess.run(["bash", str(script)], capture_output=True, cwd=tmp_path, check=True).stdout
    assert out.decode().split("\0")[:-1] == words
    assert list(tmp_path.iterdir()) == [script], "quoting let a word run a command"


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=30))
def test_any_text_survives_sh_quote(text: str) -> None:
    out = subprocess.run(["bash", "-c", f"printf '%s' {sh_quote(text)}"], capture_output=True, check=True).stdout
    assert out.decode("utf-8", "surrogateescape") == text


def test_nul_cannot_be_quoted() -> None:
    with pytest.raises(ValueError, match="NUL"):
        sh_quote("a\0b")


@pytest.mark.parametrize("text", HOSTILE_IDS)
def test_comment_text_is_one_printable_line(text: str) -> None:
    out = comment_text(text)
    assert "\n" not in out and "\r" not in out
    assert all(32 <= ord(c) < 127 for c in out)
    assert json.loads(out) == text


@pytest.mark.parametrize("bad", ["a b", "a'b", 'a"b', "a;b", "$(x)", "`x`", "a\nb", ""])
def test_checked_token_refuses_anything_a_parser_could_split(bad: str) -> None:
    with pytest.raises(ValueError):
        checked_token(bad)


def test_safe_names_are_dns_labels_and_distinct() -> None:
    ids = [*HOSTILE_IDS, "A", "a", "a-", "a_", "x" * 300, "", "---"]
    names = [safe_name("wattplan-r1-", i, max_len=56) for i in ids]
    assert all(is_dns1123_label(n) and len(n) <= 56 for n in names)
    assert len(set(names)) == len(names)
    assert safe_name("p-", "job 1") == safe_name("p-", "job 1")  # stable across runs


# ----------------------------------------------------------------------------- hosts


def test_host_map_default_prefix_and_file(tmp_path: Path) -> None:
    assert HostMap().host("v100-3") == "v100-3"
    assert load_host_map(None, "gpu-").host("v100-3") == "gpu-v100-3"
    f = tmp_path / "map.json"
    f.write_text(json.dumps({"v100-0": "node17.example.org"}))
    hosts = load_host_map(f, None)
    assert hosts.host("v100-0") == "node17.example.org"
    with pytest.raises(InputError) as exc:
        hosts.host("v100-1")
    assert exc.value.problems[0].code == "unmapped-node"


def test_bad_node_maps_name_the_entry(tmp_path: Path) -> None:
    f = tmp_path / "map.json"
    f.write_text(json.dumps({"v100-0": "bad host; rm", "v100-1": 3}))
    with pytest.raises(InputError) as exc:
        load_host_map(f, None)
    assert {(p.code, p.path) for p in exc.value.problems} == {("bad-host-name", "v100-0"), ("bad-node-map", "v100-1")}
    with pytest.raises(InputError):
        load_host_map(f, "prefix-")
    with pytest.raises(InputError):
        load_host_map(None, "$(x)")


def test_two_nodes_on_one_host_are_refused(tmp_path: Path) -> None:
    inst = launch_instance(v100_only=True)
    with pytest.raises(InputError) as exc:
        build_model(hand_plan(inst, v100_only=True), inst, HostMap({"v100-0": "h", "v100-1": "h"}))
    assert exc.value.problems[0].code == "duplicate-host"


# ----------------------------------------------------------------------------- model


def test_model_groups_pairs_and_gives_each_gpu_one_setting() -> None:
    inst = launch_instance()
    model = build_model(hand_plan(inst), inst, HostMap())
    pair = next(u for u in model.units if u.job_ids == (HOSTILE_IDS[1], HOSTILE_IDS[2]))
    assert pair.shared and [m.partner for m in pair.members] == [HOSTILE_IDS[2], HOSTILE_IDS[1]]
    assert len({u.name for u in model.units}) == len(model.units) == 9  # 11 running jobs, 2 pairs
    assert "waiting" not in {j for u in model.units for j in u.job_ids}
    v100_1 = model.settings("v100-1")
    assert [s.index for s in v100_1] == [0, 1, 2, 3]  # one entry per GPU, the pair's GPU once
    assert [s.shared for s in v100_1] == [True, False, False, False]
    a100 = {s.index: (s.unit, s.value) for s in model.settings("a100-0")}
    assert a100 == {0: ("sm_clock_mhz", 1410), 1: ("sm_clock_mhz", 1410), 2: ("sm_clock_mhz", 1005)}
    assert model.hosts() == ["v100-0", "v100-1", "a100-0"]


def test_jobs_without_command_get_the_marked_placeholder(tmp_path: Path) -> None:
    inst = launch_instance(with_commands=False)
    model = build_model(hand_plan(inst), inst, HostMap())
    assert set(model.placeholders()) == {j for u in model.units for j in u.job_ids}
    assert all(m.command == PLACEHOLDER_ARGV for u in model.units for m in u.members)
    run = subprocess.run(
        list(PLACEHOLDER_ARGV),
        env={"WATTPLAN_JOB_ID": "$(touch pwned)", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode == PLACEHOLDER_EXIT
    assert "PLACEHOLDER command for job $(touch pwned)" in run.stderr
    assert not list(tmp_path.iterdir())


# ----------------------------------------------------------------------------- output


def test_output_replaces_only_our_own_folders(tmp_path: Path) -> None:
    out = tmp_path / "round"
    write_folder(out, [LaunchFile("a/run.sh", "#!/bin/sh\n", True), LaunchFile("b.yaml", "x: 1\n")], {"round": 1})
    assert (out / "a" / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (out / "b.yaml").stat().st_mode & 0o777 == 0o644
    assert json.loads((out / MANIFEST).read_text())["files"] == ["a/run.sh", "b.yaml"]
    (out / "logs").mkdir()  # not ours: the scripts' logs stay, the files of round 1 go
    write_folder(out, [LaunchFile("c.txt", "new\n")], {"round": 2})
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "c.txt", "logs"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "temporary folders left behind"

    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    with pytest.raises(InputError) as exc:
        write_folder(foreign, [LaunchFile("c.txt", "x")], {})
    assert exc.value.problems[0].code == "bad-out"
    assert (foreign / "thesis.tex").read_text() == "precious"


def test_output_refuses_paths_outside_the_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_folder(tmp_path / "o", [LaunchFile("../escape.sh", "x")], {})
    assert not (tmp_path / "escape.sh").exists() and not (tmp_path / "o").exists()
