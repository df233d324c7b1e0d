"""An ``nvidia-smi`` stand-in for the emulated cluster: GPUs that are JSON files (docs/design.md §11.7).

Run as ``python -m wattplan.planner.cluster.nvidia_smi ARGS`` with ``WATTPLAN_CLUSTER_DIR`` (the cluster's folder) and
``SLURMD_NODENAME`` (the node it plays) set; ``bin/nvidia-smi`` of the cluster is a wrapper that execs it. It
understands exactly the forms the node scripts (``planner/agent/node_files``) and ``wattplan launch``'s
scripts (:mod:`planner.launch.nvidia`) use::

    -L                                  list the node's GPUs
    -i IDS -pl W                        set the power limit (W, within [min, max] of the node)
    -i IDS -pm 0|1                      persistence mode (accepted, nothing to keep)
    -i IDS -lgc A,B                     lock the SM clock to [A, B] MHz
    -i IDS -rgc                         release the SM clock lock
    [-i IDS] --query-gpu=F[,F...] --format=csv,noheader,nounits
                                        F: power.default_limit, power.limit, power.min_limit, power.max_limit,
                                        clocks.sm, index, name

``IDS`` is one GPU index or a comma-separated list of them, as nvidia-smi takes (``nvidia-smi -i 0,1 -pl 300``):
the call acts on each listed GPU in index order, and a query prints one line per GPU in that order. An index the
node lacks refuses the whole call (code 6) before any GPU is changed; a value out of range refuses it too, and
since a node's GPUs share their limits, either every listed GPU is set or none.

The node's GPUs and their limits come from the manifest's ``nodes`` (:func:`node_gpu_limits`); one GPU's
state is ``emu/gpus/NODE/INDEX.json`` (:meth:`ClusterLayout.gpu_state_file`), written atomically, and a GPU
without that file is at its default limit with no clock lock. Errors go to stderr with nvidia-smi's return
codes: 2 a bad or unsupported argument (a power limit out of range included, as nvidia-smi refuses it), 6 no
such GPU or node, 9 no cluster to talk to (nvidia-smi's "couldn't communicate with the NVIDIA driver").

It imports only the standard library and :mod:`planner.cluster.layout`: every node script call starts a Python.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wattplan.planner.cluster.layout import ClusterLayout, write_json_atomic

BAD_ARGUMENT = 2
NOT_FOUND = 6
NO_DRIVER = 9

CLOCKS_UNLOCKED_MHZ = 1530
"""``clocks.sm`` of a GPU without a clock lock when the node names no ``max_sm_clock_mhz`` (a V100's boost)."""

QUERY_FIELDS = (
    "power.default_limit",
    "power.limit",
    "power.min_limit",
    "power.max_limit",
    "clocks.sm",
    "index",
    "name",
)


class SmiError(Exception):
    """A refusal: its message goes to stderr and ``code`` is the exit status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class GpuLimits:
    """One node's GPUs as the manifest describes them: type, count and power limits (W)."""

    gpu_type: str
    gpus: int
    default_limit_w: float
    min_limit_w: float
    max_limit_w: float
    max_sm_clock_mhz: int = CLOCKS_UNLOCKED_MHZ


def node_gpu_limits(manifest: dict[str, Any], node: str) -> GpuLimits:
    """The GPUs of ``node`` from the manifest's ``nodes`` list (KeyError when the node is not there).

    Each entry: ``{"name", "gpu_type", "gpus", "default_limit_w", "min_limit_w", "max_limit_w"}`` and an
    optional ``max_sm_clock_mhz``; ValueError when the limits do not satisfy ``0 < min <= default <= max``.
    """
    for entry in manifest.get("nodes", []):
        if entry.get("name") == node:
            limits = GpuLimits(
                gpu_type=str(entry["gpu_type"]),
                gpus=int(entry["gpus"]),
                default_limit_w=float(entry["default_limit_w"]),
                min_limit_w=float(entry["min_limit_w"]),
                max_limit_w=float(entry["max_limit_w"]),
                max_sm_clock_mhz=int(entry.get("max_sm_clock_mhz", CLOCKS_UNLOCKED_MHZ)),
            )
            if not 0 < limits.min_limit_w <= limits.default_limit_w <= limits.max_limit_w or limits.gpus < 1:
                raise ValueError(f"node {node}: limits or GPU count out of order in the manifest: {entry}")
            return limits
    raise KeyError(node)


def default_state(limits: GpuLimits) -> dict[str, Any]:
    """The state of a GPU nobody has set: its default power limit, no clock lock."""
    return {
        "power_limit_w": limits.default_limit_w,
        "default_limit_w": limits.default_limit_w,
        "min_limit_w": limits.min_limit_w,
        "max_limit_w": limits.max_limit_w,
        "sm_clock_lock_mhz": None,
    }


def read_state(layout: ClusterLayout, node: str, index: int, limits: GpuLimits) -> dict[str, Any]:
    """One GPU's state: its file's power limit and clock lock, the limits always from the manifest."""
    state = default_state(limits)
    path = layout.gpu_state_file(node, index)
    if path.exists():
        saved = json.loads(path.read_text())
        state["power_limit_w"] = float(saved["power_limit_w"])
        lock = saved.get("sm_clock_lock_mhz")
        state["sm_clock_lock_mhz"] = [int(lock[0]), int(lock[1])] if lock else None
    return state


def _bus_id(index: int) -> str:
    return f"00000000:{index + 1:02X}:00.0"


def _name(limits: GpuLimits) -> str:
    return f"Emulated {limits.gpu_type.upper()}"


@dataclass(slots=True)
class _Gpu:
    """The GPU one call talks to."""

    layout: ClusterLayout
    node: str
    index: int
    limits: GpuLimits

    def state(self) -> dict[str, Any]:
        return read_state(self.layout, self.node, self.index, self.limits)

    def save(self, state: dict[str, Any]) -> None:
        write_json_atomic(self.layout.gpu_state_file(self.node, self.index), state)

    def query(self, field: str) -> str:
        state = self.state()
        if field == "index":
            return str(self.index)
        if field == "name":
            return _name(self.limits)
        if field == "clocks.sm":
            lock = state["sm_clock_lock_mhz"]
            return str(min(int(lock[1]), self.limits.max_sm_clock_mhz) if lock else self.limits.max_sm_clock_mhz)
        key = {
            "power.default_limit": "default_limit_w",
            "power.limit": "power_limit_w",
            "power.min_limit": "min_limit_w",
            "power.max_limit": "max_limit_w",
        }[field]
        return f"{float(state[key]):.2f}"


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SmiError(f'Invalid {what} "{text}".', BAD_ARGUMENT) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise SmiError(f'Invalid {what} "{text}".', BAD_ARGUMENT)
    return value


def set_power_limit(gpu: _Gpu, text: str) -> str:
    """``-pl W``: refused (code 2) outside the node's [min, max], as nvidia-smi does."""
    watts = _number(text, "power limit")
    lo, hi = gpu.limits.min_limit_w, gpu.limits.max_limit_w
    if not lo <= watts <= hi:
        raise SmiError(
            f"Provided power limit {watts:.2f} W is not a valid power limit which should be between "
            f"{lo:.2f} W and {hi:.2f} W for GPU {_bus_id(gpu.index)}\nTerminating early due to previous errors.",
            BAD_ARGUMENT,
        )
    state = gpu.state()
    before = float(state["power_limit_w"])
    state["power_limit_w"] = watts
    gpu.save(state)
    return f"Power limit for GPU {_bus_id(gpu.index)} was set to {watts:.2f} W from {before:.2f} W.\nAll done."


def lock_clocks(gpu: _Gpu, text: str) -> str:
    """``-lgc A,B`` (``-lgc A`` locks to A alone): whole MHz, ``0 < A <= B``."""
    parts = text.split(",")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        values = []
    if len(values) == 1:
        values = values * 2
    if len(values) != 2 or not 0 < values[0] <= values[1]:
        raise SmiError(f'Invalid clock values "{text}": expected MIN,MAX in MHz with MIN <= MAX.', BAD_ARGUMENT)
    state = gpu.state()
    state["sm_clock_lock_mhz"] = values
    gpu.save(state)
    return f'GPU clocks set to "(gpcclkMin {values[0]}, gpcclkMax {values[1]})" for GPU {_bus_id(gpu.index)}\nAll done.'


def reset_clocks(gpu: _Gpu) -> str:
    """``-rgc``: the clock lock released."""
    state = gpu.state()
    state["sm_clock_lock_mhz"] = None
    gpu.save(state)
    return f"All done. GPU clocks reset for GPU {_bus_id(gpu.index)}."


def persistence(gpu: _Gpu, text: str) -> str:
    """``-pm 0|1``: accepted; an emulated GPU keeps its setting anyway."""
    if text not in ("0", "1", "ENABLED", "DISABLED"):
        raise SmiError(f'Invalid persistence mode "{text}".', BAD_ARGUMENT)
    on = text in ("1", "ENABLED")
    return f"{'Enabled' if on else 'Disabled'} persistence mode for GPU {_bus_id(gpu.index)}.\nAll done."


@dataclass(slots=True)
class _Args:
    index: str | None = None
    action: str | None = None
    value: str | None = None
    query: list[str] | None = None
    format: str | None = None


_ACTIONS_WITH_VALUE = {"-pl": "-pl", "--power-limit": "-pl", "-pm": "-pm", "--persistence-mode": "-pm"}
_ACTIONS_WITH_VALUE |= {"-lgc": "-lgc", "--lock-gpu-clocks": "-lgc"}
_ACTIONS_ALONE = {"-rgc": "-rgc", "--reset-gpu-clocks": "-rgc", "-L": "-L", "--list-gpus": "-L"}


def parse_args(argv: Sequence[str]) -> _Args:
    """The one form ``argv`` is (SmiError code 2 for anything else)."""
    args = _Args()
    it = iter(argv)

    def value_of(flag: str) -> str:
        try:
            return next(it)
        except StopIteration:
            raise SmiError(f'Option "{flag}" requires a value.', BAD_ARGUMENT) from None

    def set_action(action: str, value: str | None) -> None:
        if args.action is not None:
            raise SmiError("Only one operation may be given at a time.", BAD_ARGUMENT)
        args.action, args.value = action, value

    for arg in it:
        flag, eq, inline = arg.partition("=")
        if arg in ("-i", "--id") or (eq and flag == "--id"):
            args.index = inline if eq else value_of(arg)
        elif arg in _ACTIONS_WITH_VALUE or (eq and flag in _ACTIONS_WITH_VALUE):
            key = flag if eq else arg
            set_action(_ACTIONS_WITH_VALUE[key], inline if eq else value_of(arg))
        elif arg in _ACTIONS_ALONE:
            set_action(_ACTIONS_ALONE[arg], None)
        elif flag == "--query-gpu" and eq:
            set_action("query", None)
            args.query = inline.split(",")
        elif flag == "--format" and eq:
            args.format = inline
        else:
            raise SmiError(
                f'Invalid combination of input arguments ("{arg}"). Please run "nvidia-smi -h" for help.', BAD_ARGUMENT
            )
    if args.action is None:
        raise SmiError("The stand-in needs an operation (-L, -pl, -pm, -lgc, -rgc or --query-gpu).", BAD_ARGUMENT)
    if args.action == "query":
        bad = [f for f in args.query or [] if f not in QUERY_FIELDS]
        if bad or not args.query:
            raise SmiError(f'Field "{",".join(bad)}" is not a valid field to query.', BAD_ARGUMENT)
        if args.format != "csv,noheader,nounits":
            raise SmiError("The stand-in answers --query-gpu only with --format=csv,noheader,nounits.", BAD_ARGUMENT)
    elif args.format is not None:
        raise SmiError("--format goes with --query-gpu only.", BAD_ARGUMENT)
    if args.action in ("-pl", "-pm", "-lgc", "-rgc") and args.index is None:
        raise SmiError(f"The stand-in needs -i IDS with {args.action} (a GPU index or a list of them).", BAD_ARGUMENT)
    return args


def _gpus(layout: ClusterLayout, node: str, limits: GpuLimits, index: str | None) -> list[_Gpu]:
    """The GPUs ``-i`` names (every GPU of the node without it), in index order, each once."""
    if index is None:
        return [_Gpu(layout, node, i, limits) for i in range(limits.gpus)]
    named = index.split(",")
    for one in named:
        if not one.isdigit() or int(one) >= limits.gpus:
            raise SmiError(f"No devices were found with index {one!r} on {node}.", NOT_FOUND)
    return [_Gpu(layout, node, i, limits) for i in sorted({int(one) for one in named})]


def run(argv: Sequence[str], env: dict[str, str]) -> str:
    """What one call prints (SmiError for a refusal); ``env`` gives the cluster folder and the node."""
    args = parse_args(argv)
    root, node = env.get("WATTPLAN_CLUSTER_DIR"), env.get("SLURMD_NODENAME")
    if not root or not node:
        raise SmiError(
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver "
            "(the stand-in needs WATTPLAN_CLUSTER_DIR and SLURMD_NODENAME).",
            NO_DRIVER,
        )
    layout = ClusterLayout(Path(root))
    try:
        manifest = layout.read_manifest()
    except (OSError, ValueError) as e:
        raise SmiError(f"NVIDIA-SMI has failed: no emulated cluster at {root} ({e}).", NO_DRIVER) from None
    try:
        limits = node_gpu_limits(manifest, node)
    except KeyError:
        raise SmiError(f"No devices were found (node {node} is not in {layout.manifest}).", NOT_FOUND) from None
    except (TypeError, ValueError) as e:
        raise SmiError(f"NVIDIA-SMI has failed: bad node entry in {layout.manifest}: {e}", NO_DRIVER) from None
    gpus = _gpus(layout, node, limits, args.index)
    if args.action == "-L":
        return "\n".join(f"GPU {g.index}: {_name(limits)} (UUID: GPU-emu-{node}-{g.index})" for g in gpus)
    if args.action == "query":
        return "\n".join(", ".join(g.query(f) for f in args.query or []) for g in gpus)
    value = args.value or ""
    actions: dict[str, Callable[[_Gpu], str]] = {
        "-pl": lambda g: set_power_limit(g, value),
        "-pm": lambda g: persistence(g, value),
        "-lgc": lambda g: lock_clocks(g, value),
        "-rgc": reset_clocks,
    }
    act = actions[args.action or ""]
    return "\n".join(act(g) for g in gpus)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: prints the answer, or the refusal on stderr with its return code."""
    try:
        out = run(sys.argv[1:] if argv is None else argv, dict(os.environ))
    except SmiError as e:
        print(e, file=sys.stderr)
        return e.code
    if out:
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
