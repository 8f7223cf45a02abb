"""Logging: whatever level the operator sets, no record carries a credential value.

hearth itself prints and records; its libraries log (httpcore's debug trace holds every response
header, a reflected credential among them). `install(redactor)` puts a redacting filter in front of
every record of the process: records are made by one factory, and this one renders the message,
redacts it (and the exception text) with the run's redactor, and only then hands it to the
handlers, whichever logger it came from and whichever handler the operator configured. The same
filter sits on every handler of the root logger (a record made without the factory, such as
`logging.makeLogRecord` from a queue or a socket, is redacted where it is written), and an uncaught
exception (the main thread's or any other thread's) is logged through it instead of printed raw.
`configure(level, redactor)` is HEARTH_LOG_LEVEL: stderr at that level (the run's log or the
journal), with the credential store's values redacted from the first record on in every process
(a run installs its own redactor again at admission; the alert sender, a child, gets the values
of its URL).
"""

from __future__ import annotations

import logging
import sys
import threading
import traceback
from collections.abc import Callable
from types import TracebackType
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
    sys.excepthook = _log_uncaught
    threading.excepthook = _log_thread_uncaught
    _installed = True
    _guard_handlers()


def _guard_handlers() -> None:
    """The filter on every handler of the root logger (addFilter keeps one of each)."""
    for handler in logging.getLogger().handlers:
        handler.addFilter(_filter)


def _log_uncaught(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    logging.getLogger("hearth").critical("uncaught exception", exc_info=(kind, value, tb))


def _log_thread_uncaught(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    where = args.thread.name if args.thread else "a thread"
    exc_info = (args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback)
    logging.getLogger("hearth").error("uncaught exception in %s", where, exc_info=exc_info)


def configure(level: str, redactor: Callable[[], Callable[[str], str]] | None = None) -> None:
    """HEARTH_LOG_LEVEL: log to stderr at that level, redacted by `redactor()` (built only when a
    level is set; one that cannot be built leaves the run's own to admission); empty leaves logging
    as Python has it."""
    if not level:
        return
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    redact: Callable[[str], str] | None = None
    if redactor is not None:
        try:
            redact = redactor()
        except Exception:  # an unreadable store: a run still installs its own at admission
            redact = None
    if redact is not None:
        install(redact)
    _guard_handlers()
