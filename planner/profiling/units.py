"""Units of measured values: the factor to the planner's unit, read from a header or a value's suffix.

The planner works in W (power), MHz (clocks), J (energy), MiB (memory), % (utilisation, 0-100). A
measurement file may write ``power.draw [mW]`` or ``212350 mW``: each known unit has its factor to the
planner's unit (``mW`` -> 0.001); an unknown one is refused. Unit names are case-sensitive (``mW`` is a
milliwatt, ``MW`` would be a megawatt, which no GPU draws and is not accepted).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

POWER_UNITS: Mapping[str, float] = {"W": 1.0, "mW": 1e-3, "kW": 1e3}
"""Factors to W."""
CLOCK_UNITS: Mapping[str, float] = {"MHz": 1.0, "GHz": 1e3, "kHz": 1e-3}
"""Factors to MHz."""
ENERGY_UNITS: Mapping[str, float] = {"J": 1.0, "mJ": 1e-3, "kJ": 1e3}
"""Factors to J."""
MEMORY_UNITS: Mapping[str, float] = {"MiB": 1.0, "GiB": 1024.0, "KiB": 1.0 / 1024.0}
"""Factors to MiB."""
TIME_UNITS: Mapping[str, float] = {"s": 1.0, "ms": 1e-3, "min": 60.0, "h": 3600.0}
"""Factors to s."""
PERCENT_UNITS: Mapping[str, float] = {"%": 1.0}
"""Utilisation stays in percent."""

_SUFFIX = re.compile(r"^(?P<number>.*?[0-9.])\s*(?P<unit>[A-Za-z%]+)$")


def split_unit(text: str) -> tuple[str, str | None]:
    """``"212.35 W"`` -> ``("212.35", "W")``; ``"212.35"`` -> ``("212.35", None)``; ``"1e3"`` stays whole."""
    text = text.strip()
    try:
        float(text)
    except ValueError:
        match = _SUFFIX.match(text)
        if match:
            return match["number"].strip(), match["unit"]
    return text, None


def unit_factor(unit: str | None, units: Mapping[str, float]) -> float | None:
    """The factor of ``unit`` to the planner's unit (1 for no unit); None for a unit not in ``units``."""
    if unit is None:
        return 1.0
    return units.get(unit)


def split_header(cell: str) -> tuple[str, str | None]:
    """``"average_power [mW]"`` or ``"average_power (mW)"`` -> ``("average_power", "mW")``; no unit -> None."""
    text = cell.strip()
    for open_, close in (("[", "]"), ("(", ")")):
        if text.endswith(close) and open_ in text:
            name, unit = text[:-1].rsplit(open_, 1)
            return name.strip(), unit.strip()
    return text, None


def describe(units: Mapping[str, float]) -> str:
    """``"W, mW or kW"``: the accepted units, for messages (empty when none is)."""
    names = list(units)
    if not names:
        return ""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
