"""wattplan's command line: parse, call the planner, render. No math and no solver here.

Installed as the ``wattplan`` console script (``wattplan.planner.cli:main``); ``python cli.py`` and
``python -m wattplan.planner`` run the same app from a checkout. Every solve option's default comes
from :class:`planner.contracts.request.PlanRequest` and every round default from :mod:`planner.contracts.defaults`.

Exit codes: 0 success, 1 a plan or run failed (e.g. the validator rejected a plan),
2 bad input (every problem is listed with the path of the offending field), 130 interrupted,
143 terminated (the solver's processes and scratch files are removed first).

One module per command group; importing this package imports them all, which registers every command:

- ``app``: the typer app, its sub-command groups and ``--version``, :func:`main`, and what every command shares
  (the consoles, the error handling and exit codes, the printers of an answer).
- ``faces``: typer commands' options generated from a face's option record (:mod:`planner.contracts.options`):
  each option's name, flag, default, range and help written once, in the record.
- ``options_common``: the options more than one command takes (choices, help texts, ``Annotated`` option types).
- ``plan``: ``plan``, ``validate``, ``launch`` and ``diff``.
- ``replay``: ``simulate`` and ``frontier``.
- ``bench``: ``bench``.
- ``agent``: ``agent``.
- ``instance``: the ``instance`` sub-commands.
- ``profiles``: the ``profiles`` sub-commands.
- ``cluster``: the ``cluster`` sub-commands.
- ``__main__``: ``python -m wattplan.planner.cli``.

The command modules are imported below in the order of the commands in ``wattplan --help`` (each registers its
commands as it is imported; the sub-command groups come last, in the order ``app`` adds them).
"""

from __future__ import annotations

from wattplan.planner.cli.app import app, main
from wattplan.planner.cli.options_common import SWEEP_ONLY_OPTIONS

# The command modules, in the order of their commands in ``wattplan --help`` (each registers its own as it loads).
# isort: off
from wattplan.planner.cli import plan, replay, bench, agent, instance, profiles, cluster  # noqa: F401

# isort: on
from wattplan.planner.cli.replay import PROGRESS_MODE_HINT

__all__ = ["PROGRESS_MODE_HINT", "SWEEP_ONLY_OPTIONS", "app", "main"]
