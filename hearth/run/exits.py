"""A run's exit codes and the interruption that ends it: what the CLI needs without the runner."""

from __future__ import annotations

EXIT_CODES = {
    "done": 0,
    "failed": 1,
    "usage": 2,
    "iteration_limit": 3,
    "stuck": 3,  # the model made the same call again and again with nothing changed (agent/repeats.py)
    "model_unavailable": 4,
    "denied": 5,
    "tripped": 6,
    "budget_exceeded": 7,
    "rejected": 2,
    "interrupted": 130,
    "leg_limit": 3,  # a marathon that was not done after its last leg
    "no_progress": 3,  # a marathon whose legs stopped changing the workspace
    "internal": 70,
    # suspended while an approval waits for a person: the request stays claimed, the unit ends
    # cleanly, and the run goes on in a new process once the approval is decided (hearth/run/resume.py)
    "waiting": 0,
}


# every status a run's row may hold: going (running, waiting for a person) or how it ended
RUN_STATUSES = tuple(dict.fromkeys(("running", "waiting", *(s for s in EXIT_CODES if s not in ("usage", "internal")))))


class Interrupted(BaseException):
    """SIGTERM or SIGINT arrived; the run is recorded as interrupted."""


class Suspended(BaseException):
    """A queued run waited long enough for a person: it ends its process and goes on when decided."""

    def __init__(self, approval_id: str) -> None:
        super().__init__(approval_id)
        self.approval_id = approval_id


class Delegated(Suspended):
    """A queued run handed work to a child run: it ends its process and goes on when the child ends."""

    def __init__(self, child_id: str) -> None:
        super().__init__("")
        self.child_id = child_id


def exit_code(status: str) -> int:
    return EXIT_CODES.get(status, EXIT_CODES["internal"])
