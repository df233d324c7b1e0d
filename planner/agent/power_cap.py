"""A power cap that moves: the cluster's cap as an operator or a grid program sets it while the agent runs.

``wattplan agent --power-cap-file FILE`` reads ``FILE`` at every round and, between rounds, at every poll: when it
changed (inode, size or modification time), a round starts at once, so a new cap is followed within one poll and a
round (demand response asks for tens of seconds). The file holds one value: the cap in watts (``6000``, ``6.5e3``)
or ``none`` (no cap); an empty file is ``none``. Anything else, or a file that cannot be read, keeps the cap last
read and says so once per change. Write it atomically (``mv`` a temporary file over it) so that no round reads a
half-written value; a replay writes it the same way (:mod:`planner.control.cap_schedule`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

NO_CAP = "none"
"""The file's word for no cap."""


def parse_cap(text: str) -> float | None:
    """The cap a file's ``text`` holds (W, > 0), None for ``none`` or nothing; ValueError naming what it holds."""
    words = text.split()
    if not words or (len(words) == 1 and words[0].lower() == NO_CAP):
        return None
    if len(words) == 1:
        try:
            value = float(words[0])
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value > 0:
            return value
    raise ValueError(f"holds {text.strip()[:40]!r}, not a power in W (> 0) or {NO_CAP!r}")


@dataclass
class CapFile:
    """The cap file (module docstring) and the cap last read from it (``start_w`` until a read succeeds)."""

    path: Path
    start_w: float | None = None
    cap_w: float | None = field(init=False)
    _signature: tuple[int, int, int] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.cap_w = self.start_w

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def changed(self) -> bool:
        """The file changed (or appeared, or went) since the last :meth:`read`."""
        return self._stat() != self._signature

    def read(self) -> str | None:
        """Read the file when it changed; a note when the cap changed or the file could not be used, else None."""
        signature = self._stat()
        if signature == self._signature:
            return None
        self._signature = signature
        try:
            cap = parse_cap(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            kept = "no cap" if self.cap_w is None else f"{self.cap_w:,.0f} W"
            return f"power cap file {self.path}: {e}; the cap stays {kept}"
        if cap == self.cap_w:
            return None
        self.cap_w = cap
        return f"power cap now {'none' if cap is None else f'{cap:,.0f} W'} ({self.path})"
