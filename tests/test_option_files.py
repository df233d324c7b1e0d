"""``wattplan agent --config FILE``: options from a TOML file, named as the flags, the command line over them.

Also the shipped service files: ``deploy/agent.toml`` loads and passes the agent's checks, and
``deploy/wattplan-agent.service`` is a unit ``systemd-analyze verify`` accepts, whose command reads that file.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from wattplan.planner.agent.options import AgentOptions
from wattplan.planner.cli.agent import CONFIG_HEADER
from wattplan.planner.contracts.option_files import config_text, config_values
from wattplan.planner.contracts.problems import InputError

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
runner = CliRunner()


def _problems(path: Path) -> list[str]:
    with pytest.raises(InputError) as err:
        config_values(AgentOptions, path)
    return [str(p) for p in err.value.problems]


def test_a_config_file_gives_the_options_the_flags_give(tmp_path: Path) -> None:
    conf = tmp_path / "agent.toml"
    conf.write_text(
        'policy = "maxq"\nmax-slowdown = 10\nslurm_starts = true\nallow-user = ["ana", "ben"]\n'
        'settings-dir = "settings"\nstate = "/var/lib/wattplan/agent.db"\ntime-limit = 2\n'
    )
    values = config_values(AgentOptions, conf)
    options = AgentOptions.checked(values)
    assert (options.policy, options.max_slowdown, options.slurm_starts) == ("maxq", 10.0, True)
    assert options.allow_user == ("ana", "ben") and options.time_limit_s == 2.0
    assert options.settings_dir == tmp_path / "settings"  # relative: from the file's folder
    assert options.state == Path("/var/lib/wattplan/agent.db")


def test_print_config_writes_a_file_that_reads_back_to_the_same_options(tmp_path: Path) -> None:
    given = AgentOptions.checked(
        {"policy": "wattplan", "max_slowdown": 10, "delta": 0.9, "jct_bound": False, "allow_account": ["ml"],
         "prometheus": "http://p:9090", "settings_dir": tmp_path / "s", "power_cap_w": 8000, "quiet": True}
    )  # fmt: skip
    conf = tmp_path / "agent.toml"
    conf.write_text(config_text(given, CONFIG_HEADER))
    assert AgentOptions.checked(config_values(AgentOptions, conf)) == given
    # every option is in the file, a value or (none) a comment
    text = conf.read_text()
    for opt in AgentOptions.options():
        key = opt.flag.removeprefix("--")
        assert f"\n{key} = " in text or f"\n# {key} =\n" in text, key


def test_the_command_line_overrides_the_file_and_the_rules_see_both(tmp_path: Path) -> None:
    conf = tmp_path / "agent.toml"
    conf.write_text('policy = "maxq"\nmax-jct-increase = 5\nround-s = 600\n')
    result = runner.invoke(app, ["agent", "--config", str(conf), "--print-config", "--max-jct-increase", "7"])
    assert result.exit_code == 0, result.output
    assert 'policy = "maxq"' in result.output and "max-jct-increase = 7.0" in result.output
    assert "round-s = 600.0" in result.output
    # a rule between a file's value and a flag: slurm keeps every node on, --power-save says otherwise
    conf.write_text('policy = "slurm"\n')
    result = runner.invoke(app, ["agent", "--config", str(conf), "--power-save", "--print-config"])
    assert result.exit_code == 2 and "slurm-powersave" in result.output and "Traceback" not in result.output


def test_every_bad_key_and_value_is_named_with_the_file(tmp_path: Path) -> None:
    conf = tmp_path / "agent.toml"
    conf.write_text('max-jct-increase = 2000\nround_s = "long"\nstate = 5\nmax-slowdwn = 10\nthreads = 1.5\n')
    found = _problems(conf)
    assert len(found) == 5, found
    assert any(f"{conf}: max-jct-increase: must be in [0, 1000] %" in p for p in found)
    assert any(f"{conf}: round_s: must be a number" in p for p in found)
    assert any(f"{conf}: state: must be a path" in p for p in found)
    assert any(f"{conf}: max-slowdwn: is not an option; did you mean 'max-slowdown'?" in p for p in found)
    assert any(f"{conf}: threads: must be a whole number" in p for p in found)
    conf.write_text("round-s = 600\nround_s = 700\n")
    assert any("gives the option 'round-s' gives again" in p for p in _problems(conf))
    conf.write_text("round-s = [\n")
    assert any("is not TOML" in p for p in _problems(conf))
    conf.write_bytes(b"policy = '\xff'\n")
    assert any("is not UTF-8" in p for p in _problems(conf))
    assert any("unreadable-config" in p for p in _problems(tmp_path / "missing.toml"))
    result = runner.invoke(app, ["agent", "--config", str(tmp_path / "missing.toml")])
    assert result.exit_code == 2 and "missing.toml" in result.output and "Traceback" not in result.output


def test_the_shipped_config_passes_the_agents_checks() -> None:
    options = AgentOptions.checked(config_values(AgentOptions, DEPLOY / "agent.toml"))
    # the by-job mode, as the README gives it, on a cluster with Slurm's power saving, powering idle nodes down
    rules = options.rules()
    assert options.mode == "by-job" and rules.slurm_starts and rules.max_slowdown == 0.1
    assert (rules.objective, rules.delta) == ("energy", 0.9) and options.jct_increase() is None
    assert options.power_save and options.power_down and options.power_cycle_s == 360.0 and not options.co_locates()
    assert not options.power_up
    assert options.allow_user and not options.dry_run and options.metrics_port == 9464


def test_the_shipped_unit_verifies_and_its_command_reads_the_shipped_config(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    unit = (DEPLOY / "wattplan-agent.service").read_text()
    exec_start = next(line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecStart="))
    argv = shlex.split(exec_start)
    assert argv[0].endswith("/bin/wattplan") and argv[1:3] == ["agent", "--config"]
    # the same unit with the binary and config of this checkout, as an operator's install puts them
    wattplan = Path(sys.executable).with_name("wattplan")
    local = unit.replace(argv[0], str(wattplan)).replace(argv[3], str(DEPLOY / "agent.toml"))
    path = tmp_path / "wattplan-agent.service"
    path.write_text(local)
    checked = subprocess.run([analyze, "verify", str(path)], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0 and not checked.stderr.strip(), checked.stderr
    shown = subprocess.run(
        [str(wattplan), *argv[1:2], "--config", str(DEPLOY / "agent.toml"), "--print-config"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0 and 'mode = "by-job"' in shown.stdout and "power-down = true" in shown.stdout


def test_the_shipped_dashboard_draws_only_the_agents_and_dcgms_metrics() -> None:
    """deploy/grafana-dashboard.json: its panels tile a 24-column grid, each query names metrics that exist.

    Each query names metrics the agent serves or DCGM exports (tests/test_agent_check_live.py also runs every query
    on a real Prometheus). Grafana itself installs from none of the registries CI reaches: its schema is checked by
    :func:`test_the_shipped_dashboard_reads_as_grafanas_dashboard_model`.
    """
    import json
    import re

    from wattplan.planner.agent.metrics import AgentMetrics
    from wattplan.planner.agent.observations import GPU_ENERGY, GPU_POWER, GPU_UTIL

    doc = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
    assert doc["uid"] and doc["schemaVersion"] >= 36 and doc["panels"]
    served = {m.name for m in AgentMetrics().registry.collect()}
    served |= {f"{name}{suffix}" for name in served for suffix in ("_total", "_bucket", "_count", "_sum")}
    known = served | {GPU_ENERGY, GPU_POWER, GPU_UTIL, "up"}
    cells: set[tuple[int, int]] = set()
    assert len({p["id"] for p in doc["panels"]}) == len(doc["panels"])
    for panel in doc["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        mine = {
            (x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not mine & cells, f"{panel['title']} overlaps another panel"
        cells |= mine
        assert panel["targets"] and panel["datasource"]["uid"] == "${DS_PROMETHEUS}"
        for target in panel["targets"]:
            words = set(
                re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", re.sub(r'"[^"]*"|\{[^}]*\}|\[[^\]]*\]', "", target["expr"]))
            )
            metrics = {w for w in words if w.startswith(("wattplan_", "DCGM_")) or w == "up"}
            assert metrics and metrics <= known, (panel["title"], metrics - known)


def test_the_shipped_dashboard_reads_as_grafanas_dashboard_model() -> None:
    """deploy/grafana-dashboard.json read by Grafana's own dashboard model and written back loses nothing.

    ``grafana-foundation-sdk`` holds the dashboard and panel models Grafana generates from its schemas (the CUE
    kinds); a key the schema does not know is dropped when read, so a misspelt or misplaced one shows up here. Only
    ``__inputs``, the import wrapper Grafana's "Import dashboard" reads (not part of the dashboard), is not in the
    model. What the model adds back are its defaults.
    """
    import json

    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models.dashboard import Dashboard

    doc = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
    back = json.loads(json.dumps(Dashboard.from_json(doc), cls=JSONEncoder))
    lost: list[str] = []

    def compare(mine: object, theirs: object, where: str) -> None:
        if isinstance(mine, dict) and isinstance(theirs, dict):
            for key, value in mine.items():
                if key not in theirs:
                    lost.append(f"{where}/{key}")
                else:
                    compare(value, theirs[key], f"{where}/{key}")
        elif isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
            for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
                compare(a, b, f"{where}[{i}]")
        elif mine != theirs:
            lost.append(f"{where}: {mine!r} read as {theirs!r}")

    compare(doc, back, "")
    assert lost == ["/__inputs"], lost
    assert len(back["panels"]) == len(doc["panels"]) and all(p["targets"] for p in back["panels"])
