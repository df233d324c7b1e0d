"""The power cap over HTTP (``wattplan agent --power-cap-port``): written into the cap file, followed by the agent."""

from __future__ import annotations

import http.client
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.helpers.agent_fakes import FakeSlurm, fake_agent
from wattplan.planner.agent.cap_endpoint import MAX_BODY_BYTES, PATH, CapEndpoint, read_token
from wattplan.planner.agent.options import AgentOptions
from wattplan.planner.agent.power_cap import CapFile
from wattplan.planner.agent.run import cap_token, serve_cap
from wattplan.planner.cli import app
from wattplan.planner.contracts.problems import InputError

TOKEN = "0123456789abcdef0123456789abcdef"


def _token_file(tmp_path: Path, text: str = TOKEN, mode: int = 0o600) -> Path:
    path = tmp_path / "token"
    path.write_text(text + "\n")
    os.chmod(path, mode)
    return path


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[CapEndpoint, Path, list[str]]]:
    cap_file = tmp_path / "cap"
    cap_file.write_text("none\n")
    lines: list[str] = []
    endpoint = CapEndpoint(cap_file, TOKEN, lines.append, 0)
    try:
        yield endpoint, cap_file, lines
    finally:
        endpoint.close()


def _ask(
    endpoint: CapEndpoint, method: str, body: bytes | None = None, token: str | None = TOKEN, path: str = PATH
) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=30)
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    conn.request(method, path, body=body, headers=headers)
    answer = conn.getresponse()
    text = answer.read().decode()
    conn.close()
    return answer.status, text.strip()


def test_a_put_with_the_token_writes_the_cap_file_and_the_file_reader_follows(served) -> None:  # type: ignore[no-untyped-def]
    endpoint, cap_file, lines = served
    reader = CapFile(cap_file)
    reader.read()
    assert reader.cap_w is None
    assert _ask(endpoint, "PUT", b"6.5e3") == (200, "6500")
    assert cap_file.read_text() == "6500\n"
    assert reader.changed() and reader.read() == f"power cap now 6,500 W ({cap_file})" and reader.cap_w == 6500.0
    assert _ask(endpoint, "GET", token=None) == (200, "6500")
    assert _ask(endpoint, "POST", b"none") == (200, "none")
    assert cap_file.read_text() == "none\n" and reader.read() is not None and reader.cap_w is None
    assert lines == ["power cap set to 6500 W over HTTP by 127.0.0.1", "power cap set to none over HTTP by 127.0.0.1"]


@pytest.mark.parametrize("token", [None, "wrong-token-of-enough-length", TOKEN[:-1], TOKEN + "0", ""])
def test_a_put_without_the_token_changes_nothing(served, token: str | None) -> None:  # type: ignore[no-untyped-def]
    endpoint, cap_file, lines = served
    status, _ = _ask(endpoint, "PUT", b"100", token=token)
    assert status == 401
    assert cap_file.read_text() == "none\n"
    assert lines == ["power cap request from 127.0.0.1 refused: no valid token"]


@pytest.mark.parametrize("body", [b"abc", b"-5", b"0", b"nan", b"inf", b"100 200", b"\xff"])
def test_a_bad_value_is_refused_and_named_and_the_cap_kept(served, body: bytes) -> None:  # type: ignore[no-untyped-def]
    endpoint, cap_file, _ = served
    assert _ask(endpoint, "PUT", b"4000") == (200, "4000")
    status, text = _ask(endpoint, "PUT", body)
    assert status == 400 and text.endswith("the cap is unchanged")
    if body != b"\xff":
        assert repr(body.decode()) in text  # names what it holds
    assert cap_file.read_text() == "4000\n"


def test_other_paths_and_long_bodies_are_refused(served) -> None:  # type: ignore[no-untyped-def]
    endpoint, cap_file, _ = served
    assert _ask(endpoint, "PUT", b"100", path="/metrics")[0] == 404
    assert _ask(endpoint, "GET", path="/")[0] == 404
    assert _ask(endpoint, "PUT", b"1" * (MAX_BODY_BYTES + 1))[0] == 413
    assert cap_file.read_text() == "none\n"


def test_a_body_shorter_than_its_length_changes_nothing(served) -> None:  # type: ignore[no-untyped-def]
    endpoint, cap_file, _ = served
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=30) as conn:
        head = f"PUT {PATH} HTTP/1.0\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 5\r\n\r\n12"
        conn.sendall(head.encode())
        conn.shutdown(socket.SHUT_WR)  # "12" of the 5 bytes announced, then the end
        answer = conn.makefile("rb").read().decode()
    assert answer.startswith("HTTP/1.0 400") and "ended before its Content-Length" in answer
    assert cap_file.read_text() == "none\n"


def test_the_token_file_must_be_private_and_hold_a_long_token(tmp_path: Path) -> None:
    assert read_token(_token_file(tmp_path)) == TOKEN
    with pytest.raises(ValueError, match="chmod 600"):
        read_token(_token_file(tmp_path, mode=0o644))
    with pytest.raises(ValueError, match="at least 16 characters"):
        read_token(_token_file(tmp_path, text="short"))
    with pytest.raises(ValueError, match="no spaces"):
        read_token(_token_file(tmp_path, text="0123456789 abcdef0123"))
    with pytest.raises(ValueError, match="cannot read"):
        read_token(tmp_path / "missing")


def test_the_options_need_the_file_and_the_token_and_name_a_bad_token(tmp_path: Path) -> None:
    problems = AgentOptions.problems({"power_cap_port": 8123})
    assert {p.path for p in problems} == {"power_cap_port (--power-cap-port)"}
    assert {p.message for p in problems} == {
        "needs power_cap_file (--power-cap-file)",
        "needs power_cap_token_file (--power-cap-token-file)",
    }
    shared = _token_file(tmp_path, mode=0o640)
    options = AgentOptions(power_cap_port=8123, power_cap_file=tmp_path / "cap", power_cap_token_file=shared)
    with pytest.raises(InputError) as err:
        cap_token(options)
    assert "--power-cap-token-file" in str(err.value.problems[0]) and "0640" in str(err.value.problems[0])
    assert cap_token(AgentOptions(power_cap_port=8123, power_cap_file=tmp_path / "cap", power_cap_token_file=shared,
                                  dry_run=True)) is None  # fmt: skip


def test_the_command_line_refuses_a_shared_token_before_asking_slurm(tmp_path: Path) -> None:
    shared = _token_file(tmp_path, mode=0o644)
    args = ["agent", "--power-cap-port", "8123", "--power-cap-file", str(tmp_path / "cap")]
    result = CliRunner().invoke(app, [*args, "--power-cap-token-file", str(shared)])
    assert result.exit_code == 2, result.output
    assert "--power-cap-token-file" in result.output and "chmod 600" in result.output
    assert "Traceback" not in result.output


def test_the_agent_follows_a_cap_set_over_http_at_its_next_round(tmp_path: Path) -> None:
    cap_file = tmp_path / "cap"
    agent, lines = fake_agent(
        tmp_path, FakeSlurm(), power_cap_file=cap_file, power_cap_w=50_000.0, power_cap_port=1,
        power_cap_token_file=_token_file(tmp_path),
    )  # fmt: skip
    agent.round()
    assert agent.cap_w() == 50_000.0
    agent.cfg.power_cap_port = 0  # any free port
    endpoint = serve_cap(agent.cfg, TOKEN, lines.append)
    try:
        assert _ask(endpoint, "PUT", b"20000") == (200, "20000")
        assert agent._queue_changed()  # polled between rounds: the new cap starts a round at once
        report = agent.round()
        assert f"power cap now 20,000 W ({cap_file})" in report.notes and agent.cap_w() == 20_000.0
        # a port taken: a clear error naming the option
        agent.cfg.power_cap_port = endpoint.port
        with pytest.raises(InputError) as err:
            serve_cap(agent.cfg, TOKEN, lines.append)
        assert "--power-cap-port" in str(err.value.problems[0])
    finally:
        endpoint.close()
    assert "power cap set to 20000 W over HTTP by 127.0.0.1" in lines
