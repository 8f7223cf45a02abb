"""A run's steps as a person reads them: what each tool call's state is, approvals before the call
they decided, a tool's own time apart from the person's wait, a decision in words.

The audit records a tool step when the call starts (`verdict = 'started'`, `ok` unset), before any
approval is asked, and closes it after it ran; its approval step comes later and the tool's
duration includes the wait. That order is right for the audit (a killed run still shows the call)
but misleads on a page, so the page reorders and names here, and the audit stays as it is.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

NOT_RUN = ("denied", "invalid", "expired", "unknown")
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
    """The steps in the order they happened for a person: each approval before its tool call, each
    tool call with its `state`, its own `run_ms` and the `wait_ms` it spent waiting for a decision."""
    waiting = {(a["tool"] or "", _canonical(a["arguments"])) for a in approvals if a.get("status") == "pending"}
    out: list[dict[str, Any]] = []
    for step in steps:
        step = dict(step)
        if step.get("kind") == "tool":
            step["state"] = call_state(step, live, waiting)
            step["run_ms"], step["wait_ms"] = step.get("duration_ms"), None
        elif step.get("kind") == "approval":
            detail = _json(step.get("detail"))
            step["decision"] = decision_words(detail, step.get("verdict") or "")
            call = _call_of(out, step)
            if call is not None:
                wait = _wait_ms(detail)
                call["wait_ms"] = wait
                if call.get("duration_ms") is not None and wait is not None:
                    call["run_ms"] = max(0, int(call["duration_ms"]) - wait)
                out.insert(out.index(call), step)
                continue
        out.append(step)
    return out


def _call_of(before: list[dict[str, Any]], approval: dict[str, Any]) -> dict[str, Any] | None:
    """The tool step this approval decided: the latest one before it, of the same tool and
    iteration, that no approval has claimed yet."""
    for step in reversed(before):
        if step.get("kind") == "approval":
            continue
        if (
            step.get("kind") == "tool"
            and step.get("tool") == approval.get("tool")
            and step.get("iteration") == approval.get("iteration")
            and not step.get("_decided")
        ):
            step["_decided"] = True
            return step
    return None


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
