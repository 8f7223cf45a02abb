"""A fleet on one machine for tests and the bench: a real redis-server on a loopback port, a hub
(`hearth serve --watch` with HEARTH_LAUNCHER=celery) and workers (`hearth worker`), each a process
with its own state directory, each worker with its own fake Ollama.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.queue_support import rows, wait_for
from tests.web_support import free_port

REDIS = shutil.which("redis-server")
needs_redis = pytest.mark.skipif(
    REDIS is None, reason="redis-server is not installed (scripts/bootstrap.sh installs it)"
)


class Redis:
    """redis-server on 127.0.0.1:PORT in a directory of its own, persisting every write (appendfsync
    always), so a restart keeps what was queued, as a broker's should. With `tls`, it answers only
    TLS on that port, with a self-signed certificate for 127.0.0.1 (`ca`: what a client must trust)."""

    def __init__(self, root: Path, password: str = "", *, tls: bool = False) -> None:
        self.root, self.port, self.password, self.tls = root, free_port(), password, tls
        self.root.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen[bytes] | None = None
        self.ca = self.root / "broker.pem"
        if tls:
            key = self.root / "broker.key"
            argv = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out"]
            argv += [str(self.ca), "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
            subprocess.run(argv, check=True, capture_output=True)

    @property
    def url(self) -> str:
        return f"{'rediss' if self.tls else 'redis'}://127.0.0.1:{self.port}/0"

    def start(self) -> Redis:
        argv = [str(REDIS), "--bind", "127.0.0.1", "--dir", str(self.root)]
        if self.tls:
            argv += ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", str(self.ca)]
            argv += ["--tls-key-file", str(self.root / "broker.key"), "--tls-auth-clients", "no"]
        else:
            argv += ["--port", str(self.port)]
        argv += ["--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no"]
        if self.password:
            argv += ["--requirepass", self.password]
        log = open(self.root / "redis.log", "ab")  # noqa: SIM115 - the server's own, closed with it
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        wait_for(self.ready, 20, "redis-server to answer")
        return self

    def ready(self) -> bool:
        import redis

        tls = {"ssl": True, "ssl_ca_certs": str(self.ca)} if self.tls else {}
        try:
            return bool(
                redis.Redis(
                    host="127.0.0.1", port=self.port, password=self.password or None, socket_timeout=1, **tls
                ).ping()
            )
        except redis.RedisError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)


def role_env(state: Path, redis: Redis, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HEARTH_STATE_DIR": str(state),
        "HEARTH_CONFIG_DIR": str(state.parent / f"{state.name}-config"),
        "HEARTH_FLEET_BROKER": redis.url,
        "HEARTH_OLLAMA_BACKOFF_S": "0.01",
        "HEARTH_SANDBOX": "none",
        **extra,
    }
    if redis.password:
        secret = state.parent / f"{state.name}-broker-password"
        secret.write_text(redis.password)
        env["HEARTH_FLEET_BROKER_PASSWORD_FILE"] = str(secret)
    return env


class Hub:
    def __init__(self, root: Path, redis: Redis, **env: str) -> None:
        self.state, self.port = root / "hub", free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = role_env(self.state, redis, HEARTH_LAUNCHER="celery", **env)
        self.proc: subprocess.Popen[bytes] | None = None

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "hearth.cli.main", *args]
        return subprocess.run(argv, env=self.env, cwd=ROOT, capture_output=True, text=True, timeout=60)

    def add_worker(self, name: str, *labels: str) -> str:
        argv = ["fleet", "add", name, *(x for label in labels for x in ("--label", label))]
        done = self.cli(*argv)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()[0]

    def start(self) -> Hub:
        self.state.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "hearth.cli.main", "serve", "--port", str(self.port), "--watch"]
        log = open(self.state.parent / "hub.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(argv, env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        wait_for(self._answers, 60, "the hub's command center to answer")
        return self

    def _answers(self) -> bool:
        import httpx

        assert self.proc is not None and self.proc.poll() is None, (self.state.parent / "hub.log").read_text()
        try:
            return httpx.get(self.url + "/healthz", timeout=1).status_code < 500
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        _end(self.proc)

    def run(self, run_id: str) -> dict[str, Any] | None:
        try:
            found = rows(self.state, "select * from runs where id = ?", run_id)
        except sqlite3.Error:  # not made yet
            return None
        return found[0] if found else None

    def sent(self, run_id: str) -> bool:
        """The hub's launcher has sent the request to the broker."""
        try:
            return bool(rows(self.state, "select 1 from fleet_runs where run_id = ?", run_id))
        except sqlite3.Error:  # the audit is not made yet
            return False

    def status(self, run_id: str) -> str | None:
        run = self.run(run_id)
        return None if run is None else str(run["status"])


class Worker:
    def __init__(self, root: Path, name: str, token: str, redis: Redis, hub: Hub, ollama: str, **env: str) -> None:
        self.name, self.state = name, root / name
        token_file = root / f"{name}-token"
        token_file.write_text(token + "\n")
        self.env = role_env(
            self.state,
            redis,
            HEARTH_FLEET_HUB=hub.url,
            HEARTH_FLEET_NAME=name,
            HEARTH_FLEET_TOKEN_FILE=str(token_file),
            OLLAMA_HOST=ollama,
            **env,
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = root / f"{name}.log"

    def start(self) -> Worker:
        self.state.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "hearth.cli.main", "worker"]
        out = open(self.log, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            argv, env=self.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_for(lambda: b"ready." in self.log.read_bytes() or self._died(), 60, f"worker {self.name} to be ready")
        return self

    def _died(self) -> bool:
        assert self.proc is not None
        assert self.proc.poll() is None, self.log.read_text()
        return False

    def kill(self) -> None:
        """What a box that loses power does: the worker and every run it started go at once."""
        assert self.proc is not None
        from hearth.run.state import read_states

        pids = [s.get("pid") for s in read_states(self.state / "state")]
        os.killpg(self.proc.pid, signal.SIGKILL)
        for pid in pids:
            if isinstance(pid, int) and pid > 0:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.proc.wait(20)

    def stop(self) -> None:
        _end(self.proc)

    def outbox(self) -> int:
        """How many events wait in its outbox for the hub."""
        import sqlite3

        conn = sqlite3.connect(f"file:{self.state / 'fleet' / 'outbox.db'}?mode=ro", uri=True)
        try:
            return int(conn.execute("select count(*) from outbox").fetchone()[0])
        finally:
            conn.close()


def _end(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def request(run_id: str, goal: str = "say done", **fields: Any) -> dict[str, Any]:
    return {"version": 1, "id": run_id, "goal": goal, "mode": "auto", **fields}
