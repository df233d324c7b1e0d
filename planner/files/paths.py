"""Output paths checked against input paths, and against the file system, before a command writes anything.

``profiles ingest log.csv -o log.csv`` once replaced the raw measurements with the library made from
them, and ``simulate --profiles out/comparison.json --out out`` replaced its own profile library with the
comparison table (exit 0). Every command that reads files and writes files calls
:func:`refuse_overwriting_inputs` first, naming each output and which outputs are folders: an output file must
not be an input, an output folder must not hold one (the command writes and replaces files in it, and which
names it writes changes with its options, policies and version), and every output must be writable at all
(an existing file where a folder is needed, a name too long for the file system) before any work is done.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from wattplan.planner.contracts.problems import InputError, Problem

OUTPUT_IS_INPUT = "output-is-input"
SAME_OUTPUT = "same-output"
OUTPUT_IS_DIRECTORY = "output-is-directory"
UNWRITABLE_OUTPUT = "unwritable-output"


def same_path(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: equal once resolved (symlinks followed), or hard links of one file."""
    try:
        if a.resolve() == b.resolve():
            return True
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a name too long, a NUL: compare what exists below
        pass
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # one of them does not exist (yet), or a name the OS refuses
        return False


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies in ``folder`` (at any depth, symlinks followed); a folder is not inside itself."""
    try:
        resolved, root = path.resolve(), folder.resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    return resolved != root and resolved.is_relative_to(root)


def _bad_name(path: Path) -> str | None:
    """Why no file can have the name ``path`` (a NUL in it, a part too long for the file system), or None."""
    try:
        os.lstat(path)
    except ValueError:
        return f"{str(path)[:200]!r} has a NUL character in its name"
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return f"cannot write {str(path)[:200]}...: a name in it is too long for the file system"
    return None


def unwritable_reason(path: Path, folder: bool) -> tuple[str, str] | None:
    """Why ``path`` cannot be written as an output file (``folder`` False) or folder: ``(code, message)``, or None.

    Only looks (nothing is created): a name the OS refuses, an existing file where a folder is needed (``path``
    itself for a folder, any folder above it), an existing folder where a file is to be written. Permissions are
    left to the write itself, which names the path too.
    """
    if (why := _bad_name(path)) is not None:
        return UNWRITABLE_OUTPUT, why
    for parent in path.absolute().parents:
        if os.path.lexists(parent):
            if not os.path.isdir(parent):
                return UNWRITABLE_OUTPUT, f"cannot write {path}: {parent} is not a folder"
            break
    if folder and os.path.lexists(path) and not os.path.isdir(path):
        return UNWRITABLE_OUTPUT, f"cannot write {path}: it is a file, not a folder; give a folder for the output"
    if not folder and os.path.isdir(path):
        return OUTPUT_IS_DIRECTORY, f"{path} is a folder; give a file name for the output"
    return None


def _input_problem(option: str, path: Path, source: Path, folder: bool) -> Problem | None:
    """The ``output-is-input`` problem of output ``path`` (of ``option``) against the input ``source``, if any."""
    if same_path(path, source):
        message = f"{path} is the input {source}: writing it would destroy it; choose another path"
        return Problem(OUTPUT_IS_INPUT, option, message)
    if folder and inside(source, path):
        message = (
            f"the output folder {path} holds the input {source}: the command writes and replaces files in it; "
            "move the input out or choose another folder"
        )
        return Problem(OUTPUT_IS_INPUT, option, message)
    return None


def refuse_overwriting_inputs(
    outputs: Mapping[str, Path | None],
    inputs: Iterable[Path | None],
    replaced: Collection[str] = (),
    folders: Collection[str] = (),
) -> None:
    """Raise :class:`InputError` when an output could destroy an input, or cannot be written at all.

    ``outputs`` maps each option (e.g. ``"--out"``) to the path it writes (None: not given). The options in
    ``folders`` write a folder (``simulate --out``), those in ``replaced`` a folder that replaces whatever was
    there as a whole (``launch --out``); the others write one file each. Refused, each problem naming its option:

    * ``output-is-input``: an output file that is an input (the same path, a symlink or a hard link to it), or an
      output folder that is an input or holds one at any depth (which names the command writes in its folder
      depends on its options and version: no input is safe in it);
    * ``same-output``: two options writing one path (the second would replace the first);
    * ``unwritable-output`` / ``output-is-directory``: a path no output can have (a NUL, a name too long, a file
      where a folder is needed, a folder where a file is): said now, not after a long solve or replay.

    Nothing is written here, so a refused command leaves every file as it was.
    """
    given = [(option, path) for option, path in outputs.items() if path is not None]
    sources = [path for path in inputs if path is not None]
    problems: list[Problem] = []
    for k, (option, path) in enumerate(given):
        folder = option in replaced or option in folders
        problem = next((p for s in sources if (p := _input_problem(option, path, s, folder)) is not None), None)
        if problem is None and (reason := unwritable_reason(path, folder)) is not None:
            problem = Problem(reason[0], option, reason[1])
        if problem is not None:
            problems.append(problem)
        for other, earlier in given[:k]:
            if same_path(path, earlier):
                problems.append(Problem(SAME_OUTPUT, option, f"{path} is also {other}'s output; choose another path"))
    if problems:
        raise InputError("options", problems)
