"""A chore through hearth as its users run it: `hearth-loop` as a process, with its own state directory.

The figures come from what hearth recorded (the run's row and its model and tool steps in the
audit) and from the tap in front of the model server (bench/chorekit/tap.py). The run is in
bypass mode (nobody is there to approve a command; the sandbox is still the wall), with embeddings
off (recall by text: the bench measures the loop, not an embedding server).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.chorekit.book import Chore, Limits, check
from bench.chorekit.figures import Run, clip
from bench.chorekit.tap import Tap
from hearth.audit.store import AuditStore

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("ollama", "openai")


def split_host(host: str) -> tuple[str, str]:
    """`openai+http://h:p` -> ("openai", "http://h:p"); a bare URL is an Ollama host."""
    kind, plus, url = host.partition("+")
    if not plus:
        kind, url = "ollama", host
    if kind not in KINDS or not url.startswith("http://"):
        raise ValueError(f"host {host!r}: write http://HOST:PORT (Ollama) or openai+http://HOST:PORT")
    return kind, url.rstrip("/")


class HearthSide:
    """Runs chores through `hearth-loop` against `tap`, which forwards to the server `host` names."""

    side = "hearth"

    def __init__(self, host: str, model: str, tap: Tap, limits: Limits) -> None:
        self.kind, _ = split_host(host)
        self.model, self.tap, self.limits = model, tap, limits

    def run(self, chore: Chore, rep: int, scratch: Path) -> Run:
        run = Run(chore.name, self.side, rep)
        workspace, env = scratch / "workspace", _env(scratch)
        chore.prepare(workspace)
        for doc in chore.kb:
            _hearth(["kb", "add", "--text", doc.text, "--title", doc.title, "--source", f"chore:{doc.title}"], env)
        host = f"openai+{self.tap.url}" if self.kind == "openai" else self.tap.url
        argv = ["--host", host, "--model", self.model, "--workspace", str(workspace), "--mode", "bypass"]
        argv += [
            "--tools",
            ",".join(chore.tools),
            "--max-iterations",
            str(self.limits.max_iters),
            "--label",
            chore.name,
        ]
        if self.limits.reply_tokens:
            argv += ["--reply-tokens", str(self.limits.reply_tokens)]
        mark, started = self.tap.mark(), time.monotonic()
        timed_out, stderr = _run_loop([*argv, chore.goal], env, self.limits.timeout_s)
        run.wall_s = round(time.monotonic() - started, 2)
        run.take(self.tap.since(mark))
        read_audit(run, Path(env["HEARTH_STATE_DIR"]) / "audit.db")
        if timed_out:
            run.status = "timeout"
        verdict = check(chore, workspace)
        run.checked = verdict.passed
        run.passed = verdict.passed and run.status == "done"
        run.detail = verdict.detail if run.status else f"no run recorded: {clip(stderr.strip())}"
        return run


def _env(scratch: Path) -> dict[str, str]:
    """The environment without the caller's hearth settings: its own state, no profile, no embedder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTH_") and k != "OLLAMA_HOST"}
    env["PYTHONPATH"] = str(ROOT)
    env["HEARTH_EMBED_MODEL"] = "off"
    env["HEARTH_STATE_DIR"], env["HEARTH_CONFIG_DIR"] = str(scratch / "state"), str(scratch / "config")
    return env


def _hearth(args: list[str], env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "hearth.cli.main", *args], env=env, check=True, capture_output=True, timeout=120
    )


def _run_loop(argv: list[str], env: dict[str, str], timeout_s: float) -> tuple[bool, str]:
    """hearth-loop to its end, or killed with its children at the time limit: (timed out, stderr)."""
    with subprocess.Popen(
        [sys.executable, "-m", "hearth.cli.loop", *argv],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            return False, proc.communicate(timeout=timeout_s)[1]
        except subprocess.TimeoutExpired:
            return True, _stop(proc)
        except BaseException:  # the bench itself stopped (SIGTERM, ^C): the loop, in its own session, with it
            _stop(proc)
            raise


def _stop(proc: subprocess.Popen[str]) -> str:
    """hearth-loop and its children ended (interrupted: hearth records the run's end itself): its stderr."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        return proc.communicate(timeout=60)[1]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.communicate()[1]


def read_audit(run: Run, path: Path) -> None:
    """The run's status, iterations and tokens, its model steps' prompt and cached tokens, its tool calls."""
    if not path.exists():
        return
    with AuditStore.read_only(path) as audit:
        rows = audit.runs(limit=1)
        if not rows:
            return
        row = rows[0]
        steps = audit.steps(row["id"])
    run.status = row["status"] or ""
    run.turns, run.tokens_in, run.tokens_out = (int(row[k] or 0) for k in ("iterations", "tokens_in", "tokens_out"))
    model_steps = [s for s in steps if s["kind"] == "model"]
    run.audit_prompt = [int(s["tokens_in"] or 0) for s in model_steps]
    run.audit_cached = [_cached(s) for s in model_steps]
    run.audit_runaway = [bool(_data(s).get("runaway")) for s in model_steps]
    run.calls = [_call(s) for s in steps if s["kind"] == "tool"]
    run.answer = clip(row.get("summary") or "")
    if row.get("error"):
        run.calls.append({"error": clip(row["error"])})


def _cached(step: dict[str, Any]) -> int | None:
    """A model step's tokens_cached: its column, or its data's (the OpenAI backend records it)."""
    if step.get("tokens_cached") is not None:
        return int(step["tokens_cached"])
    value = _data(step).get("tokens_cached")
    return int(value) if value is not None else None


def _data(step: dict[str, Any]) -> dict[str, Any]:
    data = json.loads(step["data"]) if step.get("data") else {}
    return data if isinstance(data, dict) else {}


def _call(step: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool": step["tool"],
        "arguments": clip(step["arguments"]),
        "ok": bool(step["ok"]),
        "verdict": step["verdict"],
        "output": clip(step["output"] or ""),
    }
