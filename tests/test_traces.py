"""Trace readers: Gavel's 7-, 9- and 10-column layouts, Philly CSV, and clear errors for bad rows."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from wattplan.planner.contracts.problems import MAX_REPORTED_PROBLEMS, InputError
from wattplan.planner.files import csv_frames
from wattplan.planner.rounds import traces
from wattplan.planner.rounds.traces import (
    GAVEL_COLUMNS_7,
    GAVEL_COLUMNS_9,
    GAVEL_COLUMNS_10,
    TraceJob,
    read_gavel_trace,
    read_philly_csv,
)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "instances" / "sources" / "gavel" / "traces" / "6c71a0.trace"

# (job_type, total_steps, arrival_time, scale_factor) of three jobs
JOBS = [
    ("ResNet-50 (batch size 64)", "300000", "0.000000", "4"),
    ("Transformer (batch size 128)", "95121", "6.500000", "1"),
    ("LM (batch size 20)", "1e5", "3600", "8"),
]
EXPECTED = [
    TraceJob("j0", "ResNet-50 (batch size 64)", 0.0, 4, 300000.0),
    TraceJob("j1", "Transformer (batch size 128)", 6.5, 1, 95121.0),
    TraceJob("j2", "LM (batch size 20)", 3600.0, 8, 100000.0),
]


def gavel_line(layout: tuple[str, ...], job_type: str, steps: str, arrival: str, gpus: str) -> str:
    """One trace line in ``layout`` with the fields a TraceJob uses, and made-up values for the others."""
    values = {
        "job_type": job_type,
        "command": "cd %s/gpusched/workloads/pytorch && python3 train.py --batch_size 64",
        "working_directory": "%s/gpusched/workloads/pytorch/image_classification",
        "num_steps_arg": "--num_steps",
        "needs_data_dir": "1",
        "total_steps": steps,
        "scale_factor": gpus,
        "priority_weight": "2.000000",
        "SLO": "-1.000000",
        "arrival_time": arrival,
    }
    return "\t".join(values[c] for c in layout)


def write_trace(path: Path, layout: tuple[str, ...], jobs: list[tuple[str, str, str, str]] = JOBS) -> Path:
    path.write_text("".join(gavel_line(layout, *job) + "\n" for job in jobs))
    return path


@pytest.mark.parametrize("layout", [GAVEL_COLUMNS_7, GAVEL_COLUMNS_9, GAVEL_COLUMNS_10], ids=["7", "9", "10"])
def test_each_gavel_layout_gives_the_same_jobs(tmp_path: Path, layout: tuple[str, ...]) -> None:
    assert read_gavel_trace(write_trace(tmp_path / "t.trace", layout)) == EXPECTED


def test_ten_column_line_as_current_gavel_writes_it(tmp_path: Path) -> None:
    trace = tmp_path / "gavel10.trace"
    trace.write_text(
        "ResNet-18 (batch size 32)\tcd %s/image_classification/cifar10 && python3 main.py --data_dir=%s/data/cifar10"
        "\t%s/gpusched/workloads/pytorch\t--num_steps\t1\t4000\t2\t1.000000\t1.200000\t123.000000\n"
    )
    assert read_gavel_trace(trace) == [TraceJob("j0", "ResNet-18 (batch size 32)", 123.0, 2, 4000.0)]


def test_seven_and_ten_columns_agree_on_a_shipped_trace(tmp_path: Path) -> None:
    shipped = read_gavel_trace(SHIPPED)
    assert shipped, "the shipped trace has jobs"
    rows = [line.split("\t") for line in SHIPPED.read_text().splitlines() if line.strip()]
    jobs = [(r[0], r[4], r[5], r[6]) for r in rows]  # type, total_steps, arrival_time, scale_factor
    assert read_gavel_trace(write_trace(tmp_path / "t10.trace", GAVEL_COLUMNS_10, jobs)) == shipped


def test_blank_lines_and_crlf_keep_line_numbers(tmp_path: Path) -> None:
    trace = tmp_path / "crlf.trace"
    lines = [gavel_line(GAVEL_COLUMNS_10, *JOBS[0]), "", "  ", gavel_line(GAVEL_COLUMNS_7, *JOBS[1])]
    trace.write_bytes("\r\n".join(lines).encode() + b"\r\n")
    jobs = read_gavel_trace(trace)
    assert [(j.id, j.type) for j in jobs] == [("j0", JOBS[0][0]), ("j3", JOBS[1][0])]


def test_wrong_column_counts_name_their_lines(tmp_path: Path) -> None:
    trace = tmp_path / "bad.trace"
    good = gavel_line(GAVEL_COLUMNS_10, *JOBS[0])
    trace.write_text("\n".join([good, "A\tcmd\t-n", good, good + "\textra", "\t".join(["x"] * 8)]) + "\n")
    with pytest.raises(InputError) as info:
        read_gavel_trace(trace)
    assert info.value.source == str(trace)
    assert [(p.code, p.path) for p in info.value.problems] == [
        ("bad-trace-row", "line 2"),
        ("bad-trace-row", "line 4"),
        ("bad-trace-row", "line 5"),
    ]
    assert [p.message for p in info.value.problems] == [
        "3 tab-separated columns, expected 7, 9 or 10",
        "11 tab-separated columns, expected 7, 9 or 10",
        "8 tab-separated columns, expected 7, 9 or 10",
    ]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (("A", "many", "0", "1"), "total_steps 'many' is not a number"),
        (("A", "nan", "0", "1"), "total_steps 'nan' is not a finite number"),
        (("A", "100", "soon", "1"), "arrival_time 'soon' is not a number"),
        (("A", "100", "inf", "1"), "arrival_time 'inf' is not a finite number"),
        (("A", "100", "0", "1.5"), "scale_factor '1.5' is not a whole number"),
        (("A", "100", "0", "9" * 5000), "scale_factor '" + "9" * 40 + "...' is not a whole number"),
        (("A", "0", "0", "1"), "total_steps and scale_factor (GPUs) must be > 0, arrival_time >= 0"),
        (("A", "100", "-1", "1"), "total_steps and scale_factor (GPUs) must be > 0, arrival_time >= 0"),
        (("A", "100", "0", "0"), "total_steps and scale_factor (GPUs) must be > 0, arrival_time >= 0"),
        (("A", "100", "0", "65537"), "scale_factor 65537 GPUs is above 65,536: a typo?"),
        ((" ", "100", "0", "1"), "job_type is empty"),
    ],
)
@pytest.mark.parametrize("layout", [GAVEL_COLUMNS_7, GAVEL_COLUMNS_10], ids=["7", "10"])
def test_bad_fields_are_reported_with_their_line(
    tmp_path: Path, layout: tuple[str, ...], fields: tuple[str, str, str, str], message: str
) -> None:
    trace = write_trace(tmp_path / "bad.trace", layout, [JOBS[0], fields])
    with pytest.raises(InputError) as info:
        read_gavel_trace(trace)
    assert [(p.code, p.path, p.message) for p in info.value.problems] == [("bad-trace-row", "line 2", message)]


def test_many_bad_lines_are_capped(tmp_path: Path) -> None:
    trace = tmp_path / "bad.trace"
    trace.write_text("x\n" * (3 * MAX_REPORTED_PROBLEMS))
    with pytest.raises(InputError) as info:
        read_gavel_trace(trace)
    assert len(info.value.problems) == MAX_REPORTED_PROBLEMS + 1
    assert info.value.problems[-1].code == "more-problems"


def test_missing_trace_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        read_gavel_trace(tmp_path / "missing.trace")
    assert [p.code for p in info.value.problems] == ["unreadable"]


PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"


def steps_per_s(job_type: str, gpus: int) -> float | None:
    return {"A": 2.0, "B": 3.0}.get(job_type)


def write_philly(path: Path, rows: list[str]) -> Path:
    path.write_text(PHILLY_HEADER + "".join(r + "\n" for r in rows))
    return path


def test_philly_rows_become_jobs(tmp_path: Path) -> None:
    csv_path = write_philly(
        tmp_path / "p.csv",
        [
            "2017-10-09 07:00:10,100.0,2,200.0,c1",
            "2017-10-09 07:00:00,50.0,1,50.0,c1",
            ",10,1,10,c1",  # an empty field: skipped
            "2017-10-09 07:00:20,0,1,0,c1",  # no duration: dropped
            "2017-10-09 07:00:30,10,1,10,c2",
        ],
    )
    jobs = read_philly_csv(csv_path, ["A"], steps_per_s, virtual_cluster="c1")
    assert jobs == [TraceJob("p1", "A", 0.0, 1, 100.0), TraceJob("p0", "A", 10.0, 2, 200.0)]


def test_philly_time_zones_are_compared_in_utc(tmp_path: Path) -> None:
    csv_path = write_philly(
        tmp_path / "tz.csv", ["2017-10-09T09:00:00+02:00,10,1,10,c", "2017-10-09 07:00:30+00:00,10,1,10,c"]
    )
    assert [j.arrival_s for j in read_philly_csv(csv_path, ["A"], steps_per_s)] == [0.0, 30.0]


def test_philly_naive_and_zoned_times_are_refused(tmp_path: Path) -> None:
    # a naive time cannot be placed on the zoned ones' clock: reading it as UTC shifts a job by hours
    csv_path = write_philly(
        tmp_path / "tz.csv", ["2017-10-09T09:00:00+02:00,10,1,10,c", "2017-10-09 07:00:30,10,1,10,c"]
    )
    with pytest.raises(InputError) as info:
        read_philly_csv(csv_path, ["A"], steps_per_s)
    assert info.value.source == str(csv_path)
    assert [(p.code, p.path) for p in info.value.problems] == [("bad-trace-row", "line 3")]
    assert "timestamp '2017-10-09 07:00:30' has no time zone and the one on line 2 has one" in str(info.value)


def test_philly_unterminated_quote_is_refused(tmp_path: Path) -> None:
    # the open quote on line 2 would swallow the 11 rows after it into one field: 12 rows -> 1 job
    rows = ['2017-10-09 07:00:00,10,1,10,"c'] + [f"2017-10-09 07:00:{i:02d},10,1,10,c" for i in range(1, 12)]
    csv_path = write_philly(tmp_path / "quote.csv", rows)
    with pytest.raises(InputError) as info:
        read_philly_csv(csv_path, ["A"], steps_per_s)
    assert info.value.source == str(csv_path)
    assert [(p.code, p.path) for p in info.value.problems] == [("bad-trace-row", "line 2")]
    assert "quote" in info.value.problems[0].message


def test_philly_quote_closed_lines_later_is_refused(tmp_path: Path) -> None:
    rows = ['2017-10-09 07:00:00,10,1,10,"c', '2017-10-09 07:00:01,10,1,10,c"', "2017-10-09 07:00:02,10,1,10,c"]
    with pytest.raises(InputError) as info:
        read_philly_csv(write_philly(tmp_path / "q.csv", rows), ["A"], steps_per_s)
    assert [(p.code, p.path) for p in info.value.problems] == [("bad-trace-row", "line 2")]
    assert "runs from line 2 to line 3" in info.value.problems[0].message


def test_philly_numbers_with_units_or_other_digits_are_refused(tmp_path: Path) -> None:
    rows = [
        "2017-10-09 07:00:00,10s,1,10,c",
        "2017-10-09 07:00:00,1_000,1,10,c",
        "2017-10-09 07:00:00,10,\u00b2,10,c",
        "2017-10-09 07:00:00,10,2 GPUs,10,c",
        "2017-10-09 07:00:00,10,1",
    ]
    with pytest.raises(InputError) as info:
        read_philly_csv(write_philly(tmp_path / "u.csv", rows), ["A"], steps_per_s)
    assert [p.path for p in info.value.problems] == [f"line {n}" for n in (2, 3, 4, 5, 6)]
    assert [p.message for p in info.value.problems] == [
        "duration '10s' is not a number",
        "duration '1_000' is not a number",
        "num_gpus '\u00b2' is not a whole number",
        "num_gpus '2 GPUs' is not a whole number",
        "the row has a different number of columns",
    ]


def test_bad_philly_rows_name_their_lines(tmp_path: Path) -> None:
    csv_path = write_philly(
        tmp_path / "bad.csv",
        [
            "2017-10-09 07:00:10,100.0,2,200.0,c1",
            "yesterday,100.0,2,200.0,c1",
            "2017-10-09 07:00:10,long,2,200.0,c1",
            "2017-10-09 07:00:10,nan,2,200.0,c1",
            "2017-10-09 07:00:10,10,two,200.0,c1",
            "2017-10-09 07:00:10,10,0,200.0,c1",
            "2017-10-09 07:00:10,10," + "9" * 30 + ",200.0,c1",  # was accepted, exit 0
        ],
    )
    with pytest.raises(InputError) as info:
        read_philly_csv(csv_path, ["A"], steps_per_s)
    assert [(p.code, p.path) for p in info.value.problems] == [
        ("bad-trace-row", f"line {n}") for n in (3, 4, 5, 6, 7, 8)
    ]
    assert [p.message for p in info.value.problems] == [
        "timestamp 'yesterday' is not an ISO date and time",
        "duration 'long' is not a number",
        "duration 'nan' is not a finite number",
        "num_gpus 'two' is not a whole number",
        "num_gpus 0 must be >= 1",
        "num_gpus " + "9" * 30 + " is above 65,536: a typo?",
    ]


def test_philly_header_and_empty_file(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(InputError) as info:
        read_philly_csv(wrong, ["A"], steps_per_s)
    assert [(p.code, p.path) for p in info.value.problems] == [("bad-trace-header", "line 1")]
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputError) as info:
        read_philly_csv(empty, ["A"], steps_per_s)
    assert [p.code for p in info.value.problems] == ["bad-trace-header"]
    only_header = write_philly(tmp_path / "header.csv", [])
    with pytest.raises(InputError) as info:
        read_philly_csv(only_header, ["A"], steps_per_s)
    assert [p.code for p in info.value.problems] == ["empty-trace"]


def test_philly_blank_lines_are_skipped_and_keep_line_numbers(tmp_path: Path) -> None:
    # the csv-module reader took the line after a blank one for a record spanning lines: a blank
    # line anywhere refused the file ('a quoted field runs from line 3 to line 4')
    rows = ["2017-10-09 07:00:00,10,1,10,c", "", "2017-10-09 07:00:05,10,1,10,c", "", "", "yesterday,10,1,10,c"]
    with pytest.raises(InputError) as info:
        read_philly_csv(write_philly(tmp_path / "blank.csv", rows), ["A"], steps_per_s)
    assert [(p.code, p.path) for p in info.value.problems] == [("bad-trace-row", "line 7")]
    jobs = read_philly_csv(write_philly(tmp_path / "ok.csv", rows[:3]), ["A"], steps_per_s)
    assert [(j.id, j.arrival_s) for j in jobs] == [("p0", 0.0), ("p1", 5.0)]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_philly_short_long_and_space_only_rows_name_their_lines(tmp_path: Path, newline: str) -> None:
    # pandas pads a short row, stops the whole read at a long one and skips a line of spaces
    rows = [
        "2017-10-09 07:00:00,10,1,10,c",
        "2017-10-09 07:00:01,10,1",
        "2017-10-09 07:00:02,10,1,10,c,extra,more",
        "   ",
        "2017-10-09 07:00:03,10,two,10,c",
    ]
    path = tmp_path / "w.csv"
    path.write_bytes((PHILLY_HEADER + "".join(r + "\n" for r in rows)).replace("\n", newline).encode())
    with pytest.raises(InputError) as info:
        read_philly_csv(path, ["A"], steps_per_s)
    assert [(p.path, p.message) for p in info.value.problems] == [
        ("line 3", "the row has a different number of columns"),
        ("line 4", "the row has a different number of columns"),
        ("line 5", "the row has a different number of columns"),
        ("line 6", "num_gpus 'two' is not a whole number"),
    ]


def test_philly_text_after_a_closing_quote_names_its_own_line(tmp_path: Path) -> None:
    # pandas reads '"c"x' as 'cx'; the csv-module reader refused it but named the line before (line 2)
    rows = ["2017-10-09 07:00:00,10,1,10,c", '2017-10-09 07:00:01,10,1,10,"c"x', "2017-10-09 07:00:02,10,1,10,c"]
    with pytest.raises(InputError) as info:
        read_philly_csv(write_philly(tmp_path / "q.csv", rows), ["A"], steps_per_s)
    assert [(p.code, p.path) for p in info.value.problems] == [("bad-trace-row", "line 3")]
    assert "not CSV" in info.value.problems[0].message


def test_philly_rows_after_a_quote_closed_later_keep_their_lines(tmp_path: Path) -> None:
    rows = ['2017-10-09 07:00:00,10,1,10,"c', "x", 'y",2017,1,1,c', "2017-10-09 07:00:02,10s,1,10,c"]
    with pytest.raises(InputError) as info:
        read_philly_csv(write_philly(tmp_path / "q.csv", rows), ["A"], steps_per_s)
    assert [(p.path, p.message) for p in info.value.problems] == [
        ("line 2", "a quoted field runs from line 2 to line 4: a quote left open?"),
        ("line 5", "duration '10s' is not a number"),
    ]


def test_philly_quoted_cells_and_rarer_iso_forms_are_read(tmp_path: Path) -> None:
    rows = [
        '"2017-10-09 07:00:00",10,1,10,"c, east"',
        "20171009T070010,10,1,10,c",  # compact ISO 8601
        "2017-W41-1T07:00:20,10,1,10,c",  # an ISO week date: Monday 2017-10-09
        "2017-10-09 07:00:30.1234567,10,1,10,c",  # more than 6 digits: fromisoformat truncates
        " 2017-10-09 07:00:40 , 10 , 1 ,10,c",  # spaces around cells
    ]
    jobs = read_philly_csv(write_philly(tmp_path / "r.csv", rows), ["A"], steps_per_s)
    assert [j.arrival_s for j in jobs] == [0.0, 10.0, 20.0, 30.123456, 40.0]
    assert [j.total_steps for j in jobs] == [20.0] * 5


def test_philly_cells_of_spaces_skip_their_row(tmp_path: Path) -> None:
    rows = ["2017-10-09 07:00:00,10,1,10,c", "2017-10-09 07:00:01,10,1,10,  ", "2017-10-09 07:00:02,10,1, ,c"]
    jobs = read_philly_csv(write_philly(tmp_path / "s.csv", rows), ["A"], steps_per_s)
    assert [j.id for j in jobs] == ["p0"]


def test_philly_units_and_a_byte_order_mark_in_a_row_are_refused(tmp_path: Path) -> None:
    rows = [
        "\ufeff2017-10-09 07:00:00,10,1,10,c",  # pandas drops a byte-order mark where its read starts
        "2017-10-09 07:00:01,5 kW,1,10,c",
        "2017-10-09 07:00:02,1e308,1,10,c",
        "2017-10-09 07:00:03,inf,1,10,c",
    ]
    with pytest.raises(InputError) as info:
        read_philly_csv(write_philly(tmp_path / "u.csv", rows), ["A"], steps_per_s)
    assert [(p.path, p.message) for p in info.value.problems] == [
        ("line 2", "timestamp '\\ufeff2017-10-09 07:00:00' is not an ISO date and time"),  # repr escapes it
        ("line 3", "duration '5 kW' is not a number"),
        ("line 4", "duration '1e308' is above 1e+09"),
        ("line 5", "duration 'inf' is not a finite number"),
    ]


def test_philly_arrivals_match_timedelta_seconds(tmp_path: Path) -> None:
    # arrivals are computed on integer microseconds, rounded once as timedelta.total_seconds() does
    stamps = ["2017-10-09 07:00:00", "2017-10-09 07:00:00.000001", "2017-10-10 08:01:02.345678", "2030-01-01 00:00:00"]
    jobs = read_philly_csv(write_philly(tmp_path / "t.csv", [f"{s},10,1,10,c" for s in stamps]), ["A"], steps_per_s)
    first = datetime.fromisoformat(stamps[0])
    assert [j.arrival_s for j in jobs] == [(datetime.fromisoformat(s) - first).total_seconds() for s in stamps]


def test_philly_jobs_do_not_depend_on_chunk_or_block_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # rows are read a chunk at a time and turned into jobs a block at a time: the draws must not see it
    rows = [f"2017-10-09 07:{i // 60:02d}:{i % 60:02d},{10 + i},{1 + i % 3},1,c" for i in range(40, 0, -1)]
    rows.insert(7, '"2017-10-09 06:00:00",5,1,1,"c"')  # a quoted row among plain ones
    path = write_philly(tmp_path / "many.csv", rows)
    expected = read_philly_csv(path, ["A", "B"], steps_per_s, seed=3)
    monkeypatch.setattr(traces, "_JOB_BLOCK", 3)
    monkeypatch.setattr(csv_frames.CsvFrame.chunks, "__defaults__", (4,))
    assert read_philly_csv(path, ["A", "B"], steps_per_s, seed=3) == expected
    assert len(expected) == 41 and expected[0].id == "p7"
