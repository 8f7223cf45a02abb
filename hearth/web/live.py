"""The live map: what runs now, pushed to every open page as server-sent events.

One task per server looks every `poll_s` at what can change (the live state files, the queue,
the audit's `data_version`); when any did, it builds the snapshot once (`hearth state` plus
pending approvals and today's totals) and hands it to every subscriber. A page's script turns
each `state` event into htmx refreshes of its parts; /api/events is the same stream for scripts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.clock import stamp
from hearth.audit import runs
from hearth.audit.reader import Changes
from hearth.dispatch.settle import settle_dead_runs
from hearth.leash.budget import Budget, load_budget
from hearth.report import active_runs
from hearth.run.profiles import load_profile
from hearth.web.config import WebConfig
from hearth.web.numbers import live_numbers
from hearth.web.reader import Reader

KEEPALIVE_S = 15.0


def snapshot(config: WebConfig, reader: Reader) -> dict[str, Any]:
    """What the overview shows, as /api/state returns it."""
    settle_dead_runs(config.settings)
    state = active_runs(config.settings)
    now = datetime.now(UTC)
    budget = budget_of(config)
    state["active"] = [_enriched(run, config, reader, now, budget) for run in state["active"]]
    state["pending_approvals"] = len(reader.pending_approvals(stamp(now)))
    state["today"] = reader.today(now)
    return state


def budget_of(config: WebConfig) -> Budget | None:
    """The budgets in force, or None when budget.toml is broken (`hearth doctor` names why)."""
    try:
        return load_budget(config.settings.config_dir, config.settings.daily_tokens)
    except Exception:  # a broken budget file is doctor's to report; the map shows no share
        return None


def _enriched(
    run: dict[str, Any], config: WebConfig, reader: Reader, now: datetime, budget: Budget | None
) -> dict[str, Any]:
    """A live run plus what the audit knows: when it started, its goal, its iteration cap, its
    numbers so far (hearth.web.numbers)."""
    row = runs.header(reader, run["id"]) or {}
    started = row.get("started_at")
    elapsed = (now - datetime.fromisoformat(started.replace("Z", "+00:00"))).total_seconds() if started else None
    agent = run.get("agent_name") or row.get("agent_name") or "default"
    numbers = live_numbers(reader, run["id"], now, budget, agent) if started else None
    return {
        **run,
        # a run suspended for a person has no state file: its iteration is the audit's
        "iteration": run.get("iteration") or (numbers or {}).get("iteration") or 0,
        "agent_name": agent,
        "model": run.get("model") or row.get("model"),
        "label": run.get("label") or row.get("label"),
        "goal": (row.get("goal") or "")[:240],
        "mode": row.get("mode"),
        "started_at": started,
        "elapsed_s": round(elapsed, 1) if elapsed is not None else None,
        "max_iterations": iteration_cap(config, reader.request_body(run["id"]), agent),
        "numbers": numbers,
    }


def iteration_cap(config: WebConfig, body: str | None, agent: str) -> int:
    """The request's cap, else its profile's, else the host's: the order the run resolves it in."""
    asked = json.loads(body).get("max_iterations") if body else None
    if asked:
        return int(asked)
    try:
        profile = load_profile(config.settings.config_dir, agent).max_iterations
    except Exception:  # a broken profile is the run's to report; the map shows the host default
        profile = None
    return profile or config.settings.max_iterations


class Live:
    def __init__(self, config: WebConfig, reader: Reader) -> None:
        self.config, self.reader = config, reader
        self.version = 0
        self.current: dict[str, Any] = {}
        self._subscribers: set[asyncio.Queue[str | None]] = set()
        self._signature: tuple[Any, ...] | None = None
        self._changes = Changes(config.settings.audit_path)

    def signature(self) -> tuple[Any, ...]:
        """Cheap to take: directory listings with times, and the audit's commit counter."""
        settings = self.config.settings
        dirs = (settings.runs_state_dir, settings.queue_dir / "claimed")
        return (*(_listing(d) for d in dirs), _changed(settings.queue_dir), self._changes.version())

    async def refresh(self) -> bool:
        """Rebuild and publish the snapshot if anything changed; whether it did."""
        signature = self.signature()
        if signature == self._signature:
            return False
        self._signature = signature
        self.current = await asyncio.to_thread(snapshot, self.config, self.reader)
        self.version += 1
        self.current["version"] = self.version
        self._publish(_event("state", self.current))
        return True

    async def run(self) -> None:
        while True:
            with contextlib.suppress(Exception):  # a torn read now is whole on the next look
                await self.refresh()
            await asyncio.sleep(self.config.poll_s)

    def _publish(self, event: str | None) -> None:
        for queue in list(self._subscribers):
            if queue.full():
                queue.get_nowait()  # a slow page skips to the newest state
            queue.put_nowait(event)

    def close(self) -> None:
        self._publish(None)
        self._changes.close()

    async def stream(self) -> AsyncIterator[str]:
        """The event stream of one client: the current state at once, then every change."""
        queue: asyncio.Queue[str | None] = asyncio.Queue(maxsize=8)
        self._subscribers.add(queue)
        try:
            yield "retry: 2000\n\n" + (_event("state", self.current) if self.current else "")
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
                except TimeoutError:
                    yield ": keepalive\n\n"
                    continue
                if event is None:
                    return
                yield event
        finally:
            self._subscribers.discard(queue)


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


def _changed(directory: Path) -> tuple[int, int] | None:
    """When a directory's names last changed, and which they are: for a queue of 10,000 names,
    one stat and one listing of names, not 10,000 stats (a request arrives and leaves by rename)."""
    try:
        return os.stat(directory).st_mtime_ns, hash(frozenset(os.listdir(directory)))
    except OSError:
        return None


def _listing(directory: Path) -> tuple[tuple[str, int], ...]:
    try:
        with os.scandir(directory) as entries:
            return tuple(sorted((e.name, e.stat(follow_symlinks=False).st_mtime_ns) for e in entries))
    except OSError:
        return ()
