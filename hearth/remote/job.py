"""One request run on this machine and reported to its hub: what a job engine's task runs.

    python -m hearth.remote.job RUN_ID < request.json

A Nomad dispatch or a Kubernetes Job runs this (docs/fleet.md), as tests/remote_launcher.py does
in a subprocess, with the request as the hub recorded it on stdin, this machine's own
HEARTH_STATE_DIR, and the hub's address, this machine's name and its token in the environment
(hearth/remote/client.py's HubAddress). It never opens the hub's audit: what it knows of the hub
comes through the door, and all it says goes back through it.

1. It claims the run at the hub's door: the first claim runs it, a run the hub already knows ran
   is dropped (never run twice), a suspended run whose approval was decided goes on (`resume`,
   the decisions made at the hub copied into this machine's audit).
2. The request goes into this machine's queue as claimed and runs as `hearth agent` runs it, its
   recorder this machine's audit and the outbox (hearth/remote/outbox.py), which a Sender posts to
   the door while the run goes.
3. When the run has ended (or suspended), what it could not say itself follows its events
   (`closing_events`), and the job ends once the outbox is empty, or after DRAIN_S of a hub that
   does not answer (the events stay on this machine's disk; the exit code is then 75).
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from typing import Any

from hearth.errors import HearthError
from hearth.remote.client import HubAddress, HubClient
from hearth.remote.outbox import Outbox, Sender, closing_events, take_decisions
from hearth.settings import Settings

DRAIN_S = 60.0
UNSENT = 75  # EX_TEMPFAIL: the run ended here, its events wait in the outbox


def run_job(settings: Settings, address: HubAddress, run_id: str, body: bytes) -> int:
    """Claim, run and report one request; the run's exit code (0 for a request dropped at the claim)."""
    client = HubClient(address.hub, address.token)
    try:
        go, answer = _claim(client, run_id)
        if go == "drop":
            print(f"hearth job {run_id}: not run: {answer.get('why')}", flush=True)
            return 0
        outbox_path = settings.fleet_outbox or settings.state_dir / "remote" / "outbox.db"
        settings = replace(settings, fleet_outbox=outbox_path)
        if go == "resume":
            take_decisions(settings, run_id, answer.get("approvals") or [])
        else:
            _take(settings, run_id, body)
        return _run_reported(settings, Outbox(outbox_path), client, run_id)
    finally:
        client.close()


def _claim(client: HubClient, run_id: str) -> tuple[str, dict[str, Any]]:
    """The hub's word on the run: run | resume | drop; HearthError when it refuses or does not answer."""
    try:
        status, answer = client.post("/fleet/claim", {"run_id": run_id})
    except OSError as exc:
        raise HearthError(f"the hub at {client.base} does not answer the claim of {run_id}: {exc}") from None
    if status != 200:
        raise HearthError(f"the hub refused the claim of {run_id} (HTTP {status}): {answer.get('error')}")
    go = str(answer.get("go"))
    if go == "wait":
        raise HearthError(f"the hub holds {run_id} back: {answer.get('why')}; its launcher sends it again")
    return go, answer


def _take(settings: Settings, run_id: str, body: bytes) -> None:
    from hearth.atomic import write_atomic
    from hearth.queue.directory import Queue

    settings.writable_state_dir()
    queue = Queue(settings.queue_dir).ensure()
    write_atomic(queue.claimed / f"{run_id}.json", body)  # claimed already: the hub's spawner did


def _run_reported(settings: Settings, outbox: Outbox, client: HubClient, run_id: str) -> int:
    """Run the claimed request with the Sender posting its events; then drain the outbox."""
    from hearth.audit.store import AuditStore
    from hearth.dispatch.claimed import run_claimed

    sender = Sender(outbox, client).start()
    try:
        try:
            code = run_claimed(run_id, settings)
        except HearthError as exc:
            print(f"hearth job {run_id}: {exc}", file=sys.stderr, flush=True)
            code = getattr(exc, "exit_code", 70)
        with AuditStore(settings.audit_path) as audit:
            for event in closing_events(audit, run_id):
                outbox.keep(event)
    finally:
        sender.stop()
    return code if _drained(outbox, client) else UNSENT


def _drained(outbox: Outbox, client: HubClient) -> bool:
    """Send what is left until the outbox is empty; False if the hub did not take it within DRAIN_S."""
    deadline = time.monotonic() + DRAIN_S
    sender = Sender(outbox, client)
    while outbox.waiting():
        try:
            sender.send_once()
        except OSError as exc:
            if time.monotonic() >= deadline:
                print(f"hearth job: {outbox.waiting()} events wait in {outbox.path}: {exc}", file=sys.stderr)
                return False
            time.sleep(0.25)  # the hub restarting: ask again shortly
    return True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m hearth.remote.job RUN_ID < request.json", file=sys.stderr)
        return 2
    try:
        return run_job(Settings.from_env(), HubAddress.from_env(), argv[0], sys.stdin.buffer.read())
    except HearthError as exc:
        print(f"hearth job {argv[0]}: {exc}", file=sys.stderr, flush=True)
        return getattr(exc, "exit_code", 70)


if __name__ == "__main__":
    sys.exit(main())
