"""With HEARTH_LOG_LEVEL=DEBUG a credential's value reaches no log line in any hearth process: the
libraries' debug traces, the text of exceptions they raise, and records that bypass the factory."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.alert_support import write_alerts_toml
from tests.cli_support import run_cli_input
from tests.conftest import ROOT, run_cli

VALUE = "hc-debug-canary-7f3e21ab"


class Hangup:
    """A loopback server that reads the request and closes without an answer: the HTTP library raises."""

    def __init__(self) -> None:
        self.requests: list[bytes] = []
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(8)
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._server.getsockname()[1])

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            with client:
                self.requests.append(client.recv(65536))

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def hangup() -> Iterator[Hangup]:
    server = Hangup()
    yield server
    server.close()


def test_a_debug_alert_send_that_fails_logs_no_credential_value(
    state_dir: Path, tmp_path: Path, hangup: Hangup
) -> None:
    assert run_cli_input(["creds", "set", "HOOK", "--host", "127.0.0.1"], VALUE).returncode == 0
    url = f"json://127.0.0.1:{hangup.port}/a?-token={{cred:HOOK}}&+X-Key={{cred:HOOK}}"
    write_alerts_toml(tmp_path / "config", ("hook", url, None))
    done = run_cli("hearth", "alerts", "test", env={"HEARTH_LOG_LEVEL": "DEBUG"})
    assert done.returncode == 1
    assert any(VALUE.encode() in r for r in hangup.requests)  # the value really went out, in the URL and a header
    assert "DEBUG" in done.stderr and "127.0.0.1" in done.stderr  # the libraries' debug trace is there
    assert VALUE not in done.stdout + done.stderr
    assert "[redacted:" in done.stderr


def test_a_record_made_without_the_factory_and_an_uncaught_thread_error_are_redacted() -> None:
    code = f"""
import logging, sys, threading
from agent.safety.redaction import Redactor
from hearth import logs
logs.configure("DEBUG", lambda: Redactor({{"K": {VALUE!r}}}))
record = logging.makeLogRecord({{"name": "queue", "levelno": 10, "levelname": "DEBUG", "msg": "got %s",
                                 "args": ({VALUE!r},)}})
logging.getLogger().handle(record)
def boom():
    raise RuntimeError("header value " + {VALUE!r})
thread = threading.Thread(target=boom, name="sender")
thread.start()
thread.join()
try:
    raise ValueError({VALUE!r})
except ValueError:
    logging.getLogger("lib").debug("failed", exc_info=True)
"""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "got [redacted:K]" in done.stderr
    assert "uncaught exception in sender" in done.stderr and "RuntimeError: header value [redacted:K]" in done.stderr
    assert "ValueError: [redacted:K]" in done.stderr
    assert VALUE not in done.stderr + done.stdout
