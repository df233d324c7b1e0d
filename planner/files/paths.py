"""Output paths checked against input paths before a command writes anything.

``profiles ingest log.csv -o log.csv`` once replaced the raw measurements with the library made from
them. Every command that reads files and writes files calls :func:`refuse_overwriting_inputs` first.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from wattplan.planner.contracts.problems import InputError, Problem

OUTPUT_IS_INPUT = "output-is-input"
SAME_OUTPUT = "same-output"


def same_path(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: equal once resolved (symlinks followed), or hard links of one file."""
    try:
        if a.resolve() == b.resolve():
            return True
    except (OSError, RuntimeError):  # a symlink loop: compare what exists below
        pass
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # one of them does not exist (yet), or a name the OS refuses
        return False


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies in ``folder`` (at any depth, symlinks followed); a folder is not inside itself."""
    try:
        resolved, root = path.resolve(), folder.resolve()
    except (OSError, RuntimeError):
        return False
    return resolved != root and resolved.is_relative_to(root)


def refuse_overwriting_inputs(
    outputs: Mapping[str, Path | None], inputs: Iterable[Path | None], replaced: Collection[str] = ()
) -> None:
    """Raise :class:`InputError` (code ``output-is-input``) when an output names one of the ``inputs``.

    The options in ``replaced`` write a folder that replaces whatever was there as a whole (``launch --out``):
    an input inside it would be destroyed too, so that is refused as well.

    ``outputs`` maps each option (e.g. ``"--out"``) to the path it writes (None: not given). Two options
    writing one path are refused too (code ``same-output``): the second would replace the first. Nothing is
    read or written here, so a refused command leaves every file as it was.
    """
    given = [(option, path) for option, path in outputs.items() if path is not None]
    sources = [path for path in inputs if path is not None]
    problems: list[Problem] = []
    for k, (option, path) in enumerate(given):
        for source in sources:
            if same_path(path, source) or (option in replaced and inside(source, path)):
                how = "is" if same_path(path, source) else "holds"
                message = f"{path} {how} the input {source}: writing it would destroy it; choose another path"
                problems.append(Problem(OUTPUT_IS_INPUT, option, message))
                break
        for other, earlier in given[:k]:
            if same_path(path, earlier):
                problems.append(Problem(SAME_OUTPUT, option, f"{path} is also {other}'s output; choose another path"))
    if problems:
        raise InputError("options", problems)
