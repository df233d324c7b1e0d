"""Hourly grid signals: reading and validating CSV files, the replay clock, and carbon/price accounting."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from wattplan.planner.contracts.problems import InputError
from wattplan.planner.files import csv_frames
from wattplan.planner.files.resources import resolve_signal, shipped_signals
from wattplan.planner.sim.signals import HourlySignal, SignalClock, SignalKind, read_signal, signal_cost

HEADER = "timestamp,avg_CI\n"


def _write(tmp_path: Path, text: str, name: str = "f.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _hours(*values: str, start_hour: int = 0) -> str:
    """Data rows for consecutive hours of 2022-01-01 from ``start_hour``."""
    return "".join(f"2022-01-01 {start_hour + i:02d}:00:00+00:00,{v}\n" for i, v in enumerate(values))


def _problems(path: Path, kind: SignalKind = "carbon") -> list[tuple[str, str]]:
    with pytest.raises(InputError) as info:
        read_signal(path, kind)
    assert info.value.source == str(path)
    return [(p.code, p.path) for p in info.value.problems]


def _signal(values: list[float], kind: SignalKind = "carbon") -> HourlySignal:
    return HourlySignal(kind, "hand.csv", datetime(2022, 1, 1, tzinfo=UTC), tuple(values), (), "v")


# -- the shipped files --------------------------------------------------------------------------


def test_shipped_ciso_reads_with_its_three_empty_hours_filled() -> None:
    path = shipped_signals()["CISO_2022.csv"]
    signal = read_signal(path, "carbon")
    assert signal.hours == len(signal.values) == 8760
    assert signal.start_utc == datetime(2022, 1, 1, tzinfo=UTC)
    assert signal.column == "avg_CI"
    assert signal.filled_hours == (
        "2022-01-05T10:00:00+00:00",
        "2022-05-17T18:00:00+00:00",
        "2022-06-13T18:00:00+00:00",
    )
    assert 74 <= min(signal.values) and max(signal.values) <= 449.1
    assert math.isclose(signal.mean, 256.16, abs_tol=0.01)
    # 2022-01-05 10:00 is hour 4 * 24 + 10 = 106; its neighbours (file rows 107 and 109) read
    # 290.8370167903163 and 296.88716185921385 gCO2/kWh, so the filled hour is their midpoint.
    assert signal.values[105] == 290.8370167903163
    assert signal.values[107] == 296.88716185921385
    assert signal.values[106] == pytest.approx((290.8370167903163 + 296.88716185921385) / 2, rel=1e-12)
    info = signal.info()
    json.dumps(info)
    assert info["filled_count"] == 3 and info["hours"] == 8760 and info["unit"] == "gCO2/kWh"
    assert info["negative_hours"] == 0


def test_shipped_erco_reads_without_gaps() -> None:
    signal = read_signal(shipped_signals()["ERCO_2022.csv"], "carbon")
    assert signal.hours == 8760 and signal.filled_hours == ()
    assert 110 <= min(signal.values) and max(signal.values) <= 517


def test_resolve_signal_finds_the_shipped_file_by_bare_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert set(shipped_signals()) == {"CISO_2022.csv", "ERCO_2022.csv"}
    assert resolve_signal(Path("CISO_2022.csv")) == shipped_signals()["CISO_2022.csv"]
    assert resolve_signal("CISO_2022.csv").is_file()
    own = _write(tmp_path, HEADER + _hours("1", "2"), "CISO_2022.csv")
    assert resolve_signal(Path("CISO_2022.csv")) == Path("CISO_2022.csv")  # an existing file wins
    assert resolve_signal(own) == own
    missing = tmp_path / "sub" / "ERCO_2022.csv"  # not a bare name: not looked up among shipped files
    assert resolve_signal(missing) == missing
    assert resolve_signal(Path("nope.csv")) == Path("nope.csv")
    assert [c for c, _ in _problems(tmp_path / "nope.csv")] == ["unreadable"]


# -- rules --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rows", "code", "where"),
    [
        (_hours("10", "11") + "2022-01-01 01:00:00+00:00,12\n", "duplicate-timestamp", "f.csv:row 4 (timestamp)"),
        (_hours("10", "11", "12") + "2022-01-01 01:00:00+00:00,13\n", "unsorted-timestamp", "f.csv:row 5 (timestamp)"),
        (_hours("10", "11", "-1"), "negative-value", "f.csv:row 4 (avg_CI)"),
        (_hours("10", "11", "abc"), "bad-value", "f.csv:row 4 (avg_CI)"),
        (_hours("10", "11", "nan", "13"), "not-finite", "f.csv:row 4 (avg_CI)"),
        (_hours("10", "11", "inf", "13"), "not-finite", "f.csv:row 4 (avg_CI)"),
        (_hours("10", "11") + "2022-01-01 02:30:00+00:00,12\n", "off-hour-timestamp", "f.csv:row 4 (timestamp)"),
        (_hours("10", "11") + "2022-01-01 03:00:01Z,12\n", "off-hour-timestamp", "f.csv:row 4 (timestamp)"),
        (_hours("10", "11") + "yesterday,12\n", "bad-timestamp", "f.csv:row 4 (timestamp)"),
        (_hours("10", "11") + "2022-01-01 02:00:00+00:00,12,99\n", "bad-row", "f.csv:row 4"),
        (_hours("10", "11") + "2022-01-01 02:00:00+00:00\n", "bad-row", "f.csv:row 4"),
        # rows 2 and 3 (hours 0 and 1), then hour 27: 25 hours without a value
        (_hours("10", "11") + "2022-01-02 03:00:00+00:00,12\n", "gap-too-long", "f.csv:row 4 (avg_CI)"),
        (_hours("", "11", "12"), "missing-edge-value", "f.csv:row 2 (avg_CI)"),
        (_hours("10", "11", ""), "missing-edge-value", "f.csv:row 4 (avg_CI)"),
        (_hours("10", "", ""), "too-few-values", "f.csv:row 1 (avg_CI)"),
        ("", "too-few-values", "f.csv:row 1 (avg_CI)"),
        # absurd values: 1e308 overflowed the cost sums after the replay (nothing written)
        (_hours("10", "11", "1e308"), "out-of-range", "f.csv:row 4 (avg_CI)"),
        (_hours("10", "11", "5000.01"), "out-of-range", "f.csv:row 4 (avg_CI)"),
        (_hours("10", "11", "300g"), "bad-value", "f.csv:row 4 (avg_CI)"),
        (_hours("10", "11", "1_000"), "bad-value", "f.csv:row 4 (avg_CI)"),
        (_hours("10", "11", "\u0661\u0662"), "bad-value", "f.csv:row 4 (avg_CI)"),
        (_hours("10", "11", "5 kW"), "bad-value", "f.csv:row 4 (avg_CI)"),
        (_hours("10", "11", "300 gCO2"), "bad-value", "f.csv:row 4 (avg_CI)"),
        # pandas' C parser stops the whole read at a row with too many cells
        (_hours("10", "11") + "2022-01-01 02:00:00+00:00,12,99,100\n", "bad-row", "f.csv:row 4"),
        # pandas reads '"12"x' as 12x; the csv module in strict mode refuses text after a closing quote
        (_hours("10", "11", '"12"x', "13"), "bad-row", "f.csv:row 4"),
        # pandas drops a byte-order mark at the start of what it reads
        ("\ufeff" + _hours("10") + _hours("11", start_hour=1), "bad-timestamp", "f.csv:row 2 (timestamp)"),
        # a quote left open swallows every later row; one closed a line later swallows the row between
        (_hours("10", "11", '"12') + _hours("13", "14", start_hour=3), "bad-row", "f.csv:row 4"),
        (_hours("10", "11", '"12', '13"', "14"), "bad-row", "f.csv:row 4"),
    ],
)
def test_a_broken_row_is_an_input_error_naming_its_row(tmp_path: Path, rows: str, code: str, where: str) -> None:
    assert _problems(_write(tmp_path, HEADER + rows)) == [(code, where)]


def test_a_quote_closed_lines_later_stops_reading_at_its_row(tmp_path: Path) -> None:
    # pandas would read rows 4-5 as one record and go on; the rows after it are not read (row 6 is bad)
    path = _write(tmp_path, HEADER + _hours("10", "11", '"12', '13"', "abc"))
    with pytest.raises(InputError) as info:
        read_signal(path, "carbon")
    assert [(p.code, p.path) for p in info.value.problems] == [("bad-row", "f.csv:row 4")]
    assert "runs from line 4 to line 5" in info.value.problems[0].message
    assert "reading stopped here" in info.value.problems[0].message


def test_short_long_and_space_only_rows_name_their_lines_around_blank_ones(tmp_path: Path) -> None:
    # pandas pads a short row with empty cells, skips blank and space-only lines (shifting row numbers)
    rows = _hours("10", "11") + "\n  \n2022-01-01 02:00:00+00:00\n\n" + _hours("12", "-1", start_hour=3)
    for newline in ("\n", "\r\n", "\r"):
        path = _write(tmp_path, (HEADER + rows).replace("\n", newline))
        assert _problems(path) == [
            ("bad-row", "f.csv:row 5"),
            ("bad-row", "f.csv:row 6"),
            ("negative-value", "f.csv:row 9 (avg_CI)"),
        ]


def test_quoted_cells_are_read(tmp_path: Path) -> None:
    text = HEADER + '"2022-01-01 00:00:00+00:00","10"\n2022-01-01 01:00:00+00:00,"1""1"\n'
    assert _problems(_write(tmp_path, text)) == [("bad-value", "f.csv:row 3 (avg_CI)")]
    text = HEADER + '"2022-01-01 00:00:00+00:00","10"\n2022-01-01 01:00:00+00:00,"11"\n'
    assert read_signal(_write(tmp_path, text), "carbon").values == (10.0, 11.0)


def test_every_problem_is_reported_in_row_order(tmp_path: Path) -> None:
    rows = _hours("10", "-5", "x", "12") + "2022-01-01 03:00:00+00:00,1\n" + "2022-01-01 04:15:00+00:00,1\n"
    assert _problems(_write(tmp_path, HEADER + rows)) == [
        ("negative-value", "f.csv:row 3 (avg_CI)"),
        ("bad-value", "f.csv:row 4 (avg_CI)"),
        ("duplicate-timestamp", "f.csv:row 6 (timestamp)"),
        ("off-hour-timestamp", "f.csv:row 7 (timestamp)"),
    ]


def test_a_gap_of_exactly_24_hours_is_filled(tmp_path: Path) -> None:
    signal = read_signal(_write(tmp_path, HEADER + _hours("0") + "2022-01-02 01:00:00+00:00,25\n"), "carbon")
    assert signal.values == tuple(float(v) for v in range(26))
    assert len(signal.filled_hours) == 24


def test_no_usable_column_names_the_columns_found(tmp_path: Path) -> None:
    path = _write(tmp_path, "when,a,b\n2022-01-01T00:00Z,1,2\n")
    with pytest.raises(InputError) as info:
        read_signal(path, "carbon")
    (problem,) = info.value.problems
    assert (problem.code, problem.path) == ("bad-signal-header", "f.csv:row 1 (header)")
    assert "'when', 'a', 'b'" in problem.message
    assert _problems(_write(tmp_path, "", "empty.csv")) == [("bad-signal-header", "empty.csv:row 1 (header)")]
    # two columns, but the second is a price: not read as carbon
    price = _write(tmp_path, "timestamp,price\n" + _hours("1", "2"), "p.csv")
    assert _problems(price) == [("bad-signal-header", "p.csv:row 1 (header)")]


def test_two_hour_gap_and_empty_cell_are_interpolated_in_time(tmp_path: Path) -> None:
    text = (
        "time,gco2_per_kwh\n"
        "2022-03-01T00:00:00Z,100\n"  # hour 0
        "2022-03-01T01:00:00Z,\n"  # hour 1: empty cell
        "2022-03-01T02:00:00Z,160\n"  # hour 2
        "2022-03-01T05:00:00Z,40\n"  # hour 5: hours 3 and 4 missing
    )
    signal = read_signal(_write(tmp_path, text), "carbon")
    assert signal.column == "gco2_per_kwh"
    assert signal.start_utc == datetime(2022, 3, 1, tzinfo=UTC)
    assert signal.values == pytest.approx([100, 130, 160, 120, 80, 40], abs=1e-12)
    assert signal.filled_hours == (
        "2022-03-01T01:00:00+00:00",
        "2022-03-01T03:00:00+00:00",
        "2022-03-01T04:00:00+00:00",
    )


def test_offset_timestamps_are_taken_to_utc_and_two_columns_take_the_second(tmp_path: Path) -> None:
    text = "datetime,whatever\n2022-01-01 00:00Z,1\n2022-01-01T02:00:00+01:00,2\n2022-01-01T02:00:00Z,3\n"
    signal = read_signal(_write(tmp_path, text), "carbon")
    assert signal.start_utc == datetime(2022, 1, 1, tzinfo=UTC)
    assert signal.values == (1.0, 2.0, 3.0)
    assert signal.column == "whatever"


def test_naive_timestamps_are_utc(tmp_path: Path) -> None:
    signal = read_signal(_write(tmp_path, "time,avg_CI\n2022-01-01 00:00,1\n2022-01-01T01:00:00,2\n"), "carbon")
    assert signal.start_utc == datetime(2022, 1, 1, tzinfo=UTC)
    assert signal.values == (1.0, 2.0)


@pytest.mark.parametrize(
    ("stamps", "row", "words"),
    [
        # a naive time beside zoned ones was read as UTC: a local 01:00 became hour 1 UTC, silently
        (
            ["2022-01-01 00:00Z", "2022-01-01 01:00", "2022-01-01T02:00:00+00:00"],
            3,
            "has no time zone and the one on row 2",
        ),
        (
            ["2022-01-01 00:00", "2022-01-01 01:00", "2022-01-01T02:00:00+00:00"],
            4,
            "has a time zone and the one on row 2",
        ),
        (["2022-01-01 00:00", "20220101T0100+0000", "2022-01-01 02:00"], 3, "has a time zone"),  # a rarer ISO form
    ],
)
def test_naive_and_zoned_timestamps_mixed_name_the_row_and_column(
    tmp_path: Path, stamps: list[str], row: int, words: str
) -> None:
    path = _write(tmp_path, "timestamp,avg_CI\n" + "".join(f"{s},{i}\n" for i, s in enumerate(stamps)))
    with pytest.raises(InputError) as info:
        read_signal(path, "carbon")
    assert [(p.code, p.path) for p in info.value.problems] == [("mixed-time-zones", f"f.csv:row {row} (timestamp)")]
    assert words in info.value.problems[0].message


def test_negative_price_is_accepted_and_counted(tmp_path: Path) -> None:
    text = "timestamp,usd_per_mwh\n" + _hours("30", "-5.5", "0", "-1", "42")
    signal = read_signal(_write(tmp_path, text), "price")
    assert signal.values == (30.0, -5.5, 0.0, -1.0, 42.0)
    info = signal.info()
    assert info["negative_hours"] == 2 and info["unit"] == "$/MWh" and info["min"] == -5.5
    json.dumps(info)


@pytest.mark.parametrize(("value", "ok"), [("-10000", True), ("100000", True), ("-10000.5", False), ("1e6", False)])
def test_price_range_is_minus_10000_to_100000(tmp_path: Path, value: str, ok: bool) -> None:
    path = _write(tmp_path, "timestamp,usd_per_mwh\n" + _hours("30", value, "40"))
    if ok:
        assert read_signal(path, "price").values[1] == float(value)
    else:
        assert _problems(path, "price") == [("out-of-range", "f.csv:row 3 (usd_per_mwh)")]


def test_carbon_range_ends_are_accepted(tmp_path: Path) -> None:
    assert read_signal(_write(tmp_path, HEADER + _hours("0", "5000")), "carbon").values == (0.0, 5000.0)


def test_crlf_and_blank_lines_keep_file_row_numbers(tmp_path: Path) -> None:
    text = (HEADER + _hours("1", "2") + "\n" + _hours("-3", start_hour=2)).replace("\n", "\r\n")
    assert _problems(_write(tmp_path, text)) == [("negative-value", "f.csv:row 5 (avg_CI)")]


# -- replay clock and accounting ----------------------------------------------------------------


def test_mean_over_a_round_straddling_an_hour_boundary() -> None:
    clock = SignalClock(_signal([100.0, 250.0, 400.0]), t0_s=1000.0)
    # [4400, 4760) is 200 s of hour 0 (ends at 4600) and 160 s of hour 1
    assert clock.mean_over(4400.0, 360.0) == pytest.approx((200 * 100 + 160 * 250) / 360)
    assert clock.value_at(4599.0) == 100.0 and clock.value_at(4600.0) == 250.0
    assert clock.mean_over(4600.0, 3600.0) == 250.0  # exactly one hour, end excluded
    assert clock.mean_over(4700.0, 0.0) == 250.0
    # three hours and a half from the start of hour 0: 100, 250, 400, then half of hour 3 = hour 0
    assert clock.mean_over(1000.0, 4 * 3600.0 - 1800.0) == pytest.approx((100 + 250 + 400 + 0.5 * 100) / 3.5)
    assert clock.relative(4400.0, 360.0) == pytest.approx(clock.mean_over(4400.0, 360.0) / 250.0)
    with pytest.raises(ValueError):
        clock.mean_over(0.0, -1.0)


def test_clock_is_cyclic_and_offset() -> None:
    signal = _signal([100.0, 250.0, 400.0])
    clock = SignalClock(signal, t0_s=0.0)
    assert [clock.value_at(h * 3600.0 + 1) for h in range(7)] == [100, 250, 400, 100, 250, 400, 100]
    assert clock.value_at(-1.0) == 400.0  # before t0: the hour before, wrapped
    assert signal.value_at_hour(3 * 1000 + 2) == 400.0
    # a round across the wrap: last 100 s of hour 2 and first 260 s of hour 3 (= hour 0)
    assert clock.mean_over(3 * 3600.0 - 100, 360.0) == pytest.approx((100 * 400 + 260 * 100) / 360)
    # many whole cycles: the mean of the file
    assert clock.mean_over(0.0, 3 * 3600.0 * 1000) == pytest.approx(250.0)
    shifted = SignalClock(signal, t0_s=500.0, offset_h=2)
    assert shifted.value_at(500.0) == 400.0 and shifted.value_at(500.0 + 3600.0) == 100.0


def test_signal_cost_carbon_grams_and_price_dollars() -> None:
    carbon = SignalClock(_signal([250.0, 250.0]), t0_s=0.0)
    assert signal_cost(carbon, 0.0, 360.0, 3.6e6) == pytest.approx(250.0)  # 1 kWh at 250 gCO2/kWh
    price = SignalClock(_signal([40.0, 40.0], kind="price"), t0_s=0.0)
    assert signal_cost(price, 0.0, 360.0, 3.6e9) == pytest.approx(40.0)  # 1 MWh at 40 $/MWh
    # a straddling round: 2 MJ over [3400, 3760) at 200 s x 100 + 160 s x 300 gCO2/kWh
    mixed = SignalClock(_signal([100.0, 300.0]), t0_s=0.0)
    expected = 2e6 / 3.6e6 * (200 * 100 + 160 * 300) / 360
    assert signal_cost(mixed, 3400.0, 360.0, 2e6) == pytest.approx(expected)
    assert signal_cost(mixed, 3400.0, 360.0, 0.0) == 0.0


def test_reading_does_not_depend_on_the_chunk_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the file is read a chunk of rows at a time: gaps, duplicates and mixed zones across chunks are still seen
    path = shipped_signals()["CISO_2022.csv"]
    whole = read_signal(path, "carbon")
    monkeypatch.setattr(csv_frames.CsvFrame.chunks, "__defaults__", (1000,))
    assert read_signal(path, "carbon") == whole
    monkeypatch.setattr(csv_frames.CsvFrame.chunks, "__defaults__", (2,))
    rows = _hours("10", "", "12", "13") + "2022-01-01 03:00:00+00:00,14\n" + "2022-01-01 05:00:00,15\n"
    assert _problems(_write(tmp_path, HEADER + rows)) == [
        ("duplicate-timestamp", "f.csv:row 6 (timestamp)"),
        ("mixed-time-zones", "f.csv:row 7 (timestamp)"),
    ]


def test_a_column_named_twice_is_refused_naming_it(tmp_path: Path) -> None:
    # the second avg_CI column was silently ignored: the lookup read whichever copy it met first
    rows = "2022-01-01 00:00:00+00:00,10,99\n2022-01-01 01:00:00+00:00,11,99\n"
    path = _write(tmp_path, "timestamp,avg_CI,AVG_CI\n" + rows)
    assert _problems(path) == [("duplicate-column", "f.csv:row 1 (avg_ci)")]
