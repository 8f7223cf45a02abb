"""Logging: whatever level the operator sets, no record carries a credential value.

hearth itself prints and records; its libraries log (httpcore's debug trace holds every response
header, a reflected credential among them). `install(redactor)` puts a redacting filter in front of
every record of the process: records are made by one factory, and this one renders the message,
redacts it (and the exception text) with the run's redactor, and only then hands it to the
handlers, whichever logger it came from and whichever handler the operator configured.
`configure(level)` is HEARTH_LOG_LEVEL: stderr at that level (the run's log or the journal).
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Callable
from typing import Any

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class RedactingFilter(logging.Filter):
    """Renders a record's message and exception with secrets redacted; keeps every record."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        super().__init__()
        self.redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string is the library's bug, not a reason to leak args
            message = str(record.msg)
        record.msg, record.args = self.redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        record.exc_info = None  # the text above is what a formatter prints, redacted
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


_filter = RedactingFilter(lambda text: text)
_installed = False


def install(redact: Callable[[str], str]) -> None:
    """Redact every record made from now on with `redact` (the run's redactor); idempotent."""
    global _installed
    _filter.redact = redact
    if _installed:
        return
    make = logging.getLogRecordFactory()

    def redacting_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        _filter.filter(record)
        return record

    logging.setLogRecordFactory(redacting_factory)
    logging.getLogger().addFilter(_filter)  # records handed to the root logger directly, too
    _installed = True


def configure(level: str) -> None:
    """HEARTH_LOG_LEVEL: log to stderr at that level; empty leaves logging as Python has it."""
    if level:
        logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
