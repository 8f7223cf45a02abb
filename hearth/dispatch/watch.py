"""`hearth watch`: the queue watched with watchdog (inotify), for hosts without systemd.

The same `Spawner` as `hearth spawn --local`. Files already waiting are taken at start; every
arrival wakes it; a burst is drained pass after pass as run slots free up; a sweep every
`sweep_every_s` settles runs that died under another spawner. While hearth is paused nothing
is claimed (hearth/dispatch/pause.py). With a `Timetable` it also fires the missions a systemd
timer does not (hearth/leash/missions.py), on their schedules, re-reading their files at each sweep.
`stop()` (SIGTERM, SIGINT) ends it: no new claims, and the launcher's `shutdown()` (the local
one: each running run gets SIGTERM and records `interrupted`, request kept).

It also watches the runs' live state: a run that starts waiting for an approval is reported once
per approval (`waiting`), with the commands that decide it, since its own output goes to its log.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from hearth.dispatch.spawner import Spawner
from hearth.errors import HearthError
from hearth.leash.missions import Timetable, fire
from hearth.run.state import read_states

SWEEP_EVERY_S = 10.0
# watchdog holds a "moved out of the directory" event for 0.5 s waiting for its pair, and every
# event behind it; each claim is such a move. For that long after a claim the loop looks itself.
MOVE_BLIND_S = 0.5
BLIND_POLL_S = 0.02
PAUSED_POLL_S = 0.5  # while paused, how often to look whether hearth was resumed
_ARRIVALS = ("created", "moved", "modified", "closed")


class Waker:
    """A self-pipe: any thread (or a signal handler) pokes it, the main loop's wait returns."""

    def __init__(self) -> None:
        self.fd, self._write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def poke(self) -> None:
        try:
            os.write(self._write, b"x")
        except BlockingIOError:
            pass  # already full of pokes: the loop will wake anyway

    def clear(self) -> None:
        try:
            while os.read(self.fd, 4096):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        os.close(self.fd)
        os.close(self._write)


class _Arrivals(FileSystemEventHandler):
    """Wakes the loop for anything that may be a new or finished request in the queue root."""

    def __init__(self, root: Path, wake: Callable[[], None]) -> None:
        self.root = str(root)
        self.wake = wake

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory and event.event_type != "created":
            return  # the root changing because we moved a file out of it is not news
        if event.event_type not in _ARRIVALS:
            return
        where = event.dest_path if event.event_type == "moved" else event.src_path
        if os.path.dirname(os.fsdecode(where)) == self.root:
            self.wake()


class _Changes(FileSystemEventHandler):
    """Wakes the loop for any change in the runs' live state (a run now waits for approval, say)."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self.wake = wake

    def on_any_event(self, event: FileSystemEvent) -> None:
        self.wake()


_APPROVAL = re.compile(r"approval (\S+): ")


class Watch:
    def __init__(
        self,
        spawner: Spawner,
        *,
        sweep_every_s: float = SWEEP_EVERY_S,
        missions: Timetable | None = None,
        now: Callable[[], datetime] = datetime.now,
    ) -> None:
        self.spawner = spawner
        self.sweep_every_s = sweep_every_s
        self.missions, self.now = missions, now
        self.waker = Waker()
        self.stopping = False
        self._told: set[str] = set()  # the approvals already reported as waiting

    def stop(self) -> None:
        """Safe from a signal handler: sets a flag and wakes the loop."""
        self.stopping = True
        self.waker.poke()

    def run(self) -> None:
        root = self.spawner.queue.root
        observer = Observer()
        observer.schedule(_Arrivals(root, self.waker.poke), str(root), recursive=False)
        states = self.spawner.settings.runs_state_dir
        states.mkdir(parents=True, exist_ok=True)
        observer.schedule(_Changes(self.waker.poke), str(states), recursive=False)
        observer.start()  # before the first pass, so nothing lands unseen in between
        try:
            self._loop()
        finally:
            observer.stop()
            observer.join()
            self.spawner.processes.shutdown()
            self.spawner.reap()
            self.waker.close()

    def _loop(self) -> None:
        self.spawner.sweep()
        next_sweep = time.monotonic() + self.sweep_every_s
        blind_until = 0.0
        while not self.stopping:
            self.spawner.reap()
            self.report_waiting()
            self._fire_missions()
            step = self.spawner.drain()
            if step.took:
                blind_until = time.monotonic() + MOVE_BLIND_S
            timeout = max(0.0, next_sweep - time.monotonic())
            if step.retry_in is not None:
                timeout = min(timeout, step.retry_in)
            if time.monotonic() < blind_until:
                timeout = min(timeout, BLIND_POLL_S)
            if step.paused:
                timeout = min(timeout, PAUSED_POLL_S)
            mission_wait = self.missions.wait_s(self.now()) if self.missions else None
            if mission_wait is not None:
                timeout = min(timeout, mission_wait)
            self.spawner.processes.wait([self.waker.fd], timeout)
            self.waker.clear()
            if time.monotonic() >= next_sweep and not self.stopping:
                self.spawner.sweep()
                if self.missions:
                    self.missions.reload(self.now())
                next_sweep = time.monotonic() + self.sweep_every_s

    def report_waiting(self) -> None:
        """Each approval a run waits for, once, with the commands that decide it."""
        for state in read_states(self.spawner.settings.runs_state_dir):
            found = _APPROVAL.match(str(state.get("detail") or ""))
            if state.get("state") != "waiting_approval" or not found or found.group(1) in self._told:
                continue
            self._told.add(found.group(1))
            approval = found.group(1)
            detail = f"{state['detail']}; decide with: hearth approve {approval}  or: hearth deny {approval}"
            self.spawner.report("waiting", str(state.get("run_id")), detail)

    def _fire_missions(self) -> None:
        """Enqueue each mission whose time has come (or record its skip while it is paused)."""
        if self.missions is None:
            return
        report = self.spawner.report
        for mission in self.missions.due(self.now()):
            try:
                done = fire(self.spawner.settings, mission, source="timer", by="hearth watch", now=self.now())
            except HearthError as exc:  # a refused request: said, and the watch goes on
                report("mission_failed", mission.name, str(exc))
                continue
            late = " (its time passed while nothing watched)" if mission.name in self.missions.missed else ""
            self.missions.missed.discard(mission.name)
            report(
                "mission",
                mission.name,
                f"enqueued {done.id}{late}" if done else f"skipped: the mission is paused{late}",
            )
