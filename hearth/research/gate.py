"""What a research run may still afford, and when it stops gathering: decided by the orchestrator,
never by the model, from what the run's records say it has used.

The hard limits are the request's: `research.max_searches` and `max_pages`, `max_tokens` (else the
profile's; none: not counted) and `timeout_s` (the time the run works, never the time it waits for
a person). A fifth of the tokens and of the time is kept for the synthesis: gathering stops when
either reaches the rest, so the report can always be written.

Gathering stops, after a round (`finished`), when the first of these holds, in this order:

    enough        every sub-question has `per_question` pieces of evidence
    spent         the searches and pages are used, or the tokens or time reached the reserve
    no new        the round added no evidence and found no new source to read
    rounds        `max_rounds` rounds have run
"""

from __future__ import annotations

from dataclasses import dataclass

from hearth.queue.longspec import Research
from hearth.run.goal import RunPlan

RESERVE = 0.2  # the share of the tokens and of the time kept for the synthesis


@dataclass(frozen=True)
class Limits:
    searches: int
    pages: int
    tokens: int  # 0: not counted
    seconds: float  # 0: no time limit
    per_question: int
    rounds: int
    at_once: int
    sub_questions: int

    @classmethod
    def of(cls, spec: Research, plan: RunPlan) -> Limits:
        return cls(
            spec.max_searches,
            spec.max_pages,
            plan.max_tokens,
            plan.timeout_s,
            spec.per_question,
            spec.max_rounds,
            spec.fetches_at_once,
            spec.max_sub_questions,
        )

    def gathering_seconds(self) -> float:
        """The time gathering may take (0: no limit): the rest is the synthesis's."""
        return self.seconds * (1 - RESERVE)


@dataclass(frozen=True)
class Used:
    """What the run has used so far, from its records."""

    searches: int
    pages: int
    tokens: int
    worked_s: float

    def searches_left(self, limits: Limits) -> int:
        return max(0, limits.searches - self.searches)

    def pages_left(self, limits: Limits) -> int:
        return max(0, limits.pages - self.pages)


def tokens_spent(limits: Limits, used: Used, *, gathering: bool = True) -> str:
    """Why the run's own token cap allows no more model calls ('' when it does); gathering stops
    short of it, at the synthesis's reserve."""
    if not limits.tokens or used.tokens < limits.tokens * ((1 - RESERVE) if gathering else 1.0):
        return ""
    kept = "; the rest is kept for the synthesis" if gathering else ""
    return f"{used.tokens:,} of the run's {limits.tokens:,} tokens are used{kept}"


def spent(limits: Limits, used: Used) -> str:
    """Why gathering can afford nothing more ('' when it can)."""
    if tokens_spent(limits, used):
        return tokens_spent(limits, used)
    if limits.seconds and used.worked_s >= limits.gathering_seconds():
        return f"{used.worked_s:.0f} s of {limits.seconds:.0f} s worked; the rest is kept for the synthesis"
    if not used.searches_left(limits) and not used.pages_left(limits):
        return f"all {limits.searches} searches and {limits.pages} pages are used"
    return ""


def finished(limits: Limits, used: Used, counts: list[int], round_no: int, added: int, found: int) -> str:
    """Why gathering stops after round `round_no` ('' when it goes on); `counts` is the evidence
    per sub-question, `added` the evidence this round kept, `found` the new sources it found."""
    if all(n >= limits.per_question for n in counts):
        return f"enough evidence: at least {limits.per_question} for every sub-question"
    why = spent(limits, used)
    if why:
        return why
    if added == 0 and found == 0:
        return f"round {round_no} added no evidence and found no new source"
    if round_no >= limits.rounds:
        return f"{limits.rounds} rounds ran (max_rounds)"
    return ""
