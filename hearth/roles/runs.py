"""A role's run in the runner (hearth/run/runner.py): it takes the role's turn, a heartbeat goes on
with the role's heartbeat conversation, and a strategic review that ends done is stamped.

The heartbeat conversation is the conversation the audit kept of the role's latest ended heartbeat
run (`conversation` table, hearth/run/events.py's MessagesKept): the next heartbeat starts from those
messages byte for byte, system prompt first, and adds its prompt as one user message, so each
request to the model begins with the previous one's messages and Ollama reuses its cache. The
system prompt is never rendered again for the life of the conversation; compaction (in the loop)
is its one routine break, after which the compacted conversation is the one carried on. A role
whose latest heartbeat kept no conversation (its first, or one refused before its loop) starts one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hearth.audit.store import AuditStore
from hearth.roles.home import stamp_review
from hearth.roles.turns import role_turn
from hearth.run.admission import AdmittedRun
from hearth.run.goal import RunPlan
from hearth.run.recorder import Recorder
from hearth.settings import Settings

HEARTBEAT = "heartbeat"
REVIEW = "strategic-review"
UNFINISHED = ("running", "waiting", "rejected")  # never carried on: still going, or no conversation
LOOKED_AT = 20  # the latest heartbeat runs looked at for a conversation to go on with


@contextmanager
def turn(run: AdmittedRun, settings: Settings) -> Iterator[None]:
    """The role's turn held for the run (nothing for a run that is not a role's); a wait is a step."""
    if not run.plan.role:
        yield
        return
    with role_turn(settings, run.plan.role, run.id, lambda line: run.recorder.notice("role", line)):
        yield


def carried(audit: AuditStore, plan: RunPlan, recorder: Recorder) -> list[dict[str, Any]] | None:
    """The heartbeat conversation this run goes on with (recorded as a `heartbeat` step); None
    when the run is not a heartbeat or the role has none yet."""
    if not plan.heartbeat or not plan.role:
        return None
    for earlier in _ended_heartbeats(audit, plan):
        messages, _ = audit.conversation(earlier["id"])
        if messages and messages[0].get("role") == "system":
            line = (
                f"{plan.heartbeat}: continues role {plan.role}'s heartbeat conversation from run {earlier['id']} "
                f"({len(messages)} messages, the same system prompt)"
            )
            recorder.notice(HEARTBEAT, line, data={"continues": earlier["id"], "messages": len(messages)})
            return messages
    recorder.notice(HEARTBEAT, f"{plan.heartbeat}: starts role {plan.role}'s heartbeat conversation")
    return None


def _ended_heartbeats(audit: AuditStore, plan: RunPlan) -> list[dict[str, Any]]:
    """The role's ended heartbeat runs, the last to end first."""
    rows = audit.runs(LOOKED_AT, agent_name=plan.role, kind=HEARTBEAT)
    ended = [row for row in rows if row["id"] != plan.run_id and row["status"] not in UNFINISHED]
    return sorted(ended, key=lambda row: row.get("ended_at") or "", reverse=True)


def ended(plan: RunPlan, root: Path, status: str, recorder: Recorder) -> None:
    """A strategic review that ended done sets last_strategic_review in the role's record."""
    if plan.heartbeat != REVIEW or status != "done":
        return
    now = datetime.now(UTC)
    try:
        stamp_review(root, now)
    except OSError as exc:
        recorder.notice(HEARTBEAT, f"last_strategic_review not set in the record: {exc.strerror or exc}")
        return
    recorder.notice(
        HEARTBEAT, f"strategic review done: last_strategic_review set to {now.isoformat(timespec='seconds')}"
    )
