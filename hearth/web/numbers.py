"""A live run's numbers, from what its steps recorded so far: the run's row gets its totals only
when the run ends, so the run page's header and the map's card read the steps instead.

One aggregate over the run's steps (the `steps(run_id, seq)` index) and its approvals: iteration,
tokens in and out, model time, the last turn's tokens per second, the time spent waiting for a
person (decided waits plus the one still open), and the share of the day's budget when one applies.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hearth.audit import approvals, steps
from hearth.audit.store import Rows
from hearth.leash.budget import Budget, day_start, limits_for, spent


def live_numbers(
    reader: Rows, run_id: str, now: datetime | None = None, budget: Budget | None = None, agent: str = "default"
) -> dict[str, Any]:
    """What a live run has used so far; `waiting_since` is set while a person is being asked."""
    now = now or datetime.now(UTC)
    totals = steps.model_totals(reader, run_id)
    last = steps.last_turn(reader, run_id)
    waited_ms, before_ms, since = 0, 0, None
    for row in approvals.waits_of(reader, run_id):
        asked = _moment(row.get("requested_at"))
        if asked is None:
            continue
        if row.get("status") == "pending":
            since = row["requested_at"]
            waited_ms += int((now - asked).total_seconds() * 1000)
        else:
            decided = _moment(row.get("decided_at"))
            before_ms += int((decided - asked).total_seconds() * 1000) if decided else 0
    waited_ms += before_ms
    turn_s = (last.get("duration_ms") or 0) / 1000
    tokens = int(totals.get("tokens_in") or 0) + int(totals.get("tokens_out") or 0)
    return {
        "iteration": int(totals.get("iteration") or 0),
        "tokens_in": int(totals.get("tokens_in") or 0),
        "tokens_out": int(totals.get("tokens_out") or 0),
        "model_ms": int(totals.get("model_ms") or 0),
        "tokens_per_s": round((last.get("tokens_out") or 0) / turn_s, 1) if turn_s > 0 else None,
        "waited_ms": max(0, waited_ms),
        "waiting_since": since,
        "waited_before_ms": max(0, before_ms),  # the decided waits: a page counts the open one up itself
        "budget": _share(reader, budget, agent, tokens, now) if budget and budget.configured else None,
    }


def _share(reader: Rows, budget: Budget, agent: str, tokens: int, now: datetime) -> dict[str, Any] | None:
    """The tightest budget this run counts against: its tokens, the day's spend, the limit."""
    shares: list[dict[str, Any]] = []
    for limit in limits_for(budget, agent):
        used = spent(reader, day_start(now.astimezone()), limit.agent)
        share = round(100 * tokens / limit.tokens, 1) if limit.tokens else 100.0
        shares.append({"what": limit.what, "limit": limit.tokens, "spent_today": used, "run_share_pct": share})
    return max(shares, key=lambda s: s["spent_today"] / max(1, s["limit"])) if shares else None


def _moment(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
