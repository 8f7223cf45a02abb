"""Test support for the command center: the real app on a loopback port, a watcher, a client.

`Center` serves `create_app(config)` with uvicorn in a thread (a real HTTP server on
127.0.0.1:PORT); runs are started by a real `hearth watch` process and talk to the fake Ollama.
`Client` is an httpx client that holds the session cookie, sends the CSRF token and the Origin
a browser would, so a test can also leave either out on purpose.
"""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from hearth.audit.store import AuditStore, RunRecord, immediate
from hearth.settings import Settings
from hearth.web.app import create_app
from hearth.web.config import WebConfig
from hearth.web.security import Throttle
from tests.cli_support import start_watch, stop_watch
from tests.queue_support import rows


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Center:
    """The command center served for real; use as a context manager."""

    def __init__(
        self,
        settings: Settings,
        *,
        tokens: dict[str, str] | None = None,
        tls: tuple[Path, Path] | None = None,
        throttle: Throttle | None = None,
        bound_as: str = "127.0.0.1",
        **options: Any,
    ) -> None:
        """`bound_as`: the address the server is told it listens on (its Host rules follow it); the
        socket itself is always on 127.0.0.1, so a test of the wildcard's rules never leaves loopback."""
        self.port = free_port()
        self.config = WebConfig(settings, bound_as, self.port, tokens, throttle_base_s=0.01, **options)
        self.app = create_app(self.config, throttle)
        certs = {"ssl_keyfile": str(tls[0]), "ssl_certfile": str(tls[1])} if tls else {}
        config = uvicorn.Config(
            self.app, host="127.0.0.1", port=self.port, log_level="error", timeout_graceful_shutdown=2, **certs
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.watch: subprocess.Popen[str] | None = None

    def __enter__(self) -> Center:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "the command center did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.watch is not None:
            stop_watch(self.watch)
        self.app.state.web.live.close()
        self.server.should_exit = True
        self.thread.join(20)

    def start_watch(self, ollama_url: str, **env: str) -> None:
        """Run what lands in the queue, as `hearth watch` does on a host without systemd."""
        self.watch = start_watch({"OLLAMA_HOST": ollama_url, **env})

    def client(self, **headers: str) -> Client:
        return Client(self.url, headers)


class Client(httpx.Client):
    """A browser's manners: the session cookie, its CSRF token and the page's Origin on each POST."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        # a test's throwaway certificate is trusted by nobody: TLS is checked by the server side here
        verify = not url.startswith("https")
        super().__init__(
            base_url=url, headers={"Origin": url, **headers}, timeout=30, follow_redirects=False, verify=verify
        )
        self.csrf = ""

    def session(self) -> dict[str, Any]:
        answer: dict[str, Any] = self.get("/api/session").json()
        self.csrf = answer.get("csrf_token") or ""
        return answer

    def post_json(self, path: str, body: Any, **headers: str) -> httpx.Response:
        if not self.csrf:
            self.session()
        return self.post(path, json=body, headers={"X-CSRF-Token": self.csrf, **headers})

    def post_form(self, path: str, data: dict[str, Any]) -> httpx.Response:
        if not self.csrf:
            self.session()
        return self.post(path, data={"csrf": self.csrf, **data})


def run_status(state_dir: Path, run_id: str) -> str | None:
    """A run's recorded status; None while the audit, its table or the run's row does not exist yet."""
    try:
        found = rows(state_dir, "select status from runs where id = ?", run_id)
    except sqlite3.Error:
        return None
    return found[0]["status"] if found else None


def seed_runs(state_dir: Path, count: int, *, prefix: str = "seed", steps: int = 0, **fields: Any) -> list[str]:
    """Finished runs written straight into the audit (as many as a bench or a pager needs)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    ids = []
    with AuditStore(state_dir / "audit.db") as audit, immediate(audit.conn):
        for i in range(count):
            run_id = f"{prefix}-{i:05d}"
            day = 1 + i % 28
            record = RunRecord(
                id=run_id,
                agent_name=fields.get("agent_name", ["builder", "notes"][i % 2]),
                model=fields.get("model", ["qwen2.5-coder", "llama3.1"][i % 2]),
                goal=fields.get("goal", f"goal number {i} about {'tests' if i % 3 == 0 else 'docs'}"),
                mode="auto",
                source=["cli", "command-center", "timer"][i % 3],
                started_at=f"2026-01-{day:02d}T10:{i % 60:02d}:00.000Z",
            )
            audit.start_run(record)
            for seq in range(steps):
                audit.record_step(
                    run_id, "tool", iteration=seq, tool="read_file", arguments="{}", output="x" * 200, ok=1
                )
            status = fields.get("status", ["done", "done", "failed", "iteration_limit"][i % 4])
            audit.finish_run(run_id, status=status, iterations=3, tokens_in=100, tokens_out=20, duration_ms=1000 + i)
            ids.append(run_id)
    return ids


def wait_for_answer(url: str, headers: dict[str, str]) -> httpx.Response:
    import time

    deadline = time.monotonic() + 20
    while True:
        try:
            return httpx.get(url, headers=headers, timeout=5)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
