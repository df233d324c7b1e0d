"""Strict CSV reading through pandas: each leniency of pandas' C parser stays an issue naming its line."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest

from wattplan.planner.contracts.problems import InputError
from wattplan.planner.files.csv_frames import (
    decimals,
    iso_times,
    parse_csv_frame,
    read_csv_frame,
    repeated_columns,
    whole_numbers,
)


def issues(data: bytes) -> list[tuple[int, str, int]]:
    """``(line, kind, at)`` of every issue of ``data``."""
    return [(i.line, i.kind, i.at) for i in parse_csv_frame(data).issues]


def test_rows_lines_and_record_positions() -> None:
    frame = parse_csv_frame(b"\n\na,b\r\n1,2\r3,4\r\n\r\n  \n5,6")
    assert (frame.header, frame.header_line) == (("a", "b"), 3)
    assert frame.whole().cells.values.tolist() == [["1", "2"], ["3", "4"], ["5", "6"]]
    assert frame.whole().lines.tolist() == [4, 5, 8]
    assert frame.whole().records.tolist() == [
        0,
        1,
        3,
    ]  # the line of spaces is a record (of one cell), blank lines are not
    assert issues(b"\n\na,b\r\n1,2\r3,4\r\n\r\n  \n5,6") == [(7, "columns", 7)]


def test_short_and_long_rows_are_issues_not_padded_or_fatal() -> None:
    frame = parse_csv_frame(b"a,b,c\n1,2\n1,2,3,4\n1,2,3\n")
    assert [(i.line, i.kind, i.cells) for i in frame.issues] == [(2, "columns", 2), (3, "columns", 4)]
    assert frame.whole().cells.values.tolist() == [["1", "2", "3"]] and frame.whole().lines.tolist() == [4]


def test_quotes_are_read_by_the_csv_module_strictly() -> None:
    frame = parse_csv_frame(b'a,b\n"x,y","say ""hi"""\n1,2\n')
    assert frame.whole().cells.values.tolist() == [["x,y", 'say "hi"'], ["1", "2"]]
    assert issues(b'a,b\n1,"2\n3",4\n5,6\n') == [(2, "spans-lines", 3)]
    assert parse_csv_frame(b'a,b\n1,"2\n3",4\n5,6\n').whole().lines.tolist() == [4]
    # a quote left open, or text after a closing quote: reading stops there
    assert issues(b'a,b\n1,"2\n3,4\n') == [(2, "not-csv", 2)]
    frame = parse_csv_frame(b'a,b\n1,2\n1,"2"x\n1,,\n5,6\n')
    assert [(i.line, i.kind) for i in frame.issues] == [(3, "not-csv")] and frame.whole().lines.tolist() == [2]


def test_quoted_lines_read_by_pandas_give_the_csv_module_cells() -> None:
    lines = ['"a, b",""', '"x ""y"" z",1', ' "s",2', 'q"r,3', '"",""', '"1\x002",4']
    frame = parse_csv_frame(("h,k\n" + "\n".join(lines) + "\n").encode())
    expected = [row for row in csv.reader(io.StringIO("\n".join(lines) + "\n"), strict=True)]
    assert frame.whole().cells.values.tolist() == expected and frame.issues == ()
    assert [(i.line, i.kind) for i in parse_csv_frame(b'h,k\n"s" ,1\n1,2\n').issues] == [(2, "not-csv")]


def test_chunks_hold_the_quoted_rows_in_line_order() -> None:
    # 'q"1' (a quote inside an unquoted cell) is read by the csv module, '"q"' by pandas
    data = b'a,b\nq"1,1\n2,2\n3,3\nq"4,4\n"q",5\n6,6\n7,7\nq"8,8\n'
    frame = parse_csv_frame(data)
    whole = frame.whole()
    assert frame.row_count == 8 and whole.lines.tolist() == list(range(2, 10))
    for size in (1, 2, 3, 100):
        chunks = list(frame.chunks(size))
        assert [c.lines.tolist() for c in chunks][0][0] == 2
        assert sum((c.lines.tolist() for c in chunks), []) == whole.lines.tolist()
        assert sum((c.cells.values.tolist() for c in chunks), []) == whole.cells.values.tolist()
    assert whole.cells[1].tolist() == [str(n) for n in range(1, 9)]
    assert whole.cells[0].tolist() == ['q"1', "2", "3", 'q"4', "q", "6", "7", 'q"8']
    only_quoted = parse_csv_frame(b'a\nx"\ny"\n')
    assert [c.cells[0].tolist() for c in only_quoted.chunks(1)] == [['x"', 'y"']]


def test_nul_and_byte_order_mark_stay_in_their_cells() -> None:
    frame = parse_csv_frame("a,b\n\ufeff1,2\x00\n".encode())
    assert frame.whole().cells.values.tolist() == [["\ufeff1", "2\x00"]]


def test_header_problems_and_empty_files() -> None:
    assert parse_csv_frame(b"").header is None and parse_csv_frame(b"\n\r\n").header_line == 0
    frame = parse_csv_frame(b'"a\nb",c\n1,2\n')
    assert frame.header is None and frame.header_line == 1 and "several lines" in frame.header_issue
    only = parse_csv_frame(b"a,b\n")
    assert only.header == ("a", "b") and only.whole().cells.shape == (0, 2)


def test_read_csv_frame_reports_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        read_csv_frame(tmp_path / "missing.csv")
    assert [p.code for p in info.value.problems] == ["unreadable"]


def test_cell_helpers_take_only_what_the_per_cell_checks_would() -> None:
    texts = np.array(["1.5", "1e5", " 2", "10s", "nan", "inf", "1e308", "", "1_000", "\u0661", "5 kW"], dtype=object)
    values, ok = decimals(texts, 1e9)
    assert ok.tolist() == [True, True] + [False] * 9  # ' 2' is left to the per-cell check, which strips
    assert values[:2].tolist() == [1.5, 1e5]
    whole, ok = whole_numbers(np.array(["4", "+2", "-0", "\u00b2", "9" * 19, "1.0"], dtype=object))
    assert ok.tolist() == [True, True, True, False, False, False] and whole[:3].tolist() == [4, 2, 0]
    stamps = np.array(
        [
            "1970-01-01 00:00:01",
            "1970-01-01T01:00:00+01:00",
            "1970-01-01T00:00Z",
            "2017-02-30",
            "0001-01-01T00:00+01:00",
        ],
        dtype=object,
    )
    micros, ok, zoned = iso_times(stamps)
    assert ok.tolist() == [True, True, True, False, False]
    assert micros[:3].tolist() == [1_000_000, 0, 0] and zoned.tolist() == [False, True, True, False, False]


def test_repeated_columns_name_both_positions() -> None:
    frame = parse_csv_frame(b"id, gpus,type,gpus ,,,id\n1,2,3,4,,,5\n")
    assert frame.header is not None
    assert repeated_columns(frame.header) == [("gpus", 2, 4), ("id", 1, 7)]  # names compared stripped, empties not
    assert repeated_columns(("a", "b")) == []
