"""Units in measurement files are applied (W/mW/kW, MHz/GHz, s/ms) and implausible power per GPU is refused."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from wattplan.planner.contracts.problems import InputError
from wattplan.planner.profiling.nvidia_smi import read_nvidia_smi_log
from wattplan.planner.profiling.zeus_summary import read_zeus_power_summary

ROOT = Path(__file__).resolve().parents[1]
SMI = ROOT / "tests" / "data" / "nvidia_smi"
ZEUS_V100 = ROOT / "instances" / "sources" / "zeus" / "summary_power_v100.csv"


def _smi_in_milliwatts(text: str, suffix: bool) -> str:
    """``v100_units.csv`` with every power column in mW (header ``[mW]``; values ``200000 mW`` or bare)."""
    lines = text.splitlines()
    out = [lines[0].replace("[W]", "[mW]").replace("clocks.sm [MHz]", "clocks.sm [GHz]")]
    for line in lines[1:]:
        cells = []
        for cell in (c.strip() for c in line.split(",")):
            if cell.endswith(" W"):
                mw = float(cell[:-2]) * 1000
                cell = f"{mw:.0f} mW" if suffix else f"{mw:.0f}"
            elif cell.endswith(" MHz"):
                cell = f"{float(cell[:-4]) / 1000:g} GHz"
            cells.append(cell)
        out.append(", ".join(cells))
    return "\n".join(out) + "\n"


def _samples(path: Path) -> dict[int, list[tuple[float, float, float | None, float | None, float | None]]]:
    log = read_nvidia_smi_log(path)
    return {
        g: [(s.t_s, s.power_w, s.sm_clock_mhz, s.power_limit_w, s.max_limit_w) for s in rows]
        for g, rows in log.samples.items()
    }


@pytest.mark.parametrize("suffix", [True, False], ids=["values-with-mW", "bare-values"])
def test_a_log_in_milliwatts_reads_as_the_same_watts(tmp_path: Path, suffix: bool) -> None:
    text = (SMI / "v100_units.csv").read_text()
    mw = tmp_path / "mw.csv"
    mw.write_text(_smi_in_milliwatts(text, suffix))
    assert "[mW]" in mw.read_text()
    got, want = _samples(mw), _samples(SMI / "v100_units.csv")
    assert got.keys() == want.keys()
    for g in want:
        assert len(got[g]) == len(want[g])
        for a, b in zip(got[g], want[g], strict=True):
            assert a == pytest.approx(b)
    assert max(p for rows in got.values() for _, p, *_ in rows) <= 300.0


def test_a_value_suffix_wins_over_the_header(tmp_path: Path) -> None:
    """``150000 mW`` under ``power.draw [W]`` is 150 W."""
    text = (SMI / "v100_units.csv").read_text().replace("200.00 W,", "200000 mW,", 1)
    f = tmp_path / "mixed.csv"
    f.write_text(text)
    assert _samples(f) == _samples(SMI / "v100_units.csv")


def test_implausible_power_rows_are_skipped_with_line_and_column(tmp_path: Path) -> None:
    """1e6 W (and 0 W) per GPU is no GPU's power: the row is skipped, its line and column named."""
    lines = (SMI / "v100_units.csv").read_text().splitlines()
    lines[1] = lines[1].replace("200.00 W,", "1000000 W,", 1)
    lines[2] = lines[2].replace("100.00 W,", "0 W,", 1)
    f = tmp_path / "big.csv"
    f.write_text("\n".join(lines) + "\n")
    log = read_nvidia_smi_log(f)
    bad = {(p.code, p.path) for p in log.problems}
    assert ("bad-value", "line 2, power.draw") in bad and ("bad-value", "line 3, power.draw") in bad
    assert all(s.power_w <= 5000 for rows in log.samples.values() for s in rows)


def test_a_log_in_milliwatts_under_a_watts_header_is_refused(tmp_path: Path) -> None:
    """Bare mW values under ``[W]``: every row is 1000x too high, so no sample is left; the file and rows named."""
    text = _smi_in_milliwatts((SMI / "v100_units.csv").read_text(), suffix=False).replace("[mW]", "[W]")
    f = tmp_path / "mislabelled.csv"
    f.write_text(text)
    with pytest.raises(InputError) as caught:
        read_nvidia_smi_log(f)
    assert caught.value.source == str(f)
    paths = [p.path for p in caught.value.problems if p.code == "bad-value"]
    assert "line 2, power.draw" in paths
    assert any("5000" in p.message for p in caught.value.problems)


def test_an_unknown_header_unit_is_refused(tmp_path: Path) -> None:
    text = (SMI / "v100_units.csv").read_text().replace("power.draw [W]", "power.draw [dBm]")
    f = tmp_path / "dbm.csv"
    f.write_text(text)
    with pytest.raises(InputError) as caught:
        read_nvidia_smi_log(f)
    assert [(p.code, p.path) for p in caught.value.problems] == [("unknown-unit", "line 1, power.draw")]


def _zeus(rows: list[list[str]], header: list[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([header, *rows])
    return buf.getvalue()


def _zeus_rows() -> tuple[list[str], list[list[str]]]:
    with ZEUS_V100.open(newline="") as fh:
        header, *rows = list(csv.reader(fh))
    return header, rows[:12]


def test_a_zeus_summary_in_milliwatts_is_refused_naming_the_cell(tmp_path: Path) -> None:
    header, rows = _zeus_rows()
    k = header.index("average_power")
    mw = [[*r[:k], f"{float(r[k]) * 1000:.3f}", *r[k + 1 :]] for r in rows]
    f = tmp_path / "summary_power_v100.csv"
    f.write_text(_zeus(mw, header))
    with pytest.raises(InputError) as caught:
        read_zeus_power_summary(f, "v100")
    assert caught.value.source == str(f)
    assert ("bad-value", "line 2, average_power") in [(p.code, p.path) for p in caught.value.problems]


def test_a_zeus_summary_with_a_milliwatt_header_reads_as_watts(tmp_path: Path) -> None:
    header, rows = _zeus_rows()
    k, lim = header.index("average_power"), header.index("power_limit")
    mw = [[*r[:k], f"{float(r[k]) * 1000!r}", *r[k + 1 :]] for r in rows]
    mw = [[*r[:lim], f"{int(r[lim]) * 1000} mW", *r[lim + 1 :]] for r in mw]
    plain = tmp_path / "w" / "summary_power_v100.csv"
    milli = tmp_path / "mw" / "summary_power_v100.csv"
    plain.parent.mkdir()
    milli.parent.mkdir()
    plain.write_text(_zeus(rows, header))
    milli.write_text(_zeus(mw, [h if h != "average_power" else "average_power [mW]" for h in header]))
    want = read_zeus_power_summary(plain, "v100")
    got = read_zeus_power_summary(milli, "v100")
    assert [(p.job_type, p.setting) for p in got] == [(p.job_type, p.setting) for p in want]
    assert [p.power_w for p in got] == pytest.approx([p.power_w for p in want])
