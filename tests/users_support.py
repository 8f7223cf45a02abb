"""A hearth with users and two agent profiles, for the doors' tests: who may do what is the table
`EXPECTED` says, and each door is asked the same questions."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hearth.audit import approvals
from hearth.audit.store import AuditStore, RunRecord, new_run_id
from hearth.queue.intake import build_request
from hearth.queue.submit import submit
from hearth.settings import Settings
from hearth.users import roster

PROFILES = ("builder", "secret")
ACTS = ("launch", "approve", "stop")
# name -> role and memberships: ada launches and approves in builder, bob only approves there,
# vic is a viewer, off an operator of every profile who is disabled, own an owner
PEOPLE: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "ada": ("operator", [("builder", "launch"), ("builder", "approve")]),
    "bob": ("operator", [("builder", "approve")]),
    "vic": ("viewer", []),
    "off": ("operator", [("*", "launch"), ("*", "approve")]),
    "own": ("owner", []),
}


def expected(user: str, act: str, profile: str) -> bool:
    """What the table of memberships above allows (hearth/users/access.py's rules, written out)."""
    if user == "own":
        return True
    if user == "ada":
        return profile == "builder"
    if user == "bob":
        return act == "approve" and profile == "builder"
    return False


@dataclass
class Box:
    settings: Settings
    tokens: dict[str, str] = field(default_factory=dict)  # user -> sign-in token

    def run_waiting(self, profile: str) -> str:
        """A run of `profile` waiting on one approval; the approval's id."""
        run_id = new_run_id()
        with AuditStore(self.settings.audit_path) as audit:
            record = RunRecord(id=run_id, agent_name=profile, model="m", goal="g", mode="auto", status="waiting")
            audit.start_run(record)
            return approvals.ask(audit, run_id, "run_command", {"command": "make"}, "dangerous", timeout_s=600).id

    def status_of(self, approval_id: str) -> str:
        with AuditStore(self.settings.audit_path) as audit:
            found = approvals.find(audit, approval_id)
        assert found is not None
        return found.status

    def queued(self, profile: str) -> str:
        """A request of `profile` waiting in the queue (queued by the shell's owner); its id."""
        obj = {"id": new_run_id(), "goal": "g", "agent_name": profile}
        return submit(build_request(obj, file_id=None).request, self.settings, requested_by="root").id

    def still_queued(self, run_id: str) -> bool:
        return (self.settings.queue_dir / f"{run_id}.json").exists()


def make_box(state_dir: Path) -> Box:
    """The settings of `state_dir` (tests/conftest.py's), its profiles and its people."""
    settings = Settings.from_env()
    for profile in PROFILES:
        directory = settings.config_dir / "agents" / profile
        directory.mkdir(parents=True)
        (directory / "agent.toml").write_text('mode = "auto"\n')
    settings.queue_dir.mkdir(parents=True)
    box = Box(settings)
    with AuditStore(settings.audit_path) as audit:
        for name, (role, rights) in PEOPLE.items():
            box.tokens[name] = roster.add(audit, name, role, by="test")
            for profile, right in rights:
                roster.grant(audit, name, profile, right, by="test")
        roster.set_disabled(audit, "off", True)
    return box
