"""Kubernetes target: objects pass ``kubernetes-validate --strict``, names are DNS-1123, ids survive."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.launch_helpers import (
    HOSTILE_IDS,
    hand_plan,
    launch_instance,
    multi_node_instance,
    multi_node_plan,
    shellcheck,
)
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.launch.hosts import HostMap
from wattplan.planner.launch.kubernetes import (
    CONFIG_LABEL,
    EXCLUSIVE_CONFIG,
    SHARED_CONFIG,
    KubernetesOptions,
    render_kubernetes,
)
from wattplan.planner.launch.launcher import launch_plan
from wattplan.planner.launch.quoting import is_dns1123_label, is_label_value
from wattplan.planner.launch.render import PLACEHOLDER_ARGV, build_model

K8S_VERSION = "1.30.0"


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    inst = launch_instance()
    out = tmp_path / "k8s"
    launch_plan(hand_plan(inst), inst, "kubernetes", out)
    return out


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _validate(paths: list[Path]) -> subprocess.CompletedProcess:
    tool = Path(sys.executable).parent / "kubernetes-validate"
    return subprocess.run(
        [str(tool), "--strict", "-k", K8S_VERSION, *map(str, paths)], capture_output=True, text=True, timeout=120
    )


def test_objects_pass_kubernetes_validate_strict(tmp_path: Path, rendered: Path) -> None:
    multi = multi_node_instance()
    launch_plan(multi_node_plan(multi), multi, "kubernetes", tmp_path / "multi")
    paths = sorted(rendered.glob("*.yaml")) + sorted((tmp_path / "multi").glob("*.yaml"))
    result = _validate(paths)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "couldn't find schema" not in output.lower()
    assert output.count("passed for resource") == sum(len(_docs(p)) for p in paths)


def test_jobs_follow_the_plan(rendered: Path) -> None:
    jobs = _docs(rendered / "jobs.yaml")
    assert {d["kind"] for d in jobs} == {"Job"} and len(jobs) == 11  # one per running job
    by_id = {d["metadata"]["annotations"]["wattplan.dev/job-id"]: d for d in jobs}
    assert set(HOSTILE_IDS) <= set(by_id)  # the original ids, exactly, in an annotation
    train = by_id["train-4"]
    pod = train["spec"]["template"]["spec"]
    assert pod["nodeName"] == "v100-0" and pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 4}
    assert container["command"] == ["sh", "-c", "sleep 1; env"] and container["workingDir"] == "/tmp"
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["WATTPLAN_GPUS"] == "0,1,2,3" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["EVIL"] == "$(touch /tmp/wattplan-pwned) `id` ; exit 9"
    assert train["metadata"]["labels"]["wattplan.dev/round"] == "7"
    pair = by_id[HOSTILE_IDS[1]]
    assert pair["metadata"]["annotations"]["wattplan.dev/shares-with"] == HOSTILE_IDS[2]
    assert pair["spec"]["template"]["spec"]["nodeName"] == by_id[HOSTILE_IDS[2]]["spec"]["template"]["spec"]["nodeName"]


def test_names_and_labels_are_valid(rendered: Path) -> None:
    docs = [d for p in rendered.glob("*.yaml") for d in _docs(p)]
    names = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert len(set(names)) == len(names)
    for d in docs:
        assert is_dns1123_label(d["metadata"]["name"]), d["metadata"]["name"]
        labels = [d["metadata"].get("labels", {})]
        labels.append(d.get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {}))
        for group in labels:
            for key, value in group.items():
                assert is_label_value(value), (key, value)


def test_multi_node_job_is_one_job_per_node(tmp_path: Path) -> None:
    inst = multi_node_instance()
    files = render_kubernetes(build_model(multi_node_plan(inst), inst, HostMap()))
    jobs = list(yaml.safe_load_all(next(f for f in files if f.path == "jobs.yaml").text))
    assert [j["metadata"]["name"][-3:] for j in jobs] == ["-p0", "-p1"]
    assert [j["spec"]["template"]["spec"]["nodeName"] for j in jobs] == ["v100-0", "v100-1"]
    env = [{e["name"]: e["value"] for e in j["spec"]["template"]["spec"]["containers"][0]["env"]} for j in jobs]
    assert [(e["WATTPLAN_NODE_RANK"], e["WATTPLAN_NUM_NODES"]) for e in env] == [("0", "2"), ("1", "2")]
    assert jobs[0]["spec"]["template"]["spec"]["containers"][0]["command"] == list(PLACEHOLDER_ARGV)
    assert "wattplan.dev/placeholder-command" in jobs[0]["metadata"]["annotations"]


def test_time_slicing_config_and_node_labels(rendered: Path) -> None:
    (cm,) = _docs(rendered / "device-plugin-config.yaml")
    shared = yaml.safe_load(cm["data"][SHARED_CONFIG])
    assert shared["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 2}]
    assert yaml.safe_load(cm["data"][EXCLUSIVE_CONFIG]) == {"version": "v1"}
    labels = (rendered / "label-nodes.sh").read_text()
    assert f"kubectl label node --overwrite v100-0 {CONFIG_LABEL}={EXCLUSIVE_CONFIG}" in labels
    assert f"kubectl label node --overwrite v100-1 {CONFIG_LABEL}={SHARED_CONFIG}" in labels
    assert f"kubectl label node --overwrite a100-0 {CONFIG_LABEL}={SHARED_CONFIG}" in labels


def test_settings_agent(tmp_path: Path, rendered: Path) -> None:
    configmap, daemonset = _docs(rendered / "node-agent.yaml")
    assert configmap["data"]["a100-0.settings"].splitlines()[1:] == [
        "0 sm_clock_mhz 1410",
        "1 sm_clock_mhz 1410",
        "2 sm_clock_mhz 1005",
    ]
    assert configmap["data"]["v100-1.settings"].splitlines()[1:] == [
        "0 power_limit_w 150",
        "1 power_limit_w 150",
        "2 power_limit_w 250",
        "3 power_limit_w 250",
    ]
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["containers"][0]["securityContext"] == {"privileged": True}
    hosts = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert hosts[0]["matchExpressions"][0]["values"] == ["v100-0", "v100-1", "a100-0"]
    agent = tmp_path / "agent.sh"
    agent.write_text(configmap["data"]["agent.sh"])
    shellcheck([agent, rendered / "label-nodes.sh", rendered / "apply.sh"])


def _node_agent(tmp_path: Path, rendered: Path, **env: str) -> subprocess.Popen[str]:
    """a100-0's node agent started against the fake ``nvidia-smi`` (log ``smi.log``), a pass every 0.1 s."""
    from tests.launch_helpers import install_fake_nvidia

    configmap, _ = _docs(rendered / "node-agent.yaml")
    settings_dir = tmp_path / "etc"
    settings_dir.mkdir()
    (settings_dir / "agent.sh").write_text(configmap["data"]["agent.sh"])
    (settings_dir / "a100-0.settings").write_text(configmap["data"]["a100-0.settings"])
    install_fake_nvidia(tmp_path / "bin", tmp_path / "smi.log")
    env = {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
        "NODE_NAME": "a100-0",
        "WATTPLAN_SETTINGS_DIR": str(settings_dir),
        "WATTPLAN_AGENT_INTERVAL_S": "0.1",
        **env,
    }
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    return subprocess.Popen(["bash", str(settings_dir / "agent.sh")], env=env, text=True, **pipes)


def test_agent_applies_and_resets_settings(tmp_path: Path, rendered: Path) -> None:
    log = tmp_path / "smi.log"
    agent = _node_agent(tmp_path, rendered)
    try:
        assert agent.stdout is not None
        assert "applied settings for a100-0" in agent.stdout.readline()
    finally:
        agent.terminate()
        agent.wait(timeout=60)
    calls = [c.split(": ", 1)[1] for c in log.read_text().splitlines()]
    assert calls[0] == "-i 0,1,2 -pm 1"  # one call per setting
    assert set(calls[1:3]) == {"-i 0,1 -lgc 1410,1410", "-i 2 -lgc 1005,1005"}
    assert calls[3:] == ["-i 0,1,2 -rgc"]


def test_agent_names_a_refusing_gpu_and_tries_again(tmp_path: Path, rendered: Path) -> None:
    """GPU 2 refuses every call: the others get their settings, the agent says so and applies again, still running."""
    log = tmp_path / "smi.log"
    agent = _node_agent(tmp_path, rendered, FAKE_SMI_REFUSE="2")
    try:
        assert agent.stderr is not None
        said = [agent.stderr.readline() for _ in range(20)]  # its refusals, pass after pass: it keeps running
        assert agent.poll() is None, said
    finally:
        agent.terminate()
        agent.wait(timeout=60)
    tries = [line for line in said if "a GPU refused its setting (above); trying again in 0.1 s" in line]
    assert len(tries) >= 2 and any("GPU 2 refused nvidia-smi -lgc 1005,1005" in line for line in said), said
    calls = [c.split(": ", 1)[1] for c in log.read_text().splitlines()]
    assert {"-i 0 -pm 1", "-i 1 -pm 1", "-i 0,1 -lgc 1410,1410"} <= set(calls)  # the others were set


def test_node_names_must_be_kubernetes_names() -> None:
    inst = launch_instance(v100_only=True)
    model = build_model(hand_plan(inst, v100_only=True), inst, HostMap({"v100-0": "GPU_Node_0", "v100-1": "ok-1"}))
    with pytest.raises(InputError) as exc:
        render_kubernetes(model)
    assert [(p.code, p.path) for p in exc.value.problems] == [("bad-node-name", "GPU_Node_0")]
    assert "--node-map" in exc.value.problems[0].message
    ok = build_model(hand_plan(inst, v100_only=True), inst, HostMap())
    with pytest.raises(InputError):
        render_kubernetes(ok, KubernetesOptions(namespace="Not A Namespace"))


def test_numeric_user_becomes_run_as_user() -> None:
    from tests.launch_helpers import launch_instance_doc
    from wattplan.planner.contracts.instance_io import parse_instance

    doc = launch_instance_doc()
    doc["jobs"][0]["user"] = "1001"
    doc["jobs"][1]["user"] = "alice"
    inst = parse_instance(doc)
    files = render_kubernetes(build_model(hand_plan(inst), inst, HostMap()))
    jobs = list(yaml.safe_load_all(next(f for f in files if f.path == "jobs.yaml").text))
    by_id = {j["metadata"]["annotations"]["wattplan.dev/job-id"]: j for j in jobs}
    assert by_id["train-4"]["spec"]["template"]["spec"]["containers"][0]["securityContext"] == {"runAsUser": 1001}
    assert by_id[HOSTILE_IDS[0]]["metadata"]["annotations"]["wattplan.dev/user"] == "alice"
    assert all(re.fullmatch(r"[a-z0-9-]+", j["metadata"]["name"]) for j in jobs)
