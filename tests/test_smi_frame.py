"""The nvidia-smi log reader through pandas: block boundaries change nothing, strict cells, bounded reading."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattplan.planner.contracts.jsonio import line_blocks
from wattplan.planner.contracts.problems import MAX_REPORTED_PROBLEMS, InputError
from wattplan.planner.profiling.job_side import JobRun
from wattplan.planner.profiling.nvidia_smi import SmiLog, read_nvidia_smi_log
from wattplan.planner.profiling.smi_points import points_from_smi

SMI = Path(__file__).parent / "data" / "nvidia_smi"
HEADER = "index, timestamp, power.draw [W], utilization.gpu [%], clocks.sm [MHz], power.limit [W]\n"


def row(gpu: int, second: float, power: str = "100.00 W", util: str = "50 %", clock: str = "1200 MHz") -> str:
    whole, frac = divmod(second, 1)
    stamp = f"2026/11/24 13:{int(whole) // 60:02d}:{int(whole) % 60:02d}.{round(frac * 1000):03d}"
    return f"{gpu}, {stamp}, {power}, {util}, {clock}, 250.00 W\n"


def write(tmp_path: Path, text: str | bytes, name: str = "log.csv") -> Path:
    f = tmp_path / name
    f.write_bytes(text.encode() if isinstance(text, str) else text)
    return f


def same_log(a: SmiLog, b: SmiLog) -> None:
    """Two reads of one log agree on every sample, problem and name."""
    assert a.problems == b.problems
    assert a.gpus == b.gpus and a.median_step_s == b.median_step_s and a.gpu_names == b.gpu_names
    for g in a.gpus:
        for f in (f.name for f in dataclasses.fields(a.samples[g])):
            np.testing.assert_array_equal(getattr(a.samples[g], f), getattr(b.samples[g], f), err_msg=f)


@pytest.mark.parametrize("name", ["bad_rows.csv", "v100_units.csv", "v100_nounits.csv"])
@pytest.mark.parametrize("block", [1, 7, 64, 200])
def test_block_size_changes_nothing(name: str, block: int) -> None:
    whole = read_nvidia_smi_log(SMI / name)
    assert whole.samples  # the shipped logs have samples
    same_log(whole, read_nvidia_smi_log(SMI / name, block_bytes=block))


@settings(max_examples=40, deadline=None)
@given(
    block=st.integers(1, 400),
    cells=st.lists(
        st.sampled_from(["100.00 W", "[N/A]", "abc W", "5 dBm", "nan W", "1e999", "300 mW", "", '"7 W"', " 90 W "]),
        min_size=4,
        max_size=30,
    ),
)
def test_any_block_size_reads_the_same_rows_and_problems(tmp_path_factory, block: int, cells: list[str]) -> None:
    text = HEADER + "".join(row(k % 2, k // 2, power=c) for k, c in enumerate(cells)) + row(0, 99) + row(0, 100)
    f = write(tmp_path_factory.mktemp("log"), text)
    same_log(read_nvidia_smi_log(f), read_nvidia_smi_log(f, block_bytes=block))


def test_a_quote_is_a_character_of_the_cell_not_csv_quoting(tmp_path: Path) -> None:
    # nvidia-smi never quotes: a quote cannot open a field that swallows the lines after it
    text = HEADER + row(0, 0) + row(0, 1, power='"110 W') + row(0, 2) + row(0, 3, power='120 W"') + row(0, 4)
    log = read_nvidia_smi_log(write(tmp_path, text))
    assert [(p.code, p.path) for p in log.problems] == [
        ("bad-value", "line 3, power.draw"),
        ("bad-value", "line 5, power.draw"),
    ]
    assert [s.line for s in log.samples[0]] == [2, 4, 6]


def test_nul_bytes_crlf_and_a_missing_last_newline(tmp_path: Path) -> None:
    text = (HEADER + row(0, 0) + row(0, 1).replace("100", "1\x0000") + row(0, 2) + row(0, 3)).replace("\n", "\r\n")
    log = read_nvidia_smi_log(write(tmp_path, text.rstrip("\r\n")))
    assert [(p.code, p.path) for p in log.problems] == [("bad-value", "line 3")]
    assert "NUL" in log.problems[0].message
    assert [(s.line, s.power_w) for s in log.samples[0]] == [(2, 100.0), (4, 100.0), (5, 100.0)]


def test_zoned_and_out_of_range_times_are_bad_values(tmp_path: Path) -> None:
    text = (
        HEADER
        + row(0, 0)
        + "0, 2026-11-24T13:00:01+02:00, 100 W, 50 %, 1200 MHz, 250 W\n"
        + "0, 0001/01/01 00:00:00.000, 100 W, 50 %, 1200 MHz, 250 W\n"
        + "0, 2026-11-24T13:00:02, 100 W, 50 %, 1200 MHz, 250 W\n"  # ISO without a zone is fine
        + row(0, 3)
    )
    log = read_nvidia_smi_log(write(tmp_path, text))
    assert [(p.code, p.path) for p in log.problems] == [
        ("bad-value", "line 3, timestamp"),
        ("bad-value", "line 4, timestamp"),
    ]
    assert [s.line for s in log.samples[0]] == [2, 5, 6]


def test_index_must_be_ascii_digits(tmp_path: Path) -> None:
    text = HEADER + row(0, 0) + row(0, 1).replace("0,", "²,", 1) + row(0, 2).replace("0,", "-1,", 1) + row(0, 3)
    log = read_nvidia_smi_log(write(tmp_path, text))
    assert [(p.code, p.path) for p in log.problems] == [("bad-value", "line 3, index"), ("bad-value", "line 4, index")]


@pytest.mark.slow
def test_problems_are_capped_in_line_order_across_blocks(tmp_path: Path) -> None:
    bad = [row(0, k, power="x W") for k in range(3 * MAX_REPORTED_PROBLEMS)]
    text = HEADER + row(1, 0) + row(1, 1) + "".join(bad) + "0, 2026\n"
    for block in (50, 1 << 20):
        log = read_nvidia_smi_log(write(tmp_path, text), block_bytes=block)
        lines = [int(p.path.split(",")[0][5:]) for p in log.problems[:-1]]
        assert lines == list(range(4, 4 + MAX_REPORTED_PROBLEMS))
        assert log.problems[-1].code == "more-problems"


def test_repeated_column_names_the_column(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        read_nvidia_smi_log(write(tmp_path, "index, timestamp, power.draw [W], index\n"))
    assert [(p.code, p.path) for p in info.value.problems] == [("duplicate-column", "line 1, index")]


def test_points_of_a_log_read_in_small_blocks(tmp_path: Path) -> None:
    text = HEADER + "".join(row(0, k, power=f"{100 + 10 * k} W") for k in range(6))
    f = write(tmp_path, text)
    (point,) = points_from_smi(read_nvidia_smi_log(f, block_bytes=16), [JobRun("A", (0,), 50)], "v100").points
    # 100..150 W at 1 s: trapezoids (105+115+125+135+145) = 625 J over 5 s = 125 W; 50 steps / 5 s
    assert (point.power_w, point.energy_j, point.steps_per_s) == (125.0, 625.0, 10.0)


def test_line_blocks_are_whole_lines_and_count_them(tmp_path: Path) -> None:
    f = write(tmp_path, b"\xef\xbb\xbfab\ncdefgh\n\nij")
    blocks = list(line_blocks(f, block_bytes=3))
    assert b"".join(b for _, b in blocks) == b"ab\ncdefgh\n\nij"
    assert all(b.endswith(b"\n") for _, b in blocks[:-1])
    assert [n for n, _ in blocks] == [1 + b"".join(b for _, b in blocks[:k]).count(b"\n") for k in range(len(blocks))]


def test_line_blocks_name_the_line_of_bad_utf8_in_a_later_block(tmp_path: Path) -> None:
    f = write(tmp_path, b"a,b\n" * 10 + b"x\xffy\n")
    with pytest.raises(InputError) as info:
        list(line_blocks(f, block_bytes=8))
    (problem,) = info.value.problems
    assert (problem.code, problem.path) == ("not-utf8", "line 11")
    assert "byte offset 41" in problem.message
