"""The `local` row: a process per run, for hosts without systemd and for development.

Each run is forked from a fork server that has hearth imported already (starting is
milliseconds, not a fresh interpreter), at most `concurrency` at once; its output goes to
<state>/logs/<id>.log. A swarm waiting for its children (live state `waiting`) holds no slot:
otherwise a swarm could wait forever for children that cannot start. The runs are this host's:
`alive` is their flock and `stop` a signal (hearth/dispatch/launchers/host.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hearth.dispatch.launchers import STOP_GRACE_S, LaunchError
from hearth.dispatch.launchers.host import held_here, stop_here
from hearth.settings import Settings

if TYPE_CHECKING:
    from multiprocessing.context import ForkServerContext
    from multiprocessing.process import BaseProcess


def _waiting(state_file: Path) -> bool:
    """The run's live state says it waits for other runs (a swarm for its children)."""
    try:
        return bool(json.loads(state_file.read_bytes()).get("state") == "waiting")
    except (OSError, ValueError, AttributeError):
        return False


class LocalLauncher:
    """Runs as local processes; their output goes to <state_dir>/logs/<id>.log."""

    def __init__(self, settings: Settings, concurrency: int | None = None) -> None:
        self.settings = settings
        self.concurrency = max(1, concurrency or settings.max_local_runs)
        self.logs = settings.state_dir / "logs"
        self._context: ForkServerContext | None = None  # made by the first start: asking alive() or heal() needs none
        self._procs: dict[str, BaseProcess] = {}

    def _server(self) -> ForkServerContext:
        if self._context is None:
            import multiprocessing

            self._context = multiprocessing.get_context("forkserver")
            # The server imports hearth once and warms what every run would set up; a run is then a
            # fork, not a new interpreter. (Each child re-runs `__main__`, the CLI: its commands are
            # preloaded so that is cheap; hearth.cli.main itself is not, or runpy warns about it.)
            self._context.set_forkserver_preload(
                ["hearth.cli.commands", "hearth.dispatch.claimed", "hearth.dispatch.warmup"]
            )
        return self._context

    def free_slots(self) -> int | None:
        if not self._procs:
            return self.concurrency
        waiting = sum(1 for rid in self._procs if _waiting(self.settings.runs_state_dir / f"{rid}.json"))
        return self.concurrency - len(self._procs) + waiting

    def start(self, request_id: str) -> None:
        from hearth.dispatch.claimed import run_child

        self.logs.mkdir(parents=True, exist_ok=True)
        log = str(self.logs / f"{request_id}.log")
        proc = self._server().Process(
            target=run_child, args=(request_id, self.settings, log), name=f"hearth-agent@{request_id}"
        )
        try:
            proc.start()
        except OSError as exc:
            raise LaunchError(f"could not start a local run for {request_id}: {exc}") from None
        self._procs[request_id] = proc

    def wait(self, fds: Sequence[int], timeout: float | None) -> None:
        import multiprocessing.connection

        sentinels = [proc.sentinel for proc in self._procs.values()]
        multiprocessing.connection.wait([*sentinels, *fds], timeout)

    def reap(self) -> list[tuple[str, int | None]]:
        ended = [(rid, proc) for rid, proc in self._procs.items() if not proc.is_alive()]
        for rid, _ in ended:
            del self._procs[rid]
        results = [(rid, proc.exitcode) for rid, proc in ended]
        for _, proc in ended:
            proc.close()
        return results

    def running(self) -> list[str]:
        return list(self._procs)

    def alive(self, run_id: str) -> bool:
        return held_here(self.settings, run_id)

    def gone(self, run_id: str) -> str | None:
        return None  # its process went; settle says so (or resumes it once)

    def stop(self, run_id: str, grace_s: float) -> str:
        return stop_here(self.settings, run_id, grace_s)

    def shutdown(self) -> None:
        """SIGTERM every run started here (each records `interrupted`), wait, then kill what is left."""
        for proc in self._procs.values():
            proc.terminate()
        for proc in self._procs.values():
            proc.join(STOP_GRACE_S)
            if proc.is_alive():
                proc.kill()
                proc.join()

    def heal(self) -> list[str]:
        return []  # nothing to re-arm: `hearth spawn --local` or `hearth watch` takes what is queued

    def live(self) -> list[dict[str, Any]]:
        return []  # the runs write this host's state directory
