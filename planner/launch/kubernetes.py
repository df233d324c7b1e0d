"""Kubernetes target: ``batch/v1`` Jobs, the device plugin's time-slicing config, a GPU-settings agent.

Files::

    jobs.yaml                  one Job per job (per job and node for a job spanning nodes)
    device-plugin-config.yaml  ConfigMap for the NVIDIA device plugin: an exclusive and a time-sliced config
    node-agent.yaml            ConfigMap of per-node GPU settings + the agent script, and a privileged DaemonSet
    label-nodes.sh             selects each node's device-plugin config (label nvidia.com/device-plugin.config)
    apply.sh                   label-nodes.sh, then kubectl apply of the three YAML files

Names: object names come from :func:`planner.launch.quoting.safe_name` (DNS-1123, with a hash of the
job id); the job id itself is kept in the annotation ``wattplan.dev/job-id``. Nodes are pinned with
``spec.nodeName``; host names must be valid node names (DNS-1123 subdomains), else map them with
``--node-map``.

Limits (the device plugin's, not wattplan's): time-slicing is per node (every GPU of a node with a
pair is advertised twice), and the plugin, not the plan, chooses which physical GPUs a pod gets; the
plan's indices are recorded in the annotation ``wattplan.dev/gpu-indices`` and ``WATTPLAN_GPUS``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from wattplan.planner.contracts.problems import InputError, Problem
from wattplan.planner.launch.nvidia import SMI_FUNCTIONS
from wattplan.planner.launch.quoting import K8S_NAME_MAX, comment_text, is_dns1123_subdomain, sh_quote, short_hash
from wattplan.planner.launch.render import LaunchFile, LaunchModel, Member, Part, Unit

DOMAIN = "wattplan.dev"
CONFIG_LABEL = "nvidia.com/device-plugin.config"
EXCLUSIVE_CONFIG = "wattplan-exclusive"
SHARED_CONFIG = "wattplan-time-sliced-2"
AGENT_NAME = "wattplan-gpu-agent"
SETTINGS_CONFIGMAP = "wattplan-gpu-settings"
DEVICE_PLUGIN_CONFIGMAP = "wattplan-device-plugin-config"

AGENT_SCRIPT = (
    """\
#!/usr/bin/env bash
# wattplan GPU agent: applies this node's GPU settings from $WATTPLAN_SETTINGS_DIR/$NODE_NAME.settings
# (lines "INDEX UNIT VALUE", UNIT power_limit_w or sm_clock_mhz), re-applies them when the file changes,
# and puts default power limits and clocks back when it stops or a GPU leaves the list.
# One nvidia-smi call acts on every GPU that gets the same thing. A GPU that refuses its setting is named in the
# log and the settings are applied again every interval until every GPU takes them; the agent keeps running.
set -euo pipefail
dir="${WATTPLAN_SETTINGS_DIR:-/etc/wattplan}"
file="$dir/${NODE_NAME:?NODE_NAME must be set}.settings"
interval="${WATTPLAN_AGENT_INTERVAL_S:-30}"

"""
    + SMI_FUNCTIONS
    + """
# apply_settings TEXT: persistence mode on for every listed GPU, then one call per distinct setting.
# Returns 1 when a GPU refused (after trying every call).
apply_settings() {
  local index unit value key all='' status=0
  local -A gpus_at=()
  while read -r index unit value; do
    case "$index" in '' | '#'*) continue ;; esac
    case "$unit" in
      power_limit_w | sm_clock_mhz) ;;
      *) echo "wattplan agent: unknown unit $unit for GPU $index" >&2; continue ;;
    esac
    all+="${all:+,}$index"
    key="$unit $value"
    gpus_at[$key]+="${gpus_at[$key]:+,}$index"
  done <<< "$1"
  [ -n "$all" ] || return 0
  smi "$all" -pm 1 || status=1
  for key in "${!gpus_at[@]}"; do
    read -r unit value <<< "$key"
    case "$unit" in
      power_limit_w) smi "${gpus_at[$key]}" -pl "$value" || status=1 ;;
      sm_clock_mhz) smi "${gpus_at[$key]}" -lgc "$value,$value" || status=1 ;;
    esac
  done
  return "$status"
}

# reset_settings TEXT: the listed GPUs' default power limits back, their clock locks released. Returns 1 when a GPU
# refused (after trying every call).
reset_settings() {
  local index unit value powers='' clocks='' status=0
  while read -r index unit value; do
    case "$index" in '' | '#'*) continue ;; esac
    case "$unit" in
      power_limit_w) powers+="${powers:+,}$index" ;;
      sm_clock_mhz) clocks+="${clocks:+,}$index" ;;
    esac
  done <<< "$1"
  if [ -n "$powers" ]; then reset_power_limits "$powers" || status=1; fi
  if [ -n "$clocks" ]; then smi "$clocks" -rgc || status=1; fi
  return "$status"
}

applied=''
pending=0
trap 'reset_settings "$applied" || true; exit 0' TERM INT
while true; do
  wanted=''
  if [ -f "$file" ]; then
    wanted=$(cat -- "$file")
  fi
  if [ "$wanted" != "$applied" ] || [ "$pending" = 1 ]; then
    if [ "$wanted" != "$applied" ] && ! reset_settings "$applied"; then
      echo "wattplan agent: a GPU kept a setting it no longer has (above); going on" >&2
    fi
    applied="$wanted"
    if apply_settings "$wanted"; then
      pending=0
      echo "wattplan agent: applied settings for $NODE_NAME"
    else
      pending=1
      echo "wattplan agent: a GPU refused its setting (above); trying again in $interval s" >&2
    fi
  fi
  sleep "$interval" &
  wait "$!"
done
"""
)


@dataclass(frozen=True, slots=True)
class KubernetesOptions:
    """Namespaces and images of the rendered objects."""

    namespace: str = "default"
    image: str = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
    agent_image: str = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
    device_plugin_namespace: str = "gpu-operator"
    active_deadline_s: int | None = None
    """``spec.activeDeadlineSeconds`` of every Job: the round plus a grace (:mod:`planner.launch.limits`)."""


def check_node_names(model: LaunchModel) -> None:
    """Raise :class:`InputError` listing every host that is not a valid Kubernetes node name."""
    problems = [
        Problem(
            "bad-node-name",
            host,
            f"{comment_text(host)} is not a Kubernetes node name (lowercase DNS-1123); map it with --node-map",
        )
        for host in model.hosts()
        if not is_dns1123_subdomain(host)
    ]
    if problems:
        raise InputError("plan", problems)


def _labels(model: LaunchModel, name: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/managed-by": "wattplan",
        f"{DOMAIN}/round": str(int(model.round_index)),
        f"{DOMAIN}/job": name,
    }


def _setting_text(unit: Unit) -> str:
    return f"{unit.setting} {'W power limit' if unit.setting_unit == 'power_limit_w' else 'MHz SM clock'}"


def _job_object(model: LaunchModel, unit: Unit, m: Member, part: Part, rank: int, opts: KubernetesOptions) -> dict:
    name = m.name if len(unit.parts) == 1 else f"{m.name}-p{rank}"
    labels = _labels(model, m.name)
    annotations = {
        f"{DOMAIN}/job-id": m.job_id,
        f"{DOMAIN}/gpu-indices": f"{part.node}:{part.indices_text}",
        f"{DOMAIN}/setting": _setting_text(unit),
    }
    if m.partner is not None:
        annotations[f"{DOMAIN}/shares-with"] = m.partner
    if m.placeholder:
        annotations[f"{DOMAIN}/placeholder-command"] = "true: the instance gives no command for this job"
    env = [
        {"name": "WATTPLAN_JOB_ID", "value": m.job_id},
        {"name": "WATTPLAN_ROUND", "value": str(int(model.round_index))},
        {"name": "WATTPLAN_GPUS", "value": part.indices_text},
        {"name": "WATTPLAN_NODE_RANK", "value": str(rank)},
        {"name": "WATTPLAN_NUM_NODES", "value": str(len(unit.parts))},
        {"name": "CUDA_DEVICE_ORDER", "value": "PCI_BUS_ID"},
    ]
    if m.partner is not None:
        env.append({"name": "WATTPLAN_SHARES_WITH", "value": m.partner})
    ours = {e["name"] for e in env}
    # Kubernetes lets the last of two equal names win: a job's env never repeats one of ours.
    env += [{"name": k, "value": v} for k, v in m.env if k not in ours]
    if m.dropped_env:
        annotations[f"{DOMAIN}/env-not-used"] = ",".join(m.dropped_env)
    container: dict[str, Any] = {
        "name": "job",
        "image": opts.image,
        "command": list(m.command),
        "env": env,
        "resources": {"limits": {"nvidia.com/gpu": len(part.gpu_indices)}},
    }
    if m.workdir:
        container["workingDir"] = m.workdir
    if m.user:
        if m.user.isascii() and m.user.isdigit():
            container["securityContext"] = {"runAsUser": int(m.user)}
        else:
            annotations[f"{DOMAIN}/user"] = m.user
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": opts.namespace, "labels": labels, "annotations": annotations},
        "spec": {
            "backoffLimit": 0,
            **({} if opts.active_deadline_s is None else {"activeDeadlineSeconds": int(opts.active_deadline_s)}),
            "template": {
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeName": part.host,
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [container],
                },
            },
        },
    }


def _device_plugin_config(model: LaunchModel, opts: KubernetesOptions) -> dict:
    exclusive = {"version": "v1"}
    shared = {
        "version": "v1",
        "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}},
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": DEVICE_PLUGIN_CONFIGMAP,
            "namespace": opts.device_plugin_namespace,
            "labels": {"app.kubernetes.io/managed-by": "wattplan", f"{DOMAIN}/round": str(int(model.round_index))},
        },
        "data": {
            EXCLUSIVE_CONFIG: yaml.safe_dump(exclusive, sort_keys=False),
            SHARED_CONFIG: yaml.safe_dump(shared, sort_keys=False),
        },
    }


def settings_text(model: LaunchModel, host: str) -> str:
    """The agent's settings file of one node: ``INDEX UNIT VALUE`` lines (integers and a fixed unit word)."""
    lines = [f"# wattplan round {int(model.round_index)}, node {host}"]
    lines += [f"{int(s.index)} {s.unit} {int(s.value)}" for s in model.settings(host)]
    return "\n".join(lines) + "\n"


def _agent_objects(model: LaunchModel, opts: KubernetesOptions) -> list[dict]:
    hosts = model.hosts()
    data = {"agent.sh": AGENT_SCRIPT}
    data.update({f"{h}.settings": settings_text(model, h) for h in hosts})
    labels = {"app.kubernetes.io/managed-by": "wattplan", "app.kubernetes.io/name": AGENT_NAME}
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": SETTINGS_CONFIGMAP,
            "namespace": opts.namespace,
            "labels": {**labels, f"{DOMAIN}/round": str(int(model.round_index))},
        },
        "data": data,
    }
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": AGENT_NAME, "namespace": opts.namespace, "labels": labels},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": AGENT_NAME}},
            "template": {
                "metadata": {
                    "labels": labels,
                    # A new round's settings change this hash, which rolls the agents.
                    "annotations": {f"{DOMAIN}/settings-hash": short_hash(json.dumps(data, sort_keys=True))},
                },
                "spec": {
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {"key": "kubernetes.io/hostname", "operator": "In", "values": hosts}
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "terminationGracePeriodSeconds": 60,
                    "containers": [
                        {
                            "name": "agent",
                            "image": opts.agent_image,
                            "command": ["/bin/bash", "/etc/wattplan/agent.sh"],
                            "env": [
                                {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                                {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                                {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"},
                            ],
                            "securityContext": {"privileged": True},
                            "volumeMounts": [{"name": "settings", "mountPath": "/etc/wattplan", "readOnly": True}],
                        }
                    ],
                    "volumes": [{"name": "settings", "configMap": {"name": SETTINGS_CONFIGMAP}}],
                },
            },
        },
    }
    return [configmap, daemonset]


class _Dumper(yaml.SafeDumper):
    """Safe YAML without anchors/aliases (each object reads on its own), multi-line text as ``|`` blocks."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(docs: list[dict], header: str) -> str:
    """YAML documents (``---``-separated) under a one-line comment; strings are always quoted as YAML needs."""
    body = yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)
    return f"# {header}\n{body}"


def _label_script(model: LaunchModel) -> str:
    shared_hosts = {h for u in model.units if u.shared for h in u.hosts}
    lines = [
        "#!/usr/bin/env bash",
        f"# wattplan round {model.round_index}: pick each node's NVIDIA device-plugin config (time-slicing for",
        f"# nodes with a pair). The device plugin must be deployed with the ConfigMap {DEVICE_PLUGIN_CONFIGMAP}.",
        "set -euo pipefail",
    ]
    for h in model.hosts():
        config = SHARED_CONFIG if h in shared_hosts else EXCLUSIVE_CONFIG
        lines.append(f"kubectl label node --overwrite {sh_quote(h)} {sh_quote(f'{CONFIG_LABEL}={config}')}")
    return "\n".join(lines) + "\n"


APPLY_SCRIPT = """\
#!/usr/bin/env bash
# Apply this round: node labels, the device-plugin config, the GPU agent and its settings, then the jobs.
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")"
./label-nodes.sh
kubectl apply -f device-plugin-config.yaml
kubectl apply -f node-agent.yaml
kubectl apply -f jobs.yaml
"""


def render_kubernetes(model: LaunchModel, opts: KubernetesOptions | None = None) -> list[LaunchFile]:
    """Every file of the Kubernetes target (see the module docstring)."""
    opts = opts or KubernetesOptions()
    check_node_names(model)
    for what, value in (("--namespace", opts.namespace), ("--device-plugin-namespace", opts.device_plugin_namespace)):
        if not is_dns1123_subdomain(value) or len(value) > K8S_NAME_MAX:
            raise InputError("options", [Problem("bad-option", what, f"{comment_text(value)} is not a namespace")])
    jobs = [
        _job_object(model, unit, m, part, rank, opts)
        for unit in model.units
        for m in unit.members
        for rank, part in enumerate(unit.parts)
    ]
    round_text = f"wattplan round {model.round_index}"
    return [
        LaunchFile("jobs.yaml", dump_yaml(jobs, f"{round_text}: one Job per job (and node)")),
        LaunchFile(
            "device-plugin-config.yaml",
            dump_yaml([_device_plugin_config(model, opts)], f"{round_text}: NVIDIA device plugin configs"),
        ),
        LaunchFile(
            "node-agent.yaml",
            dump_yaml(_agent_objects(model, opts), f"{round_text}: GPU settings and the agent that applies them"),
        ),
        LaunchFile("label-nodes.sh", _label_script(model), True),
        LaunchFile("apply.sh", APPLY_SCRIPT, True),
    ]
