"""The ``basis`` of a profile or pair entry: where its numbers come from and how far to trust them.

``{"kind": "measured" | "fitted" | "prior" | "repaired", "points": [point ids], "rel_error": float | null,
"reason": text}``: ``measured`` reproduces points (their mean), ``fitted`` is predicted from points by a model,
``prior`` is the input library's entry untouched by any point, ``repaired`` a prior entry the sanity pass changed.
``rel_error`` is the expected relative error of the entry, the larger of its throughput's and its power's (or of
its two pair rates); null when nothing estimates it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

BasisKind = Literal["measured", "fitted", "prior", "repaired"]
BASIS_KINDS: tuple[str, ...] = ("measured", "fitted", "prior", "repaired")


def make_basis(kind: BasisKind, points: Iterable[str], rel_error: float | None, reason: str) -> dict[str, Any]:
    """A basis document; point ids sorted and unique, ``rel_error`` a float or None."""
    return {
        "kind": kind,
        "points": sorted(set(points)),
        "rel_error": None if rel_error is None else float(rel_error),
        "reason": reason,
    }


def worst(*errors: float | None) -> float | None:
    """The largest of the known errors (None when none is known)."""
    known = [e for e in errors if e is not None]
    return max(known) if known else None
