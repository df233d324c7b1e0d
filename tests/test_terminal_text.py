r"""No control character of user text reaches the operator's terminal (issue 41).

An ESC sequence in a job id (``\x1b[2J`` clears the screen, ``\x1b]0;...\x07`` retitles the window), a C1 control
(``\x9b``, CSI on many terminals), a carriage return or a bidirectional override printed raw acts on the terminal
instead of being shown. The command line's consoles (``planner/console/terminal.py``) write each as a visible escape,
whichever way the text reached them: a table cell, a message, a ``Text`` built by hand, a progress bar.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.table import Table
from rich.text import Text
from typer.testing import CliRunner

from cli import app
from wattplan.planner.console.formats import OutputFormat, Section, sections_text
from wattplan.planner.console.terminal import plain, shown, terminal_console

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
WIDE = {"COLUMNS": "1000"}

HOSTILE = "j\x1b[2J\x1b]0;owned\x07\x9b31m\r\b\x7f\u202egnp.exe\u2028x"
"""A job id with an erase-screen and a window-title sequence, a C1 CSI, CR, BS, DEL, a bidi override, a line break."""
SHOWN = "j\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\x0d\\x08\\x7f\\u202egnp.exe\\u2028x"
"""How the terminal shows it: every one of those characters as a visible escape."""
TEXT_SHOWN = "j\\x1b[2J\\x1b]0;owned\\x9b31m\\x7f\\u202egnp.exe\\u2028x"
"""How it shows as a ``rich.text.Text``, which drops BEL, BS and CR itself."""
UNSAFE_OUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2028\u2029]")
"""Characters no line of plain (uncoloured) output may hold."""


def run(*args: object):
    """``wattplan ARGS`` in-process, with a wide terminal."""
    return runner.invoke(app, [str(a) for a in args], env=WIDE)


def assert_safe(text: str) -> None:
    """``text`` holds no control character but tab and newline."""
    found = UNSAFE_OUT.findall(text)
    assert not found, f"control characters reached the terminal: {found!r} in {text!r}"


def hostile_round(tmp_path: Path) -> Path:
    """The default round's first 8 jobs on one node per GPU type, the first job named :data:`HOSTILE`."""
    doc = json.loads((ROOT / "instances" / "default.json").read_text())
    doc["jobs"] = doc["jobs"][:8]
    for job in doc["jobs"]:
        job["current"] = None
    for g in doc["gpu_types"]:
        g["nodes"] = 1
    doc["jobs"][0]["id"] = HOSTILE
    path = tmp_path / "round.json"
    path.write_text(json.dumps(doc))
    return path


# --------------------------------------------------------------------------------------------
# The functions


def test_plain_writes_every_control_character_as_a_visible_escape() -> None:
    assert plain(HOSTILE) == SHOWN
    assert plain("tab\tand\nnewline stay") == "tab\tand\nnewline stay"
    assert plain("\x00\x1f\x85\u200f\u2066\u2069") == "\\x00\\x1f\\x85\\u200f\\u2066\\u2069"
    assert plain("caf\u00e9 \u4e2d") == "caf\u00e9 \u4e2d"  # printable non-ASCII stays


def test_an_undecodable_byte_of_a_file_name_is_shown_as_the_byte() -> None:
    name = b"run\xff.json".decode("utf-8", "surrogateescape")
    assert plain(name) == "run\\xff.json"
    assert plain("\ud800") == "\\ud800"


def test_shown_escapes_markup_and_control_characters() -> None:
    console = terminal_console()
    with console.capture() as captured:
        console.print(f"[bold]{shown('[red]x[/red]' + HOSTILE)}[/]", soft_wrap=True)
    assert captured.get() == "[red]x[/red]" + SHOWN + "\n"


def test_the_console_escapes_text_printed_without_shown() -> None:
    """A string, a table cell, a ``Text`` and a table of ``Text`` cells: the console is the one choke point.

    (``Text`` drops BEL, BS and CR itself: a ``Text`` shows the rest escaped.)
    """
    file = io.StringIO()
    console = type(terminal_console())(file=file, width=400, emoji=False)
    console.print(HOSTILE, markup=False)
    console.print(Text(HOSTILE))
    table = Table("id", "other")
    table.add_row(HOSTILE, Text(HOSTILE))
    console.print(table)
    out = file.getvalue()
    assert_safe(out)
    assert out.count(SHOWN) == 2  # the strings
    assert out.count(TEXT_SHOWN) == 1 and out.count("j\\x1b[2J\\x1b]0;owned") == 4  # and the Texts


def test_a_colour_terminal_gets_only_the_consoles_own_escape_codes() -> None:
    """On a colour terminal rich's styles are escape codes; user text adds none (no OSC, no erase, no CSI 8-bit)."""
    file = io.StringIO()
    console = type(terminal_console())(file=file, width=200, force_terminal=True, color_system="truecolor")
    console.print(Text(HOSTILE, style="bold red"))
    console.print(f"[green]{shown(HOSTILE)}[/]")
    out = file.getvalue()
    assert "\x1b]" not in out and "\x1b[2J" not in out and "\x07" not in out and "\x9b" not in out
    assert re.sub(r"\x1b\[[0-9;]*m", "", out) == f"{TEXT_SHOWN}\n{SHOWN}\n"  # only SGR colour codes besides the text


def test_json_and_csv_answers_carry_no_control_character() -> None:
    rows = [{"job": HOSTILE, "placement": [HOSTILE], "n": 1}]
    sections = [Section("running", rows)]
    for fmt in (OutputFormat.json, OutputFormat.csv):
        assert_safe(sections_text(sections, fmt).replace("\n", ""))
    assert json.loads(sections_text(sections, OutputFormat.json))["running"][0]["job"] == HOSTILE  # lossless
    assert SHOWN in sections_text(sections, OutputFormat.csv)


# --------------------------------------------------------------------------------------------
# The commands


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_plan_prints_a_hostile_job_id_escaped(tmp_path: Path, fmt: str) -> None:
    """The plan's tables (or JSON, CSV) show the id escaped; were such ids refused, the refusal would be too."""
    plan = tmp_path / "plan.json"
    result = run("plan", hostile_round(tmp_path), "--solver", "greedy", "--out", plan, "--format", fmt)
    assert_safe(result.output)
    if result.exit_code == 2:  # an instance check that refuses control characters in ids names it escaped
        assert "Traceback" not in result.output and "internal error" not in result.output
        return
    assert result.exit_code == 0, result.output
    if fmt == "json":
        doc = json.loads(result.stdout)
        assert HOSTILE in [row["job"] for section in ("running", "waiting") for row in doc[section]]
    else:
        assert SHOWN in result.output
    assert HOSTILE in [j["job_id"] for j in json.loads(plan.read_text())["jobs"]]  # files keep the id


def test_a_missing_file_with_escapes_in_its_name_is_named_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("validate", "a\x1b[2Jb.json", "plan\x9b.json")
    assert result.exit_code == 2, result.output
    assert_safe(result.output)
    assert "a\\x1b[2Jb.json" in result.output


def test_a_file_name_with_an_undecodable_byte_is_named_not_a_crash(tmp_path: Path) -> None:
    name = b"no\xffsuch.json".decode("utf-8", "surrogateescape")
    result = run("instance", "check", tmp_path / name)
    assert result.exit_code == 2, result.output
    assert "no\\xffsuch.json" in result.output and "Traceback" not in result.output
