"""One home each for the atomic writer, the file hash and the replay's defaults (issue 42, item 3).

Two ``write_text_atomic`` of different behaviour (one flushed to disk and named the path in its errors, the
other did neither), four file-SHA-256 helpers, and ``max_rounds=20_000`` / ``delta_max=0.25`` written out in
nine and seven signatures had drifted apart once already. These tests read the source with :mod:`ast`, so a
second copy fails here naming the file and line, and check that the one copy serves every caller.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from wattplan.planner.contracts import defaults
from wattplan.planner.contracts.jsonio import write_bytes_atomic, write_json_atomic, write_text_atomic
from wattplan.planner.contracts.problems import InputError
from wattplan.planner.files.digests import HASH_CHUNK, file_sha256, update_with_file

ROOT = Path(__file__).resolve().parents[1]
WRITERS = {"write_text_atomic", "write_json_atomic", "write_bytes_atomic"}
WRITER_HOME = Path("planner/contracts/jsonio.py")
DIGEST_HOME = Path("planner/files/digests.py")


def source_files() -> list[Path]:
    """Every product Python file: both packages, the API (not its links), ``cli.py`` and the benchmark scripts."""
    files = [*(ROOT / "planner").rglob("*.py"), *(ROOT / "formulations").rglob("*.py")]
    files += (ROOT / "wattplan").glob("*.py")
    return sorted([*files, ROOT / "cli.py", *(ROOT / "benchmarks").glob("*.py")])


def parsed() -> Iterator[tuple[Path, ast.Module]]:
    """Each source file (relative path) with its syntax tree."""
    for path in source_files():
        yield path.relative_to(ROOT), ast.parse(path.read_text(encoding="utf-8"), str(path))


def test_the_atomic_writers_are_defined_once() -> None:
    """``write_text_atomic``, ``write_json_atomic`` and ``write_bytes_atomic`` exist in ``jsonio`` and nowhere else."""
    found = [
        f"{rel}:{node.lineno} defines {node.name}"
        for rel, tree in parsed()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in WRITERS and rel != WRITER_HOME
    ]
    assert not found, "a second atomic writer:\n" + "\n".join(found)


def test_the_cluster_layout_hands_out_the_same_writer() -> None:
    """The emulated cluster's modules import the writers through its layout: the very functions of ``jsonio``."""
    from wattplan.planner.cluster import layout

    assert layout.write_text_atomic is write_text_atomic
    assert layout.write_json_atomic is write_json_atomic


def _reads_whole_file_into_hash(node: ast.Call) -> bool:
    """``hashlib.sha256(x.read_bytes())`` or ``digest.update(x.read_bytes())``: a file hashed outside the home."""
    name = node.func.attr if isinstance(node.func, ast.Attribute) else ""
    return name in {"sha256", "update"} and any(
        isinstance(a, ast.Call) and isinstance(a.func, ast.Attribute) and a.func.attr == "read_bytes" for a in node.args
    )


def _reads_in_chunks(node: ast.Call) -> bool:
    """``iter(lambda: fh.read(n), b"")``: the chunked read of a file hash."""
    return (
        isinstance(node.func, ast.Name)
        and node.func.id == "iter"
        and len(node.args) == 2
        and isinstance(node.args[0], ast.Lambda)
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value == b""
    )


def test_files_are_hashed_in_one_place() -> None:
    """No module but ``planner/files/digests.py`` hashes a file's bytes itself (whole or in chunks)."""
    found = [
        f"{rel}:{node.lineno}: {ast.unparse(node)}"
        for rel, tree in parsed()
        if rel != DIGEST_HOME
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and (_reads_whole_file_into_hash(node) or _reads_in_chunks(node))
    ]
    assert not found, "a file hashed outside planner/files/digests.py:\n" + "\n".join(found)


def test_file_sha256_is_the_sha256_of_the_bytes_across_chunks(tmp_path: Path) -> None:
    """The digest does not depend on the chunking: a file over two chunks hashes as its bytes do."""
    data = bytes(range(256)) * (2 * HASH_CHUNK // 256 + 3)
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()
    combined = hashlib.sha256(b"prefix")
    update_with_file(combined, path)
    assert combined.hexdigest() == hashlib.sha256(b"prefix" + data).hexdigest()


def test_a_replays_identity_hashes_its_inputs_through_the_one_home(tmp_path: Path) -> None:
    """What a saved replay is compared by: every input file's SHA-256 of its bytes, streamed by the one home.

    ``simulate``'s resume (``saved_replay.replay_key``) and ``frontier``'s (``input_digests``) take the same digests;
    a folder's is the SHA-256 of its files' relative names and digests, sorted by name (``dir:`` before it).
    """
    from wattplan.planner.control.saved_replay import replay_key
    from wattplan.planner.control.slurm_replay import SimulatedCluster
    from wattplan.planner.sim.frontier import input_digests, path_sha256
    from wattplan.planner.sim.replay import ReplaySpec

    trace = tmp_path / "q.trace"
    trace.write_bytes(b"job\t1\n" * (HASH_CHUNK // 2))  # three chunks
    spec = ReplaySpec(trace=trace, cluster="v100:8")
    assert input_digests(spec) == {"trace": hashlib.sha256(trace.read_bytes()).hexdigest()}
    assert replay_key(spec, "fifo-max", SimulatedCluster())["inputs"] == input_digests(spec)
    folder = tmp_path / "library"
    (folder / "sub").mkdir(parents=True)
    (folder / "b.csv").write_bytes(b"b")
    (folder / "sub" / "a.csv").write_bytes(b"a")
    lines = "".join(
        f"{name}\0{hashlib.sha256(data).hexdigest()}\n" for name, data in (("b.csv", b"b"), ("sub/a.csv", b"a"))
    )
    assert path_sha256(folder) == "dir:" + hashlib.sha256(lines.encode()).hexdigest()
    assert path_sha256(tmp_path / "gone.trace") == "missing"


@pytest.mark.parametrize("durable", [True, False])
def test_the_writer_serves_outputs_and_the_cluster_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool
) -> None:
    """Parents made, mode 0644 (node scripts read as other users), no temporary file left; fsync only if durable.

    The emulated cluster rewrites its rates and every trainer's progress five times a second: flushing each to
    disk would cost hundreds of fsync calls a second for state nobody needs after a crash.
    """
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    target = tmp_path / "settings" / "deep" / "42.conf"
    write_text_atomic(target, "old\n", durable=durable)
    write_text_atomic(target, "job_id=42\n", durable=durable)
    assert target.read_text() == "job_id=42\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in target.parent.iterdir()] == ["42.conf"]
    assert len(synced) == (2 if durable else 0)


def test_json_is_strict_and_bytes_are_written_as_given(tmp_path: Path) -> None:
    """One JSON form for every caller (finite numbers only); bytes go through the same writer unchanged."""
    write_json_atomic(tmp_path / "a.json", {"b": 1, "a": [0.5]})
    assert (tmp_path / "a.json").read_text() == '{\n "b": 1,\n "a": [\n  0.5\n ]\n}\n'
    with pytest.raises(ValueError, match="not JSON compliant"):
        write_json_atomic(tmp_path / "nan.json", {"x": float("nan")})
    assert not (tmp_path / "nan.json").exists()
    write_bytes_atomic(tmp_path / "b.bin", b"\x00\xff\n")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\xff\n"


def test_an_agent_setting_that_cannot_be_written_names_its_path(tmp_path: Path) -> None:
    """The agent's writer used to raise a bare OSError; the one writer names the path, never the temporary file."""
    (tmp_path / "settings").write_text("a file where the folder should be")
    target = tmp_path / "settings" / "7.conf"
    with pytest.raises(InputError) as err:
        write_text_atomic(target, "job_id=7\n")
    (problem,) = err.value.problems
    assert problem.code == "unwritable-output" and str(target) in problem.message and ".tmp" not in problem.message


def _replay_faces() -> list[tuple[str, Callable[..., Any]]]:
    """Every function and record of the product that takes ``max_rounds`` or ``delta_max``."""
    from wattplan import replay_api
    from wattplan.planner.cli import agent, bench, plan
    from wattplan.planner.cli import replay as cli_replay
    from wattplan.planner.control import session as slurm_session
    from wattplan.planner.control import slurm_replay
    from wattplan.planner.sim import governor, replay, session
    from wattplan.planner.sim import options as sim_options

    faces: list[tuple[str, Callable[..., Any]]] = []
    modules = (plan, cli_replay, bench, agent, sim_options, session, replay_api, replay, governor)
    for module in (*modules, slurm_replay, slurm_session):
        for name, obj in vars(module).items():
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == module.__name__:
                faces.append((f"{module.__name__}.{name}", obj))
    return faces


def _defaults_of(obj: Callable[..., Any]) -> dict[str, Any]:
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def test_every_face_takes_the_replay_defaults_from_one_place() -> None:
    """``max_rounds`` and ``delta_max`` default to :mod:`planner.contracts.defaults` in every signature and record."""
    expected = {"max_rounds": defaults.MAX_ROUNDS, "delta_max": defaults.DELTA_MAX}
    seen: dict[str, int] = dict.fromkeys(expected, 0)
    wrong: list[str] = []
    for where, obj in _replay_faces():
        for name, default in _defaults_of(obj).items():
            if name in expected and default is not None:  # None: no limit (the agent runs until stopped)
                seen[name] += 1
                if default != expected[name]:
                    wrong.append(f"{where}: {name}={default!r}, defaults says {expected[name]!r}")
    assert not wrong, "\n".join(wrong)
    assert seen["max_rounds"] >= 5 and seen["delta_max"] >= 5, seen  # the walk really reached the faces


def test_no_signature_writes_a_replay_default_as_a_number() -> None:
    """A parameter or field named ``max_rounds`` or ``delta_max`` never has a literal default (it drifts)."""
    found: list[str] = []
    for rel, tree in parsed():
        for node in ast.walk(tree):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                pairs = [(node.target.id, node.value)]
            elif isinstance(node, ast.arguments):
                positional = [*node.posonlyargs, *node.args]
                with_default = positional[len(positional) - len(node.defaults) :]
                pairs = [(a.arg, d) for a, d in zip(with_default, node.defaults, strict=True)]
                pairs += [(a.arg, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True) if d is not None]
            else:
                continue
            found += [
                f"{rel}:{value.lineno}: {name} = {ast.unparse(value)}"
                for name, value in pairs
                if name in {"max_rounds", "delta_max"} and isinstance(value, ast.Constant) and value.value is not None
            ]
    assert not found, "write the default as defaults.MAX_ROUNDS / defaults.DELTA_MAX:\n" + "\n".join(found)
