"""The hub's launcher alone, on a real audit, with a broker that a worker takes from at once: the
worker's claim comes before `start` has returned, the tightest interleaving there is, and the
request is still the worker's to run; a send the broker refuses leaves nothing recorded as sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hearth.audit.requests import FileFacts
from hearth.audit.store import AuditStore
from hearth.dispatch.launchers import LaunchError
from hearth.fleet.launcher import CeleryLauncher
from hearth.queue.intake import build_request
from hearth.queue.ledger import admit
from hearth.remote import hub
from hearth.settings import Settings


class EagerBroker:
    """Celery's `send_task` as a broker whose worker is waiting: the worker claims the request
    (through the hub, on its own connection to the audit) before the send returns; or a broker
    that refuses (`down`)."""

    def __init__(self, audit_path: Path, worker: hub.Worker, *, down: bool = False) -> None:
        self.audit_path, self.worker, self.down = audit_path, worker, down
        self.claims: list[dict[str, Any]] = []

    def send_task(self, name: str, args: list[Any], **options: Any) -> None:
        if self.down:
            raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        with AuditStore(self.audit_path) as audit:
            try:
                self.claims.append(hub.claim(audit, self.worker, args[0]))
            except hub.WorkerRefused as refused:
                self.claims.append({"go": "drop", "why": str(refused)})  # what the worker does with a 404


class Launcher(CeleryLauncher):
    def __init__(self, settings: Settings, broker: EagerBroker) -> None:
        super().__init__(settings)
        self.broker = broker

    def app(self) -> Any:
        return self.broker


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    env = {"HEARTH_STATE_DIR": str(tmp_path / "state"), "HEARTH_CONFIG_DIR": str(tmp_path / "config")}
    settings = Settings.from_env(env)
    settings.state_dir.mkdir(parents=True)
    return settings


def queued(settings: Settings, run_id: str) -> hub.Worker:
    """A request the spawner claimed and recorded, and a worker ready for it."""
    with AuditStore(settings.audit_path) as audit:
        admit(audit, build_request({"id": run_id, "goal": "g"}, file_id=run_id), FileFacts(f"{run_id}.json"), "now")
        token = hub.add_worker(audit, "gpu1", [], "test")
        return hub.identify(audit, f"Bearer {token}")


def test_a_worker_that_claims_the_moment_the_request_reaches_the_broker_runs_it(settings: Settings) -> None:
    broker = EagerBroker(settings.audit_path, queued(settings, "r1"))
    launcher = Launcher(settings, broker)
    launcher.start("r1")
    launcher.close()
    assert broker.claims == [{"go": "run"}]
    with AuditStore(settings.audit_path) as audit:
        row = hub.fleet_run(audit, "r1")
    assert row is not None and row["worker"] == "gpu1" and row["queue"] == "general"


def test_a_send_the_broker_refuses_leaves_nothing_recorded_as_sent(settings: Settings) -> None:
    broker = EagerBroker(settings.audit_path, queued(settings, "r1"), down=True)
    launcher = Launcher(settings, broker)
    with pytest.raises(LaunchError, match="the broker did not take request r1: ConnectionError"):
        launcher.start("r1")
    assert not launcher.alive("r1")  # not taken for a request that waits in the broker
    launcher.close()
    with AuditStore(settings.audit_path) as audit:
        assert hub.fleet_run(audit, "r1") is None
