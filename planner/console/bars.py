"""The progress bar of a command that counts finished items (runs, replays, policies, instance files).

One layout for every such bar: a label, the bar, ``done/total`` and the items' name, what the caller adds (a
count of failures), the time elapsed and an estimate of the time left (rich's, from the recent rate of items
finished). A replay's own bar, which follows work rather than items, is :func:`planner.sim.render.progress_display`.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def count_bar(
    label: str, items: str, console: Console, *, quiet: bool = False, extra: tuple[ProgressColumn | str, ...] = ()
) -> Progress:
    """``LABEL ━━━━ done/total ITEMS [extra] elapsed ETA left`` on ``console``; nothing shown when ``quiet``.

    ``label`` is console markup (a task's ``description`` field when it is ``"{task.description}"``); ``items``
    is plain text. The ETA is rich's estimate of the seconds left (``-:--:--`` until the first item is done).
    """
    columns: list[Any] = [TextColumn(label), BarColumn(), MofNCompleteColumn()]
    if items:
        columns.append(TextColumn(items))
    columns += [*extra, TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
    return Progress(*columns, console=console, disable=quiet)
