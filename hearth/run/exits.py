"""A run's exit codes and the interruption that ends it: what the CLI needs without the runner."""

from __future__ import annotations

EXIT_CODES = {
    "done": 0,
    "failed": 1,
    "usage": 2,
    "iteration_limit": 3,
    "model_unavailable": 4,
    "denied": 5,
    "tripped": 6,
    "budget_exceeded": 7,
    "rejected": 2,
    "interrupted": 130,
    "leg_limit": 3,  # a marathon that was not done after its last leg
    "no_progress": 3,  # a marathon whose legs stopped changing the workspace
    "internal": 70,
}


class Interrupted(BaseException):
    """SIGTERM or SIGINT arrived; the run is recorded as interrupted."""


def exit_code(status: str) -> int:
    return EXIT_CODES.get(status, EXIT_CODES["internal"])
