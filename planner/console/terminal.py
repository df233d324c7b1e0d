"""Text from files and the command line, made safe to print through rich.

rich reads ``[...]`` in every string it prints as markup: a job id, file name or CSV cell holding
``[/]`` raises :class:`rich.errors.MarkupError` and ``[red]`` vanishes. Every table cell, title and
message that carries user text goes through :func:`shown` so it reaches the terminal literally.
"""

from __future__ import annotations

from rich.markup import escape


def shown(text: object) -> str:
    """``str(text)`` as rich markup that prints exactly that text (``[`` escaped, nothing interpreted)."""
    return escape(str(text))
