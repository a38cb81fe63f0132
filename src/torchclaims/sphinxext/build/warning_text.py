"""Sphinx's and docutils' own warnings never drive the terminal.

Their messages quote the page they are about (a title whose underline is too
short, a duplicate label, a reference that did not resolve), and a page's text
can come from a record or a script. torchclaims' own warnings pass
``text_safety.for_terminal`` where they are made (``state.warn``); theirs pass
it here, on the handler that writes every warning, after Sphinx has put the
location in (the colour Sphinx adds comes later, as it formats the line).
"""

from __future__ import annotations

import logging

from sphinx.application import Sphinx
from sphinx.util.logging import NAMESPACE, WarningStreamHandler

from ...text_safety import for_terminal


class _TerminalSafe(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        # The message alone (Sphinx's own getMessage adds the location, which it keeps apart).
        record.msg, record.args = for_terminal(logging.LogRecord.getMessage(record)), ()
        location = getattr(record, "location", None)
        if isinstance(location, str):
            record.location = for_terminal(location)
        return True


def setup_warning_text(app: Sphinx) -> None:
    # Sphinx set its handlers up before it loaded any extension; it has no other hook on warnings' text.
    for handler in logging.getLogger(NAMESPACE).handlers:
        if isinstance(handler, WarningStreamHandler):
            handler.addFilter(_TerminalSafe())
