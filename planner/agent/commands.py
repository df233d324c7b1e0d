"""Running one external command as an argv list (never a shell string) and keeping what it said.

Everything the agent asks of Slurm goes through a :data:`Run` function, so tests can feed recorded answers and
the end-to-end test can point the commands at its throwaway cluster (``SLURM_CONF`` in ``env``).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

NOT_FOUND = 127
"""Exit status of a command whose program is not installed (as a shell reports it)."""
TIMED_OUT = 124
"""Exit status of a command stopped after its time limit (as ``timeout(1)`` reports it)."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    """One command's argv, exit status, standard output and standard error."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        """The command ran and exited 0."""
        return self.returncode == 0


Run = Callable[[Sequence[str]], CommandResult]
"""Runs one argv list and returns its result; never raises for a failing or missing program."""


class SlurmError(Exception):
    """Slurm could not be asked, or answered something the agent cannot read; the message says what and why."""


def run_command(argv: Sequence[str], env: Mapping[str, str] | None = None, timeout_s: float = 60.0) -> CommandResult:
    """Run ``argv`` (no shell) with ``env`` (None: this process's); a missing program or a timeout is a result."""
    args = tuple(argv)
    try:
        done = subprocess.run(
            list(args), env=None if env is None else dict(env), capture_output=True, text=True, timeout=timeout_s
        )
    except FileNotFoundError:
        return CommandResult(args, NOT_FOUND, "", f"{args[0]}: command not found")
    except subprocess.TimeoutExpired:
        return CommandResult(args, TIMED_OUT, "", f"{args[0]}: no answer after {timeout_s:g} s")
    return CommandResult(args, done.returncode, done.stdout, done.stderr)


def runner(env: Mapping[str, str] | None = None, timeout_s: float = 60.0) -> Run:
    """A :data:`Run` with a fixed environment and time limit (``runner({**os.environ, "SLURM_CONF": ...})``)."""

    def run(argv: Sequence[str]) -> CommandResult:
        return run_command(argv, env, timeout_s)

    return run


def slurm_env(manifest: Mapping[str, object], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of an emulated cluster's Slurm commands, from its manifest (``cluster.json``).

    ``base`` (this process's by default) with the manifest's ``slurm_conf`` as ``SLURM_CONF`` and, when its Slurm
    runs from another root filesystem, that Slurm's command wrappers (the manifest's ``slurm_bin``) first on ``PATH``.
    """
    env = dict(os.environ if base is None else base)
    env["SLURM_CONF"] = str(manifest["slurm_conf"])
    slurm_bin = manifest.get("slurm_bin")
    if slurm_bin:
        env["PATH"] = f"{slurm_bin}:{env['PATH']}" if env.get("PATH") else str(slurm_bin)
    return env


def first_line(text: str) -> str:
    """The first non-empty line of ``text`` (Slurm puts its reason there), or ``(no message)``."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return "(no message)"
