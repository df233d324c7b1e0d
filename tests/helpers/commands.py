"""The command line run in-process, as the tests of its commands run it."""

from __future__ import annotations

from typer.testing import CliRunner

from cli import app

runner = CliRunner()
"""One runner for every call: it keeps no state between them."""


def run(*args: object):
    """``wattplan ARGS...`` through :data:`runner` (each argument as its ``str``); the click result."""
    return runner.invoke(app, [str(a) for a in args])
