"""Reading input files with clear errors and writing files atomically (temp file + rename).

Every failure to read an input becomes an :class:`~planner.contracts.problems.InputError` naming the file:

==================  ====================================================================
code                meaning
==================  ====================================================================
unreadable          the file cannot be opened or read (missing, a folder, no permission)
too-large           the file is larger than :data:`MAX_INPUT_BYTES`
not-utf8            the file is not UTF-8 text (the message gives the byte offset)
bad-json            a JSON syntax error (the path gives line and column)
too-deep            JSON nested deeper than the parser can follow
duplicate-key       an object gives the same key twice (JSON would silently keep the last)
not-finite          a number is NaN or infinite (Python's json accepts them)
==================  ====================================================================

One atomic writer (:func:`write_bytes_atomic`, with :func:`write_text_atomic` and :func:`write_json_atomic`
over it) serves every file written whole from text or bytes: command outputs, the replay's journal, the agent's
node setting files and the emulated cluster's state alike. A file that cannot be written becomes an
:class:`~planner.contracts.problems.InputError` naming the path given (``output-is-directory`` or
``unwritable-output``), never the temporary file.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from wattplan.planner.contracts.problems import InputError, Problem, capped, format_path

MAX_INPUT_BYTES = 512 * 1024 * 1024
"""Largest input file (instance, plan, trace, node map) read, in bytes: far above any real round."""

_BOM = "\ufeff"
_FILE = "(file)"

JsonPath = tuple[str | int, ...]


def _read_bytes(path: Path) -> bytes:
    """The bytes of ``path``, at most :data:`MAX_INPUT_BYTES` (also for pipes and devices, whose size is unknown)."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_INPUT_BYTES:
                raise _too_large(path)
            # Never ask for MAX_INPUT_BYTES at once: read() reserves what it is asked for, which fails
            # under a memory cap. A regular file is read at its size (+1 to see growth), a pipe in chunks.
            data = fh.read(size + 1) if size > 0 else _read_chunks(fh)
    except OSError as exc:
        raise InputError(str(path), [Problem("unreadable", _FILE, exc.strerror or str(exc))]) from None
    if len(data) > MAX_INPUT_BYTES:
        raise _too_large(path)
    return data


def _read_chunks(fh: BinaryIO) -> bytes:
    """Up to ``MAX_INPUT_BYTES + 1`` bytes of a stream of unknown size, 1 MiB at a time."""
    parts: list[bytes] = []
    total = 0
    while total <= MAX_INPUT_BYTES:
        chunk = fh.read(min(1 << 20, MAX_INPUT_BYTES + 1 - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)


def _too_large(path: Path) -> InputError:
    limit_mib = MAX_INPUT_BYTES // (1024 * 1024)
    return InputError(str(path), [Problem("too-large", _FILE, f"the file is larger than {limit_mib} MiB")])


def _decode_utf8(data: bytes, path: Path) -> str:
    """``data`` as text (a leading byte-order mark dropped); invalid UTF-8 is a ``not-utf8`` problem."""
    try:
        return data.decode("utf-8").removeprefix(_BOM)
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, data, exc, 0, 1) from None


def _not_utf8(path: Path, data: bytes, exc: UnicodeDecodeError, offset: int, first_line: int) -> InputError:
    """The ``not-utf8`` error of ``data``, which starts at byte ``offset`` and line ``first_line`` of the file."""
    line = first_line + data.count(b"\n", 0, exc.start)
    message = f"not UTF-8 text: byte offset {offset + exc.start} ({exc.reason}); is this a binary file?"
    return InputError(str(path), [Problem("not-utf8", f"line {line}", message)])


def line_blocks(path: Path, block_bytes: int = 16 * 2**20) -> Iterator[tuple[int, bytes]]:
    r"""``(first line number, block)`` of ``path`` read block by block, each block whole lines of UTF-8 text.

    Memory stays near ``block_bytes`` whatever the file's size (a large log is never held whole). Each
    block but the last ends with ``\n``; a line longer than a block is joined to the next read. A leading
    byte-order mark is dropped. The file's total size is limited to :data:`MAX_INPUT_BYTES`; unreadable,
    oversized and non-UTF-8 files are :class:`InputError` as in :func:`read_text` (raised when reached).
    """
    bom = _BOM.encode()
    total = 0  # bytes read
    start = 0  # the file offset of the first byte not yet yielded
    line = 1
    carry = b""
    try:
        with open(path, "rb") as fh:
            while True:
                chunk = fh.read(block_bytes)
                total += len(chunk)
                if total > MAX_INPUT_BYTES:
                    raise _too_large(path)
                data = carry + chunk
                if start == 0 and data.startswith(bom):
                    data, start = data[len(bom) :], len(bom)
                cut = data.rfind(b"\n") + 1 if chunk else len(data)
                block, carry = data[:cut], data[cut:]
                if block:
                    try:
                        block.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise _not_utf8(path, block, exc, start, line) from None
                    yield line, block
                    line += block.count(b"\n")
                    start += len(block)
                if not chunk:
                    return
    except OSError as exc:
        raise InputError(str(path), [Problem("unreadable", _FILE, exc.strerror or str(exc))]) from None


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``; unreadable, oversized and non-UTF-8 files become :class:`InputError`."""
    path = Path(path)
    return _decode_utf8(_read_bytes(path), path)


class _DuplicateKeys:
    """An ``object_pairs_hook`` for :func:`json.loads` that remembers the objects that repeat a key.

    It keeps a reference to each such object, so no object id is reused while the document is checked.
    """

    def __init__(self) -> None:
        self.found: dict[int, tuple[dict[str, Any], list[tuple[str, int]]]] = {}

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            repeated = [(key, n) for key, n in Counter(key for key, _ in pairs).items() if n > 1]
            self.found[id(obj)] = (obj, repeated)
        return obj


def _walk(doc: Any) -> Iterator[tuple[JsonPath, Any]]:
    """Every value of a parsed document with its path, parents first (iterative: any depth)."""
    stack: list[tuple[JsonPath, Any]] = [((), doc)]
    while stack:
        path, value = stack.pop()
        yield path, value
        if isinstance(value, dict):
            stack.extend(((*path, str(k)), v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(value))))


def _duplicate_key_problems(doc: Any, hook: _DuplicateKeys) -> list[Problem]:
    """One ``duplicate-key`` problem per key that an object of ``doc`` gives more than once."""
    return capped(
        Problem("duplicate-key", format_path((*path, key)), f"key {key!r} is given {n} times; give it once")
        for path, value in _walk(doc)
        if isinstance(value, dict) and id(value) in hook.found and hook.found[id(value)][0] is value
        for key, n in hook.found[id(value)][1]
    )


def parse_json_text(text: str, source: str) -> Any:
    """Parse JSON ``text`` read from ``source``; syntax errors and repeated keys become :class:`InputError`."""
    hook = _DuplicateKeys()
    try:
        doc = json.loads(text, object_pairs_hook=hook)
    except json.JSONDecodeError as exc:
        raise InputError(source, [Problem("bad-json", f"line {exc.lineno} column {exc.colno}", exc.msg)]) from None
    except RecursionError:
        raise InputError(source, [Problem("too-deep", _FILE, "arrays and objects are nested too deeply")]) from None
    except ValueError as exc:  # an integer of more than 4300 digits (Python's limit)
        reason = str(exc).split(":", 1)[0]
        raise InputError(source, [Problem("bad-json", _FILE, f"a number cannot be read: {reason}")]) from None
    if hook.found:
        raise InputError(source, _duplicate_key_problems(doc, hook))
    return doc


def read_json(path: Path) -> Any:
    """Parse ``path`` as JSON; unreadable, oversized, non-UTF-8 and malformed files become :class:`InputError`.

    Malformed includes an object that gives a key twice: every such key is reported with its path.
    """
    return parse_json_text(read_text(Path(path)), str(path))


def non_finite_numbers(doc: Any, path: JsonPath = ()) -> list[Problem]:
    """Every NaN or infinite number in a parsed document (Python's json accepts them)."""
    return capped(
        Problem("not-finite", format_path((*path, *where)), f"{value} is not a finite number")
        for where, value in _walk(doc)
        if isinstance(value, float) and not math.isfinite(value)
    )


def _unwritable(path: Path, code: str, message: str) -> InputError:
    return InputError(str(path), [Problem(code, _FILE, message)])


def _check_output_path(path: Path) -> None:
    """Refuse an output path that is a folder, before any temporary file is made."""
    if path.is_dir():
        raise _unwritable(path, "output-is-directory", f"{path} is a folder; give a file name for the output")


def write_text_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """Write ``text`` (UTF-8) to ``path`` so readers see the old file or the new one, never half.

    The one atomic text writer of the project: every command's outputs, the agent's node setting files, the
    emulated cluster's state (:func:`write_bytes_atomic` says how).
    """
    write_bytes_atomic(path, text.encode("utf-8"), durable=durable)


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the new one, never half.

    Writes a temporary file in the target directory (its parents are made), flushes it to disk when
    ``durable``, gives it mode 0644 (outputs are shared files; ``mkstemp`` makes 0600), then renames it over
    ``path`` (``os.replace`` is atomic on POSIX within one file system). ``durable=False`` skips the
    ``fsync``: for state rewritten several times a second (the emulated cluster's counters, rates and trainer
    progress), which a crash may lose but never tear. An existing ``path`` that is neither a regular file nor
    a folder (``/dev/null``, ``/dev/stdout``, a named pipe) is written in place instead: replacing it would
    remove the device or pipe. A path that cannot be written raises :class:`InputError` naming ``path``
    (``output-is-directory`` or ``unwritable-output``); no temporary file is left behind.
    """
    path = Path(path)
    _check_output_path(path)
    try:
        if path.exists() and not path.is_file():
            _write_in_place(path, data)
        else:
            _replace_atomically(path, data, durable)
    except OSError as exc:
        _check_output_path(path)
        raise _unwritable(path, "unwritable-output", f"cannot write {path}: {_why_unwritable(path, exc)}") from None


def _why_unwritable(path: Path, exc: OSError) -> str:
    """The reason ``path`` could not be written, in words about ``path`` (never the temporary file)."""
    for parent in path.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                return f"{parent} is not a folder"
            break
    return exc.strerror or type(exc).__name__


def _write_in_place(path: Path, data: bytes) -> None:
    """Write ``data`` into an existing device or pipe."""
    with open(path, "wb") as fh:
        fh.write(data)


def _replace_atomically(path: Path, data: bytes, durable: bool) -> None:
    """Write a temporary file next to ``path`` (on disk when ``durable``), then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; outputs are shared files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, doc: Any, *, durable: bool = True) -> None:
    """Serialise ``doc`` (finite numbers only: ValueError otherwise) and write it with :func:`write_text_atomic`."""
    write_text_atomic(path, json.dumps(doc, indent=1, allow_nan=False) + "\n", durable=durable)
