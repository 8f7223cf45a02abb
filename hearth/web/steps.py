"""A run's steps as a person reads them on a page: in the order they happened (hearth/timeline.py,
which `hearth show` shares), what each tool call's state is, a tool's own time apart from the
person's wait (its recorded duration includes the wait), a decision in words.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from hearth.timeline import DECISION, in_order

NOT_RUN = ("denied", "invalid", "expired", "unknown", "repeat")
LIVE_STATUSES = ("running", "queued", "starting", "waiting")


def call_state(step: dict[str, Any], live: bool, waiting: set[tuple[str, str]]) -> str:
    """ok | failed | waiting (for a person) | running | not run | unknown, for a tool step."""
    verdict = step.get("verdict") or ""
    if verdict == "started" or (verdict in ("", "run", "approved") and step.get("ok") is None):
        if (step.get("tool") or "", _canonical(step.get("arguments"))) in waiting:
            return "waiting"
        return "running" if live else "not run"  # a run that ended with the call open never ran it
    if verdict == "unknown":
        return "unknown"
    if verdict in NOT_RUN:
        return "not run"
    return "ok" if step.get("ok") else "failed"


def shown_steps(steps: list[dict[str, Any]], approvals: list[dict[str, Any]], live: bool) -> list[dict[str, Any]]:
    """The steps in the order they happened for a person (hearth/timeline.py: each decided call after
    its approval), each tool call with its `state`, its own `run_ms` and the `wait_ms` it spent
    waiting for a decision."""
    waiting = {(a["tool"] or "", _canonical(a["arguments"])) for a in approvals if a.get("status") == "pending"}
    out: list[dict[str, Any]] = []
    for step in in_order(steps):
        step = dict(step)
        if step.get("kind") == "approval":
            step["decision"] = decision_words(_json(step.get("detail")), step.get("verdict") or "")
        elif step.get("kind") == "tool":
            step["state"] = call_state(step, live, waiting)
            step["run_ms"], step["wait_ms"] = step.get("duration_ms"), None
            decided = step.pop(DECISION, None)
            wait = _wait_ms(_json(decided.get("detail"))) if decided else None
            if wait is not None:
                step["wait_ms"] = wait
                if step.get("duration_ms") is not None:
                    step["run_ms"] = max(0, int(step["duration_ms"]) - wait)
        out.append(step)
    return out


def decision_words(detail: dict[str, Any], status: str) -> str:
    """An approval's outcome as a sentence: who, when, how long it waited, and the note."""
    status = detail.get("status") or status
    by = detail.get("by") or "someone"
    waited = _wait_ms(detail)
    after = f" after {_seconds(waited)}" if waited is not None else ""
    note = f": {detail['note']}" if detail.get("note") else ""
    if status == "approved":
        return f"approved by {by}{after}{note}"
    if status == "denied":
        return f"denied by {by}{after}{note}"
    if status == "expired":
        limit = detail.get("timeout_s")
        within = f" within {_seconds(float(limit) * 1000)}" if limit else ""
        return f"nobody answered{within}, so it was denied"
    if status == "pending":
        return "waiting for a person to approve or deny it"
    return f"{status or 'decided'}{' by ' + by if detail.get('by') else ''}{note}"


def _wait_ms(detail: dict[str, Any]) -> int | None:
    asked, decided = detail.get("requested_at"), detail.get("at")
    if not asked or not decided:
        return None
    try:
        span = _moment(decided) - _moment(asked)
    except ValueError:
        return None
    return max(0, int(span.total_seconds() * 1000))


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _seconds(ms: float) -> str:
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def _json(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _canonical(arguments: Any) -> str:
    """Arguments as one comparable string, however the two records spaced their JSON."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True) if isinstance(arguments, str) else ""
    except ValueError:
        return str(arguments)
