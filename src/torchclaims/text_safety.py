"""What text from data may hold where it is shown: the one place for these rules.

Claim records, results files and script output come from people we do not
know. Shown as they are, some characters act instead of reading: bidirectional
controls reorder what follows them (the "Trojan Source" controls), zero-width
characters and the byte-order mark hide inside a name so that two differ
unseen, line separators break a title, and on a terminal an escape sequence
erases lines or writes the clipboard (OSC 52) and a BEL rings. So:

- ``shown``: every text a record or a page holds. Invisible format characters
  (Unicode category Cf: bidi controls, zero-width characters, the BOM) and
  control characters other than tab and newline become U+FFFD, so a reader
  sees that something was there; line and paragraph separators become spaces.
  One character for one, so a reStructuredText title keeps its underline.
- ``one_line``: a title or a label: ``shown``, with every run of white space
  (newlines included) one space.
- ``quoted``: a label written by whoever submitted a file, shown as their words.
- ``for_terminal``: a console line. Each control character but tab and newline
  is written as its escape (``\\x1b``), whatever put it there; ``guarded``
  applies it to everything the CLI prints.
"""

from __future__ import annotations

import io
import re
import sys
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager

REPLACEMENT = "\ufffd"
_KEPT_CONTROLS = "\t\n"
_SEPARATORS = "\u2028\u2029"  # line and paragraph separator (categories Zl and Zp)
# C0 and C1 controls and DEL, but tab and newline: what a terminal acts on.
_TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SPACES = re.compile(r"\s+")


def _shown_char(char: str) -> str:
    if char in _SEPARATORS:
        return " "
    if char in _KEPT_CONTROLS:
        return char
    return REPLACEMENT if unicodedata.category(char) in ("Cc", "Cf") else char


def shown(text: str) -> str:
    """``text`` with nothing in it that acts instead of reading (see the module's rules)."""
    if text.isascii() and text.isprintable():  # the common case: nothing to look at character by character
        return text
    return "".join(map(_shown_char, text))


def one_line(text: str) -> str:
    """A title or label as shown: ``shown``, on one line, without white space at its ends."""
    return _SPACES.sub(" ", shown(text)).strip()


def quoted(label: str) -> str:
    """A submitter's label in quotation marks (its own marks made plain), so it never reads as the site's words."""
    return "“" + one_line(label).replace("“", '"').replace("”", '"') + "”"


def for_terminal(text: str) -> str:
    """``text`` with each control character a terminal would act on written as its escape."""
    return _TERMINAL_CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class _EscapingStream(io.TextIOBase):
    """A text stream that writes into ``inner`` what ``for_terminal`` leaves of each write."""

    def __init__(self, inner):
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(for_terminal(text))
        return len(text)

    def flush(self) -> None:
        self._inner.flush()

    def isatty(self) -> bool:
        return self._inner.isatty()

    def fileno(self) -> int:
        return self._inner.fileno()

    @property
    def encoding(self):
        return getattr(self._inner, "encoding", "utf-8")


@contextmanager
def guarded() -> Iterator[None]:
    """While inside, everything written to ``sys.stdout`` and ``sys.stderr`` passes ``for_terminal``."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _EscapingStream(saved[0]), _EscapingStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
