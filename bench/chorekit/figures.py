"""One run of one chore on one side (hearth, or the plain loop), and what a set of them adds up to."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.chorekit.tap import Turn

SIDES = ("hearth", "plain")
CLIP = 240  # characters of a call's arguments or result kept for the failure report


@dataclass
class Run:
    chore: str
    side: str
    rep: int
    passed: bool = False  # the check passed and the loop said it was done
    checked: bool = False  # the check passed, however the loop ended (the work done, the end not seen)
    status: str = ""  # hearth's run status; the plain loop's: done, iteration_limit, error, timeout
    detail: str = ""  # the check's verdict, or why the run could not be made
    turns: int = 0  # the loop's iterations (hearth: the audit's)
    tokens_in: int = 0
    tokens_out: int = 0
    wall_s: float = 0.0
    model_calls: int = 0  # chat requests the tap saw (a run may ask more than once per turn)
    ttft_s: float | None = None  # the first call's: the cold prompt
    prompt_tokens: list[int | None] = field(default_factory=list)  # per model call
    evaluated: list[int | None] = field(default_factory=list)  # prompt tokens the server had to evaluate
    cached: list[int | None] = field(default_factory=list)  # prompt tokens it reused from its cache
    shared: list[bool | None] = field(default_factory=list)  # another client used the server before the call
    audit_prompt: list[int] = field(default_factory=list)  # tokens_in of hearth's model steps: each prompt
    audit_cached: list[int | None] = field(default_factory=list)  # tokens_cached of hearth's model steps
    audit_runaway: list[bool] = field(default_factory=list)  # a reply cut while it repeated: no counts came
    calls: list[dict[str, Any]] = field(default_factory=list)  # tool, arguments, ok, output (clipped)
    answer: str = ""  # the last reply (hearth: the run's summary), clipped

    def take(self, turns: list[Turn]) -> None:
        """The tap's figures for this run's model calls."""
        self.model_calls = len(turns)
        self.ttft_s = turns[0].ttft_s if turns else None
        self.prompt_tokens = [t.prompt_tokens for t in turns]
        self.evaluated = [t.evaluated_tokens for t in turns]
        self.cached = [t.cached_tokens for t in turns]
        self.shared = [t.shared for t in turns]

    @property
    def evaluated_after_first(self) -> float | None:
        """Prompt tokens evaluated per model call after the first (the new messages, when the prefix is reused)."""
        later = [n for n in self.evaluated[1:] if n is not None]
        return statistics.fmean(later) if later else None

    @property
    def prompt_after_first(self) -> float | None:
        later = [n for n in self.prompt_tokens[1:] if n is not None]
        return statistics.fmean(later) if later else None

    def row(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "evaluated_after_first": _round(self.evaluated_after_first),
            "prompt_after_first": _round(self.prompt_after_first),
        }


def clip(text: object) -> str:
    shown = str(text)
    return shown if len(shown) <= CLIP else shown[:CLIP] + f"... [{len(shown)} chars]"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def summary(runs: list[Run]) -> dict[str, Any]:
    """What a set of runs of one side adds up to: pass rate, medians, totals."""
    evaluated = [e for r in runs if (e := r.evaluated_after_first) is not None]
    return {
        "runs": len(runs),
        "passed": sum(r.passed for r in runs),
        "pass_rate": round(sum(r.passed for r in runs) / len(runs), 3) if runs else None,
        "checked": sum(r.checked for r in runs),
        "turns_median": _median([r.turns for r in runs]),
        "tokens_in": sum(r.tokens_in for r in runs),
        "tokens_out": sum(r.tokens_out for r in runs),
        "wall_s": round(sum(r.wall_s for r in runs), 1),
        "wall_s_median": _median([r.wall_s for r in runs]),
        "ttft_s_median": _median([r.ttft_s for r in runs if r.ttft_s is not None]),
        "evaluated_after_first_median": _median(evaluated),
        "statuses": dict(sorted(Counter(r.status for r in runs).items())),
    }
