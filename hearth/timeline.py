"""A run's steps in the order they happened, for a person: `hearth show` and the run page.

The audit records a tool step when the call starts, before any approval is asked, and its approval
step when a person decides; a run that waits long enough suspends in between and a later process
resumes it. That order is right for the audit (a killed run still shows the call it was making)
but reads wrong: the command listed before the approval that let it run, and before the suspend
and resume it waited through. Here each call a person decided moves to just after its approval
step; the audit stays as it is. A leaf (standard library only), so both edges share it.
"""

from __future__ import annotations

import json
from typing import Any

DECISION = "_decision"  # on a moved call: the approval step that decided it


def in_order(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps as they happened: each decided call right after its approval (a copy of each
    moved call carries that approval step under DECISION); everything else keeps its place."""
    out: list[dict[str, Any]] = []
    for step in steps:
        out.append(step)
        if step.get("kind") != "approval":
            continue
        call = _call_of(out, step)
        if call is not None:
            out.remove(call)
            out.append({**call, DECISION: step})
    return out


def _call_of(before: list[dict[str, Any]], approval: dict[str, Any]) -> dict[str, Any] | None:
    """The tool step this approval decided: the one naming its approval id, else the latest of the
    same tool and iteration before it (an audit from before calls named their approval)."""
    wanted = _field(approval.get("detail"), "approval")
    tools = [s for s in before if s.get("kind") == "tool" and DECISION not in s]
    named = [s for s in tools if wanted and _field(s.get("detail"), "approval") == wanted]
    if named:
        return named[-1]
    same = [
        s for s in tools if (s.get("tool"), s.get("iteration")) == (approval.get("tool"), approval.get("iteration"))
    ]
    return same[-1] if same else None


def _field(text: Any, key: str) -> Any:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return value.get(key) if isinstance(value, dict) else None
