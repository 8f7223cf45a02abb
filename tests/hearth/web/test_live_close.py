"""The live view's own audit connection (hearth/web/live.py) when the server is stopped from another thread."""

from __future__ import annotations

import threading
from pathlib import Path

from hearth.audit.store import AuditStore
from hearth.settings import Settings
from hearth.web.config import WebConfig
from hearth.web.live import Live
from hearth.web.reader import Reader


def test_closing_the_live_view_while_another_thread_reads_its_counter_ends_the_reads_cleanly(state_dir: Path) -> None:
    settings = Settings.from_env()
    settings.writable_state_dir()
    AuditStore(settings.audit_path).close()
    live = Live(WebConfig(settings, "127.0.0.1", 1), Reader(settings.audit_path))
    assert isinstance(live._changes.version(), int)
    reading, seen = threading.Event(), []

    def read() -> None:
        while True:
            value = live._changes.version()
            reading.set()
            if value is None:
                seen.append(value)
                return

    reader = threading.Thread(target=read)
    reader.start()
    assert reading.wait(10)
    live.close()  # from this thread, as a test harness or a signal handler would
    reader.join(10)
    assert not reader.is_alive() and seen == [None]
    assert live._changes.version() is None  # closed stays closed: no connection is opened again
