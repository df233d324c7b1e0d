"""The ``nvidia-smi`` lines that give a node's GPUs their settings and take them back (docs/design.md §11.1).

One call acts on every GPU that gets the same thing: ``nvidia-smi -i 0,3,4 -pl 250`` (``-i`` takes a
comma-separated list). Each call pays for the program's start and the driver's initialisation, so an 8-GPU node
costs two to three calls instead of sixteen. When a call for several GPUs fails (an ``nvidia-smi`` that refuses
lists, or one GPU that refuses the value), :data:`SMI_FUNCTIONS`' ``smi`` calls the GPUs one by one, so a refusal
names its GPU and the others still get their setting.

Every value is an ``int`` formatted by Python, so nothing from outside reaches these lines.
Power limits and SM-clock locks need root; ``-lgc``/``-rgc`` need Volta or newer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from wattplan.planner.launch.render import GpuSetting

SMI_FUNCTIONS = """\
# smi INDICES ARG...: nvidia-smi -i INDICES ARG... in one call for the listed GPUs ("0" or "0,3,4"). If a call
# for several GPUs fails, each GPU is called alone: a refusal then names its GPU and the others still get theirs.
# Returns 1 when a GPU refused.
smi() {
  local list=$1 index status=0
  local -a each
  shift
  nvidia-smi -i "$list" "$@" && return 0
  if [[ $list != *,* ]]; then
    echo "wattplan: GPU $list refused nvidia-smi $*" >&2
    return 1
  fi
  echo "wattplan: nvidia-smi -i $list $* failed; calling each GPU alone" >&2
  IFS=, read -r -a each <<<"$list"
  for index in "${each[@]}"; do
    nvidia-smi -i "$index" "$@" || { echo "wattplan: GPU $index refused nvidia-smi $*" >&2; status=1; }
  done
  return "$status"
}

# reset_power_limits INDICES: the listed GPUs' power limits back to their defaults (as nvidia-smi reports them):
# one query, then one -pl call per distinct default. Returns 1 when a GPU refused (after trying every default).
reset_power_limits() {
  local rows index default_w status=0
  local -A gpus_at=()
  rows=$(smi "$1" --query-gpu=index,power.default_limit --format=csv,noheader,nounits) || return 1
  while IFS=', ' read -r index default_w; do
    [ -n "$index" ] || continue
    default_w=${default_w%.*}
    if ! [[ $index =~ ^[0-9]+$ && $default_w =~ ^[0-9]+$ ]]; then
      echo "wattplan: nvidia-smi reported no default power limit for GPU $index: $default_w" >&2
      return 1
    fi
    gpus_at[$default_w]+="${gpus_at[$default_w]:+,}$index"
  done <<<"$rows"
  for default_w in "${!gpus_at[@]}"; do
    smi "${gpus_at[$default_w]}" -pl "$default_w" || status=1
  done
  return "$status"
}
"""

REQUIRE_NVIDIA_SMI = """\
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "wattplan: nvidia-smi is not on PATH; cannot set GPU power limits or clocks" >&2
  exit 1
fi
"""


def _indices(settings: Iterable[GpuSetting]) -> str:
    """``"0,3,4"``: the GPUs' indices in the order given, each once (Python-formatted integers)."""
    return ",".join(str(i) for i in dict.fromkeys(int(s.index) for s in settings))


def set_lines(settings: Sequence[GpuSetting]) -> list[str]:
    """Persistence mode on for every GPU in one call, then one call per distinct power limit or locked SM clock.

    Needs :data:`SMI_FUNCTIONS`. ``-pl W`` sets a power limit of ``W`` watts, ``-lgc S,S`` locks the SM clock at
    ``S`` MHz; the groups keep the order in which their first GPU comes.
    """
    if not settings:
        return []
    groups: dict[tuple[str, int], list[GpuSetting]] = {}
    for s in settings:
        groups.setdefault((s.unit, int(s.value)), []).append(s)
    lines = [f"smi {_indices(settings)} -pm 1"]
    for (unit, value), same in groups.items():
        action = f"-pl {value}" if unit == "power_limit_w" else f"-lgc {value},{value}"
        lines.append(f"smi {_indices(same)} {action}")
    return lines


def reset_lines(settings: Sequence[GpuSetting]) -> list[str]:
    """The default power limits back in one query and one call per default, and the clock locks released in one.

    Needs :data:`SMI_FUNCTIONS`.
    """
    powers = [s for s in settings if s.unit == "power_limit_w"]
    clocks = [s for s in settings if s.unit != "power_limit_w"]
    lines = [f"reset_power_limits {_indices(powers)}"] if powers else []
    return lines + ([f"smi {_indices(clocks)} -rgc"] if clocks else [])


def describe(s: GpuSetting) -> str:
    """``"GPU 3: power limit 250 W (shared)"`` for comments and logs (no outside text)."""
    what = f"power limit {int(s.value)} W" if s.unit == "power_limit_w" else f"SM clock {int(s.value)} MHz"
    return f"GPU {int(s.index)}: {what}{' (shared)' if s.shared else ''}"
