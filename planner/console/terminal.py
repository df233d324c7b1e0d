r"""Text from files and the command line, made safe to print on the operator's terminal.

Two things in user text act on a terminal instead of being shown by it:

* **control characters**: an ESC sequence in a job id (``\x1b[2J``, ``\x1b]0;title\x07``, ``\x1b]52;...``)
  clears the screen, retitles the window, writes the clipboard or forges colours and lines; a C1 control
  (``\x9b`` is CSI on many terminals), a carriage return or a backspace overwrites what was printed before it, and
  a bidirectional override (U+202E) reorders it. :func:`plain` writes each of them as a visible escape
  (``\x1b``, ``\x9b``, ``\u202e``); tab and newline stay, and a byte a file name could not decode (Python's
  ``surrogateescape``, ``\udcff``) is written as the byte, ``\xff`` (printing it raw raised UnicodeEncodeError);
* **rich markup**: rich reads ``[...]`` in every string it prints: a job id, file name or CSV cell holding ``[/]``
  raised :class:`rich.errors.MarkupError` and ``[red]`` vanished. :func:`shown` escapes it as well.

Every table cell, title and message that carries user text goes through :func:`shown`. The command line's consoles
are :class:`TerminalConsole` s (:func:`terminal_console`), the one place text becomes terminal output: every string
they print is made :func:`plain` before its markup is read (so widths stay right), and every piece of text they
write, however it was built (a ``rich.text.Text``, a progress bar's column), is made plain again on its way out.
Lines written without rich (the agent's log) go through :func:`plain`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 but tab and newline, DEL, C1
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional marks, embeddings, overrides and isolates
    "\u2028\u2029"  # line and paragraph separators (a new line to some terminals)
    "\ud800-\udfff]"  # lone surrogates: undecodable bytes of a file name, unprintable as UTF-8
)
"""Characters that act on a terminal, or cannot be written to it, instead of being shown (module docstring)."""


def _escaped(match: re.Match[str]) -> str:
    r"""The visible escape of one unsafe character: ``\x1b``, ``\u202e``; an escaped byte ``\udcff`` as ``\xff``."""
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def plain(text: object) -> str:
    """``str(text)`` with every character of :data:`UNSAFE` written as a visible escape; tab and newline kept."""
    return UNSAFE.sub(_escaped, str(text))


def shown(text: object) -> str:
    """``str(text)`` as rich markup that prints exactly that text: :func:`plain`, and ``[`` escaped."""
    return escape(plain(text))


class TerminalConsole(Console):
    """A rich console whose output holds no control character but its own styles and cursor moves.

    Strings are made :func:`plain` before rich reads their markup (:meth:`render_str`, through which every
    printed string and every table cell given as a string passes). Text that reaches the output by another way
    (a ``Text`` built by a caller or by a progress bar's column) is made plain as it is written
    (:meth:`_render_buffer`; its escape may widen a line that rich laid out without it). The segments rich marks
    as its own control codes (cursor moves of a live display) are written as they are.
    """

    def render_str(self, text: str, **kwargs: Any) -> Text:
        """The string's :class:`~rich.text.Text`, read from its :func:`plain` form."""
        return super().render_str(plain(text), **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        """The buffer as terminal text, every segment that is not rich's own control code made :func:`plain`."""
        return super()._render_buffer(_plain_segments(buffer))


def _plain_segments(buffer: Iterable[Segment]) -> Iterable[Segment]:
    """The segments with their text :func:`plain`, but those rich marks as its own control codes."""
    for text, style, control in buffer:
        yield Segment(text, style, control) if control else Segment(plain(text), _plain_link(style), control)


def _plain_link(style: Style | None) -> Style | None:
    """``style`` with its link's address made :func:`plain` (a link is written inside an escape code)."""
    if style is None or style.link is None or not UNSAFE.search(style.link):
        return style
    return style + Style(link=plain(style.link))


def terminal_console(*, stderr: bool = False) -> TerminalConsole:
    """The console the command line prints on: :class:`TerminalConsole`, ``:name:`` printed as text (no emoji)."""
    return TerminalConsole(stderr=stderr, emoji=False)
