"""The ``nvidia-smi`` lines that give one GPU its setting and take it back (docs/design.md §11.1).

Every value is an ``int`` formatted by Python, so nothing from outside reaches these lines.
Power limits and SM-clock locks need root; ``-lgc``/``-rgc`` need Volta or newer.
"""

from __future__ import annotations

from wattplan.planner.launch.render import GpuSetting

RESET_POWER_FUNCTION = """\
# Put one GPU's power limit back to its default (as nvidia-smi reports it).
reset_power_limit() {
  local default_w
  default_w=$(nvidia-smi -i "$1" --query-gpu=power.default_limit --format=csv,noheader,nounits)
  nvidia-smi -i "$1" -pl "${default_w%.*}"
}
"""

REQUIRE_NVIDIA_SMI = """\
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "wattplan: nvidia-smi is not on PATH; cannot set GPU power limits or clocks" >&2
  exit 1
fi
"""


def set_lines(s: GpuSetting) -> list[str]:
    """Persistence mode on, then the power limit (``-pl W``) or a locked SM clock (``-lgc S,S``)."""
    i, v = int(s.index), int(s.value)
    action = f"-pl {v}" if s.unit == "power_limit_w" else f"-lgc {v},{v}"
    return [f"nvidia-smi -i {i} -pm 1", f"nvidia-smi -i {i} {action}"]


def reset_lines(s: GpuSetting) -> list[str]:
    """The default power limit back (needs :data:`RESET_POWER_FUNCTION`), or the clock lock released."""
    i = int(s.index)
    return [f"reset_power_limit {i}"] if s.unit == "power_limit_w" else [f"nvidia-smi -i {i} -rgc"]


def describe(s: GpuSetting) -> str:
    """``"GPU 3: power limit 250 W (shared)"`` for comments and logs (no outside text)."""
    what = f"power limit {int(s.value)} W" if s.unit == "power_limit_w" else f"SM clock {int(s.value)} MHz"
    return f"GPU {int(s.index)}: {what}{' (shared)' if s.shared else ''}"
