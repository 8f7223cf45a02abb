"""The governor: a daily token budget for the box and per agent profile, and a run's own cap.

    HEARTH_DAILY_TOKENS=N                 the box's daily budget (wins over budget.toml's `daily`)
    $HEARTH_CONFIG_DIR/budget.toml        (on NixOS: services.hearth.budget)
        daily = 2000000                   the box
        [per_agent]
        notes = 100000                    runs of the `notes` profile
    max_tokens                            a request's, else its profile's: one run's cap

Spent is what the audit recorded: every model step's prompt and reply tokens (Ollama's
`prompt_eval_count` and `eval_count`), every compaction's, and every call long work makes outside
a loop (a marathon's `judge` steps, a swarm's `plan` step: hearth/run/long/), since midnight in the host's time
zone; the budget resets at the next midnight. `RunGuard` is checked before each model call of a
run (agent/loop.py's `guard`): it reads the day's spend once, adds the run's own tokens as they
come, and reads the audit again only when near a limit or after `REREAD_S`, so a check costs a
subtraction. `refusal` is the spawner's check at intake: a request that would run under a spent
budget is refused with the time it resets.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from datetime import time as day_time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.clock import stamp
from hearth.audit import steps
from hearth.audit.store import Rows
from hearth.errors import ConfigError, HearthError
from hearth.tomlcheck import read_toml

if TYPE_CHECKING:  # the spawner reads budgets too, and must not load the engine for it
    from agent.loop import Outcome
    from hearth.settings import Settings

BUDGET_FILE = "budget.toml"
MAX_DAILY = 10**12
NEAR = 0.8  # past this share of a limit the guard re-reads the audit before every call
REREAD_S = 30.0  # and at least this often, for what other runs spent meanwhile

Now = Callable[[], datetime]


def local_now() -> datetime:
    return datetime.now().astimezone()


@dataclass(frozen=True)
class Budget:
    daily: int | None = None
    per_agent: dict[str, int] = field(default_factory=dict)

    @property
    def configured(self) -> bool:
        return self.daily is not None or bool(self.per_agent)


def load_budget(config_dir: Path, daily_tokens: int | None = None) -> Budget:
    """The budgets of budget.toml, with HEARTH_DAILY_TOKENS (`daily_tokens`) for the box's;
    ConfigError names the file and field."""
    path = config_dir / BUDGET_FILE
    data = read_toml(path)
    unknown = sorted(set(data) - {"daily", "per_agent"})
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r}; the keys are daily, per_agent")
    daily = _tokens(f"{path}: daily", data["daily"]) if "daily" in data else None
    if daily_tokens is not None:
        daily = _tokens("HEARTH_DAILY_TOKENS", daily_tokens)
    agents = data.get("per_agent", {})
    if not isinstance(agents, dict):
        raise ConfigError(f"{path}: per_agent must be a table of agent = tokens")
    return Budget(daily, {str(k): _tokens(f"{path}: per_agent.{k}", v) for k, v in agents.items()})


def _tokens(where: str, value: Any) -> int:
    if type(value) is not int or not 0 <= value <= MAX_DAILY:
        raise ConfigError(f"{where} must be a whole number of tokens from 0 to {MAX_DAILY}, got {value!r}")
    return value


# -- the day ------------------------------------------------------------------------------------
def day_start(now: datetime) -> datetime:
    """Midnight of `now`'s day, in `now`'s zone (the host's, from local_now)."""
    return datetime.combine(now.date(), day_time(), tzinfo=now.tzinfo)


def resets_at(now: datetime) -> datetime:
    return datetime.combine(now.date() + timedelta(days=1), day_time(), tzinfo=now.tzinfo)


def spent(audit: Rows, since: datetime, agent: str | None = None) -> int:
    """Tokens the audit recorded since `since`, for the box or one agent profile's runs (what a
    model turn, a compaction, a judge and a plan spent: hearth/audit/steps.py's SPENDING)."""
    return steps.tokens_spent(audit, stamp(since), agent)


def spent_by_agent(audit: Rows, since: datetime) -> dict[str, int]:
    return steps.tokens_spent_by_agent(audit, stamp(since))


@dataclass(frozen=True)
class Limit:
    """One budget a run counts against: the box's or an agent's."""

    what: str  # "the daily token budget" | "agent notes's daily token budget"
    tokens: int
    agent: str | None = None


def limits_for(budget: Budget, agent: str) -> list[Limit]:
    found = [Limit("the daily token budget", budget.daily)] if budget.daily is not None else []
    if agent in budget.per_agent:
        found.append(Limit(f"agent {agent}'s daily token budget", budget.per_agent[agent], agent))
    return found


def spent_line(limit: Limit, used: int, now: datetime) -> str:
    return (
        f"{limit.what} of {limit.tokens:,} tokens is spent ({used:,} used today); "
        f"it resets at {resets_at(now).isoformat(timespec='minutes')}"
    )


def refusal(budget: Budget, audit: Rows, agent: str, now: datetime) -> str | None:
    """Why a new request of `agent` must not run now (a spent budget), or None."""
    for limit in limits_for(budget, agent):
        used = spent(audit, day_start(now), limit.agent)
        if used >= limit.tokens:
            return spent_line(limit, used, now)
    return None


def budget_spent(settings: Settings, audit: Rows, agent: str) -> str | None:
    """Why a run of `agent` must not start now (a daily budget of its is spent), or None; a broken
    budget file is doctor's to report, as for a run."""
    try:
        budget = load_budget(settings.config_dir, settings.daily_tokens)
    except HearthError:
        return None
    return refusal(budget, audit, agent, local_now()) if budget.configured else None


class RunGuard:
    """Before each model call: the run's own cap, then each daily budget it counts against."""

    def __init__(
        self,
        budget: Budget,
        audit: Rows,
        agent: str,
        max_tokens: int | None,
        *,
        now: Now = local_now,
        clock: Callable[[], float] = time.monotonic,
        own_so_far: int = 0,
    ) -> None:
        """`own_so_far`: tokens the run spent before this process (a resumed run's), which the
        audit's spend already holds and its outcome starts from."""
        self.limits, self.audit, self.max_tokens, self.now, self.clock = (
            limits_for(budget, agent),
            audit,
            max_tokens,
            now,
            clock,
        )
        self._base: list[int] = []
        self._own_at_read = 0
        self._read_at = 0.0
        if self.limits:
            self._read(own_so_far)

    @property
    def active(self) -> bool:
        return bool(self.limits) or self.max_tokens is not None

    def __call__(self, outcome: Outcome) -> None:
        from agent.loop import BudgetExceeded  # loaded already: the loop is calling

        own = outcome.tokens_in + outcome.tokens_out
        if self.max_tokens is not None and own >= self.max_tokens:
            raise BudgetExceeded(f"stopped at the run's token cap of {self.max_tokens:,} ({own:,} used)")
        if not self.limits:
            return
        estimate = [base + own - self._own_at_read for base in self._base]
        near = any(used >= NEAR * limit.tokens for used, limit in zip(estimate, self.limits, strict=True))
        if near or self.clock() - self._read_at >= REREAD_S:
            self._read(own)
            estimate = self._base
        for used, limit in zip(estimate, self.limits, strict=True):
            if used >= limit.tokens:
                raise BudgetExceeded(f"stopped: {spent_line(limit, used, self.now())}")

    def _read(self, own: int) -> None:
        since = day_start(self.now())
        self._base = [spent(self.audit, since, limit.agent) for limit in self.limits]
        self._own_at_read, self._read_at = own, self.clock()


def overview(budget: Budget, audit: Rows, now: datetime) -> dict[str, Any]:
    """`hearth budget`: spent, limit and what is left today, for the box and per agent."""
    since = day_start(now)
    by_agent = spent_by_agent(audit, since)
    agents = sorted(set(by_agent) | set(budget.per_agent))
    return {
        "since": since.isoformat(timespec="minutes"),
        "resets_at": resets_at(now).isoformat(timespec="minutes"),
        "box": _line(budget.daily, sum(by_agent.values())),
        "agents": [{"agent": a, **_line(budget.per_agent.get(a), by_agent.get(a, 0))} for a in agents],
    }


def _line(limit: int | None, used: int) -> dict[str, int | None]:
    return {"limit": limit, "spent": used, "remaining": None if limit is None else max(0, limit - used)}
