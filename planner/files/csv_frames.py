r"""Strict CSV reading through pandas: every cell as text, every record one line, every fault at its line.

pandas' C parser is fast but lenient where a strict reader must not be: a quote closed lines
later silently swallows the lines between into one field, a short row is padded with empty
cells, a long row stops the whole read (or is skipped), blank lines shift row numbers, and a
byte-order mark at the start of the data is dropped. So the lines
are classified first, on the bytes with numpy, and pandas only tokenizes the lines that are
plain and whole:

* a line is ended by ``\n``, ``\r\n`` or ``\r`` (as Python's ``csv`` module reads a file
  opened with ``newline=""``); lines are numbered from 1; a blank line (no character at all)
  is no record (a line of spaces is: one cell of spaces);
* the header is the first non-blank line; its cells are read with the ``csv`` module (they
  may be quoted);
* a *plain* line (no ``"`` and no NUL) has ``commas + 1`` cells; it is a row when that is the
  header's count, otherwise a ``columns`` issue;
* a line whose every cell is either free of quotes or quoted whole (``"a, b"``, ``"x ""y"" z"``),
  with the header's count of cells, is read by pandas too (it reads such a line as the ``csv``
  module does);
* any other line holding a ``"`` or a NUL byte is read with Python's ``csv`` module in strict mode,
  exactly as before pandas (Python 3.11's module keeps a NUL in its cell, so the cell's own
  check refuses it): a record that ends on a later line (a quote closed there) is a
  ``spans-lines`` issue covering its lines, a record the module refuses (a quote left open
  to the end of the file, text after a closing quote) is a ``not-csv`` issue and
  reading stops there (the lines after it are not read), a whole quoted record of the wrong
  width is a ``columns`` issue, and a good one is a row;
* the plain rows are read by ``pd.read_csv`` (C engine, ``dtype=object``, no NA conversion),
  which then sees only well-formed lines; the row count is checked against the lines fed.
  They are read :data:`CHUNK_ROWS` at a time (:meth:`CsvFrame.chunks`), the quoted rows put
  among them in line order, so only one chunk's cell text is in memory at once: memory is the
  file's bytes, a few integers per line, and one chunk.

The cost is linear: a few numpy passes over the bytes and one pandas read; a line with a quote
costs one regular-expression match, and only the irregular ones (and NUL bytes) go through
the ``csv`` module one by one.

Column helpers turn text cells into numbers and times vectorised, with a mask of the cells
they could take (:func:`decimals`, :func:`iso_times`); a cell outside the mask is left to the
caller's per-cell check, which names the row, the column and the reason.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from wattplan.planner.contracts.jsonio import read_text
from wattplan.planner.contracts.problems import InputError, Problem

IssueKind = Literal["columns", "spans-lines", "not-csv"]
"""What is wrong with a record that is not a row: its cell count, its extent, or its syntax."""

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

_LF, _CR, _COMMA, _QUOTE, _NUL = 10, 13, 44, 34, 0

CHUNK_ROWS: Final = 200_000
"""Rows a chunk of :meth:`CsvFrame.chunks` holds by default: about 15-30 MB of cell text."""
_BOM: Final = "\ufeff".encode()


@dataclass(frozen=True, slots=True)
class RowIssue:
    """A record that is not a usable row.

    ``line`` is the line it starts on; ``at`` the line where the fault was found (the last line
    of a ``spans-lines`` record; for ``not-csv`` the line the ``csv`` module stopped on, or the
    record's first line when the file ended inside it); ``cells`` the cell count of a
    ``columns`` record (0 otherwise); ``message`` says what is wrong.
    """

    line: int
    kind: IssueKind
    message: str
    at: int
    cells: int = 0


@dataclass(frozen=True)
class _Lines:
    """The lines of a byte string: content ``[start, end)``, and ``next`` where the following line starts."""

    start: IntArray
    end: IntArray
    next: IntArray

    def __len__(self) -> int:
        return len(self.start)


@dataclass(frozen=True)
class CsvChunk:
    """Consecutive usable rows of a CSV file, as text.

    ``cells`` has one column per header cell, labelled ``0 .. n-1`` (header names may repeat),
    every cell a ``str`` as written (not stripped), one row per usable record in file order;
    ``lines`` is each row's line and ``records`` its position among the data records (from 0,
    counting the records that are issues too, not blank lines).
    """

    cells: pd.DataFrame
    lines: IntArray
    records: IntArray


@dataclass(frozen=True)
class _Source:
    """What :meth:`CsvFrame.chunks` reads: the bytes, their lines, the plain rows' lines, the quoted rows."""

    data: bytes
    lines: _Lines
    take: IntArray
    quoted: list[tuple[int, list[str]]]
    ordinal: IntArray


@dataclass(frozen=True)
class CsvFrame:
    """A CSV file read strictly: its header, the records that are not rows, and its rows in chunks.

    ``header`` is ``None`` for a file with no non-blank line, or when the header record is not
    CSV (``header_issue`` says why); ``header_line`` is the header's line (0 when none);
    ``width`` the header's cell count. ``issues`` are in line order; a ``not-csv`` issue, if
    any, is the last: nothing after it was read. ``row_count`` rows are usable; they are read
    as text by :meth:`chunks` (bounded memory: the text of one chunk at a time) or :meth:`whole`.
    """

    source: str
    header: tuple[str, ...] | None
    header_line: int
    header_issue: str
    issues: tuple[RowIssue, ...]
    width: int = 0
    row_count: int = 0
    _rows: _Source | None = None

    def chunks(self, rows: int = CHUNK_ROWS) -> Iterator[CsvChunk]:
        """The usable rows, at most ``rows`` (>= 1) a chunk, in file order.

        Raises :class:`~planner.contracts.problems.InputError` (``not-csv``, naming the line pandas names)
        if pandas refuses a line this module passed as plain (none is known).
        """
        if self._rows is None or not self.row_count:
            return
        try:
            yield from _chunks(self._rows, self.width, max(1, rows))
        except (pd.errors.ParserError, _Miscount) as exc:
            found = re.search(r"line (\d+)", str(exc))
            where = f"line {found.group(1)}" if found else "(file)"
            raise InputError(self.source, [Problem("not-csv", where, f"not CSV: {exc}")]) from None

    def whole(self) -> CsvChunk:
        """Every usable row in one chunk (the text of the whole file in memory at once)."""
        for chunk in self.chunks(max(1, self.row_count)):
            return chunk
        empty = pd.DataFrame({c: pd.Series([], dtype=object) for c in range(self.width)})
        none = np.zeros(0, dtype=np.int64)
        return CsvChunk(empty, none, none)


def _split_lines(buf: npt.NDArray[np.uint8]) -> _Lines:
    r"""The lines of ``buf`` ended by ``\n``, ``\r\n`` or a lone ``\r``; no empty line after a final break."""
    size = buf.size
    lf = np.flatnonzero(buf == _LF)
    cr = np.flatnonzero(buf == _CR)
    if cr.size:
        after = cr + 1
        crlf = np.zeros(cr.size, dtype=bool)
        inside = after < size
        crlf[inside] = buf[after[inside]] == _LF
        lone_cr = cr[~crlf]
        lf_start = lf.copy()
        if lf.size:
            preceded = lf > 0
            lf_start[preceded] = np.where(buf[lf[preceded] - 1] == _CR, lf[preceded] - 1, lf[preceded])
        starts = np.concatenate([lf_start, lone_cr])
        ends = np.concatenate([lf + 1, lone_cr + 1])
        order = np.argsort(starts, kind="stable")
        term_start, term_end = starts[order], ends[order]
    else:
        term_start, term_end = lf, lf + 1
    line_start = np.concatenate([np.zeros(1, dtype=np.int64), term_end]).astype(np.int64)
    line_end = np.concatenate([term_start, np.array([size])]).astype(np.int64)
    line_next = np.concatenate([term_end, np.array([size])]).astype(np.int64)
    if line_start[-1] >= size:  # the text ends with a line break: no line after it
        line_start, line_end, line_next = line_start[:-1], line_end[:-1], line_next[:-1]
    return _Lines(line_start, line_end, line_next)


def _count_per_line(buf: npt.NDArray[np.uint8], lines: _Lines, byte: int) -> IntArray:
    """How many times ``byte`` (never a line break) occurs in each line."""
    where = np.flatnonzero(buf == byte)
    if not where.size:
        return np.zeros(len(lines), dtype=np.int64)
    owner = np.searchsorted(lines.start, where, side="right") - 1
    return np.bincount(owner, minlength=len(lines)).astype(np.int64)


class _LineText:
    """Decoded lines of the file, with their breaks, from a given line on (what ``csv.reader`` reads)."""

    def __init__(self, data: bytes, lines: _Lines):
        self._data = data
        self._lines = lines

    def from_line(self, index: int) -> Iterator[str]:
        """Line ``index`` (from 0) and every line after it, each with its line break."""
        start, following = self._lines.start, self._lines.next
        for k in range(index, len(start)):
            yield self._data[start[k] : following[k]].decode("utf-8")


def _csv_record(text: _LineText, index: int) -> tuple[list[str] | None, int, str]:
    """The record starting on line ``index`` read strictly by the ``csv`` module.

    Returns ``(cells, lines read, "")``, or ``(None, lines read, error)`` where the module refused it
    (``lines read`` is 0 when the file ended inside the record).
    """
    reader = csv.reader(text.from_line(index), strict=True)
    try:
        cells = next(reader)
    except csv.Error as exc:
        return None, 0 if "end of data" in str(exc) else reader.line_num, str(exc)
    return cells, reader.line_num, ""


def _why(error: str) -> str:
    """A ``csv`` module error put in words for a message."""
    if "end of data" in error:
        return "not CSV: a quote left open runs to the end of the file"
    if "NUL" in error:
        return "not CSV: the line contains a NUL byte"
    return f"not CSV: {error} (a broken quote?)"


class _Spans(io.RawIOBase):
    """A binary stream of the spans ``[start, stop)`` of ``data``, one after another, without joining them."""

    def __init__(self, parts: list[memoryview]):
        super().__init__()
        self._parts = [p for p in parts if len(p)]
        self._index = 0
        self._offset = 0

    def readable(self) -> bool:
        """Always: a stream to read."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Copy the next bytes into ``buffer``; 0 at the end."""
        if self._index >= len(self._parts):
            return 0
        part = self._parts[self._index]
        count = min(len(buffer), len(part) - self._offset)
        memoryview(buffer).cast("B")[:count] = part[self._offset : self._offset + count]
        self._offset += count
        if self._offset == len(part):
            self._index, self._offset = self._index + 1, 0
        return count


class _Miscount(RuntimeError):
    """pandas read another number of rows than the plain lines it was given."""


def _plain_frames(data: bytes, lines: _Lines, take: IntArray, width: int, rows: int) -> Iterator[pd.DataFrame]:
    """The cells of lines ``take`` (plain, ``width`` cells each) read by pandas' C parser as text, ``rows`` at a time.

    pandas reads the lines' bytes in place (a stream over runs of consecutive lines), not a copy.
    """
    if not take.size:
        return
    breaks = np.flatnonzero(np.diff(take) != 1)  # runs of consecutive lines: one span each
    run_first = np.concatenate([take[:1], take[breaks + 1]])
    run_last = np.concatenate([take[breaks], take[-1:]])
    view = memoryview(data)
    parts = [view[a:b] for a, b in zip(lines.start[run_first].tolist(), lines.next[run_last].tolist(), strict=True)]
    lead = 0
    if bytes(parts[0][: len(_BOM)]) == _BOM:  # pandas drops a byte-order mark at the start: feed a line before it
        parts.insert(0, memoryview(b",".join([b"x"] * width) + b"\n"))
        lead = 1
    reader = pd.read_csv(
        io.BufferedReader(_Spans(parts), buffer_size=1 << 20),
        header=None,
        names=list(range(width)),
        dtype=object,
        na_filter=False,
        keep_default_na=False,
        quoting=csv.QUOTE_MINIMAL,
        skip_blank_lines=False,
        engine="c",
        encoding="utf-8",
        chunksize=rows,
    )
    seen = 0
    with reader:
        for frame in reader:
            if lead:
                frame, lead = frame.iloc[lead:], 0
            seen += len(frame)
            if seen > take.size:
                break
            yield frame.reset_index(drop=True)
    if seen != take.size:
        raise _Miscount(f"pandas read {seen} rows from {take.size} plain lines")


def _chunks(source: _Source, width: int, rows: int) -> Iterator[CsvChunk]:
    """The plain rows ``rows`` at a time, each chunk with the quoted rows among its lines, in line order."""
    quoted = source.quoted
    q = 0
    done = 0
    for frame in _plain_frames(source.data, source.lines, source.take, width, rows):
        row_lines = source.take[done : done + len(frame)]
        done += len(frame)
        bound = int(source.take[done]) if done < source.take.size else len(source.lines)
        q_end = q
        while q_end < len(quoted) and quoted[q_end][0] < bound:
            q_end += 1
        if q_end > q:
            frame, row_lines = _with_quoted(frame, row_lines, quoted[q:q_end], width)
            q = q_end
        yield CsvChunk(frame, (row_lines + 1).astype(np.int64), source.ordinal[row_lines].astype(np.int64))
    if q < len(quoted):  # no plain row at all
        empty = pd.DataFrame({c: pd.Series([], dtype=object) for c in range(width)})
        frame, row_lines = _with_quoted(empty, np.zeros(0, dtype=np.int64), quoted[q:], width)
        yield CsvChunk(frame, (row_lines + 1).astype(np.int64), source.ordinal[row_lines].astype(np.int64))


def _with_quoted(
    frame: pd.DataFrame, row_lines: IntArray, quoted: list[tuple[int, list[str]]], width: int
) -> tuple[pd.DataFrame, IntArray]:
    """``frame`` (rows on ``row_lines``) with the ``quoted`` rows put in line order."""
    extra = pd.DataFrame([cells for _, cells in quoted], columns=list(range(width)), dtype=object)
    merged = pd.concat([frame, extra], ignore_index=True)
    all_lines = np.concatenate([row_lines, np.array([k for k, _ in quoted], dtype=np.int64)])
    order = np.argsort(all_lines, kind="stable")
    return merged.iloc[order].reset_index(drop=True), all_lines[order]


def _simple_quoted(width: int) -> re.Pattern[bytes]:
    """A line of ``width`` cells, each unquoted without a quote, or quoted whole with ``""`` for a quote.

    On such a line pandas' C parser (``QUOTE_MINIMAL``) and the ``csv`` module in strict mode
    give the same cells; any other line with a quote is read by the ``csv`` module.
    """
    cell = rb'(?:"(?:[^"\r\n\x00]|"")*"|[^",\r\n\x00]*)'
    return re.compile(cell + rb"(?:," + cell + rb"){" + str(width - 1).encode() + rb"}")


def parse_csv_frame(data: bytes, source: str = "(data)") -> CsvFrame:
    """``data`` (UTF-8, no byte-order mark) read strictly; see the module's rules. ``source`` names it in errors."""
    buf = np.frombuffer(data, dtype=np.uint8)
    lines = _split_lines(buf)
    blank = lines.end == lines.start
    text = _LineText(data, lines)
    nonblank = np.flatnonzero(~blank)
    if not nonblank.size:
        return CsvFrame(source, None, 0, "", ())
    head = int(nonblank[0])
    header, used, error = _csv_record(text, head)
    if header is None or used != 1:
        why = _why(error) if header is None else "the header record runs over several lines"
        return CsvFrame(source, None, head + 1, why, ())
    width = len(header)
    commas = _count_per_line(buf, lines, _COMMA)
    special = (_count_per_line(buf, lines, _QUOTE) > 0) | (_count_per_line(buf, lines, _NUL) > 0)
    data_line = ~blank
    data_line[: head + 1] = False
    stop = len(lines)
    continuation = np.zeros(len(lines), dtype=bool)  # lines inside a record that started earlier
    issues: list[RowIssue] = []
    quoted_rows: list[tuple[int, list[str]]] = []
    simple = np.zeros(len(lines), dtype=bool)  # quoted lines pandas reads as the csv module would
    whole_line = _simple_quoted(width)
    starts, ends = lines.start.tolist(), lines.end.tolist()
    for k in np.flatnonzero(special & data_line).tolist():
        if continuation[k]:
            continue
        if whole_line.fullmatch(data, starts[k], ends[k]):
            simple[k] = True
            continue
        cells, used, error = _csv_record(text, k)
        if cells is None:
            issues.append(RowIssue(k + 1, "not-csv", _why(error), k + used if used else k + 1))
            stop = k
            break
        if used > 1:
            continuation[k + 1 : k + used] = True
            message = f"a quoted field runs from line {k + 1} to line {k + used}: a quote left open?"
            issues.append(RowIssue(k + 1, "spans-lines", message, k + used))
        elif len(cells) != width:
            message = f"{len(cells)} cells, the header has {width}"
            issues.append(RowIssue(k + 1, "columns", message, k + 1, len(cells)))
        else:
            quoted_rows.append((k, cells))
    data_line[stop:] = False
    record = data_line & ~continuation
    plain = record & ~special
    wrong = plain & (commas + 1 != width)
    for k in np.flatnonzero(wrong).tolist():
        cells_count = int(commas[k]) + 1
        issues.append(RowIssue(k + 1, "columns", f"{cells_count} cells, the header has {width}", k + 1, cells_count))
    take = np.flatnonzero((plain & ~wrong) | (simple & data_line)).astype(np.int64)
    ordinal = (np.cumsum(record) - 1).astype(np.int64)
    issues.sort(key=lambda issue: issue.line)
    rows = _Source(data, lines, take, quoted_rows, ordinal)
    return CsvFrame(source, tuple(header), head + 1, "", tuple(issues), width, take.size + len(quoted_rows), rows)


def repeated_columns(header: tuple[str, ...] | list[str]) -> list[tuple[str, int, int]]:
    """``(name, first, again)`` for each header cell whose name (stripped) an earlier cell has; columns from 1.

    A reader that looks columns up by name would take one copy silently (the last, in a ``dict``): a job list
    with ``power_cap_kw`` twice planned at the second value. Readers refuse such a header with this list.
    Empty names are not compared (a header may end with empty cells).
    """
    first: dict[str, int] = {}
    out = []
    for k, cell in enumerate(header, start=1):
        name = cell.strip()
        if not name:
            continue
        if name in first:
            out.append((name, first[name], k))
        else:
            first[name] = k
    return out


def read_csv_frame(path: Path) -> CsvFrame:
    """The CSV file ``path`` read strictly (:func:`parse_csv_frame`) after :func:`~planner.contracts.jsonio.read_text`.

    Raises :class:`~planner.contracts.problems.InputError` naming ``path`` for a file that cannot be read,
    is too large or is not UTF-8 (codes ``unreadable``, ``too-large``, ``not-utf8``).
    """
    return parse_csv_frame(read_text(Path(path)).encode("utf-8"), str(path))


# -- cells to values -------------------------------------------------------------------------------

DECIMAL: Final = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A plain decimal number in ASCII digits: no unit suffix (``10s``, ``5 kW``), no ``_``, no other scripts' digits."""

_WHOLE_SHORT: Final = re.compile(r"[+-]?[0-9]{1,18}")
"""A whole number that fits in 64 bits, in ASCII digits."""

_ISO_DATE: Final = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_ISO_TIME: Final = r"[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,6})?)?"
_ISO_NAIVE: Final = re.compile(f"{_ISO_DATE}(?:{_ISO_TIME})?")
"""The naive ISO 8601 forms read vectorised: ``YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]]``."""

_ISO_ZONED: Final = re.compile(f"{_ISO_DATE}{_ISO_TIME}(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")
"""The zoned ISO 8601 forms read vectorised: a naive form with a time, then ``Z`` or ``+HH:MM``/``-HH:MM``."""

_EPOCH = datetime(1970, 1, 1)
_US = timedelta(microseconds=1)
_US_SAFE = ((datetime(2, 1, 1) - _EPOCH) // _US, (datetime(9999, 1, 1) - _EPOCH) // _US)
"""Microseconds since 1970 read vectorised: years 2-9998 (at years 1 and 9999 a zone can leave the range)."""


def _matches(pattern: re.Pattern[str], values: npt.NDArray[np.object_]) -> BoolArray:
    """Where ``pattern`` matches the whole of each ``str`` in ``values``."""
    return np.fromiter(map(bool, map(pattern.fullmatch, values)), dtype=bool, count=len(values))


def texts_of(column: pd.Series) -> npt.NDArray[np.object_]:
    """The cells of a :attr:`CsvFrame.cells` column as an object array of ``str``."""
    return column.to_numpy(dtype=object)


def blank_cells(texts: npt.NDArray[np.object_]) -> BoolArray:
    """Where a cell is empty or white space only (``not text.strip()``)."""
    return (texts == "") | np.fromiter(map(str.isspace, texts), dtype=bool, count=len(texts))


def decimals(texts: npt.NDArray[np.object_], most: float = np.inf) -> tuple[FloatArray, BoolArray]:
    """``(values, ok)``: ``ok`` where a cell is exactly :data:`DECIMAL` text of a finite float <= ``most``.

    ``values`` is ``float(text)`` (Python's correctly rounded parse) where ``ok``, NaN elsewhere.
    A cell with white space around it is not ``ok``: the caller's per-cell check reads it.
    """
    ok = _matches(DECIMAL, texts)
    values = np.full(len(texts), np.nan)
    if ok.any():
        values[ok] = texts[ok].astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok &= np.isfinite(values) & (values <= most)
    return values, ok


def whole_numbers(texts: npt.NDArray[np.object_]) -> tuple[IntArray, BoolArray]:
    """``(values, ok)``: ``ok`` where a cell is exactly 1-18 ASCII digits with an optional sign (fits 64 bits)."""
    ok = _matches(_WHOLE_SHORT, texts)
    values = np.zeros(len(texts), dtype=np.int64)
    if ok.any():
        values[ok] = np.fromiter(map(int, texts[ok]), dtype=np.int64, count=int(ok.sum()))
    return values, ok


def iso_times(texts: npt.NDArray[np.object_]) -> tuple[IntArray, BoolArray, BoolArray]:
    """``(micros, ok, zoned)`` of cells in the plain ISO 8601 forms (:data:`_ISO_NAIVE`, :data:`_ISO_ZONED`).

    ``micros`` is the time in microseconds since 1970-01-01 00:00: a zoned time taken to UTC, a
    naive one as written; ``ok`` where the cell is exactly such a time and it exists (years
    2-9998, where ``datetime.fromisoformat`` reads it to the same instant); ``zoned`` where it
    names a zone. Other cells (other ISO forms, white space around, errors) are not ``ok``: the
    caller reads them with ``datetime.fromisoformat``.
    """
    zoned = _matches(_ISO_ZONED, texts)
    simple = zoned | _matches(_ISO_NAIVE, texts)
    micros = np.zeros(len(texts), dtype=np.int64)
    ok = np.zeros(len(texts), dtype=bool)
    if simple.any():
        parsed = pd.to_datetime(pd.Series(texts[simple], dtype=object), format="ISO8601", utc=True, errors="coerce")
        got = parsed.dt.tz_convert(None).astype("datetime64[us]").to_numpy()
        valid = ~np.isnat(got)
        values = got.astype(np.int64)
        valid &= (values >= _US_SAFE[0]) & (values < _US_SAFE[1])
        micros[simple] = np.where(valid, values, 0)
        ok[simple] = valid
    return micros, ok, zoned & ok
