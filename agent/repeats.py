"""A call the model makes again with nothing changed since: not run again, said so, and at the third
such call in a row the run ends `stuck`.

Real small models do this when they do not know they are done: a 0.5B model made one failing
`edit_file` five times, a 1.5B one rewrote a correct `hello.py` eleven times, then ran it and
summarised it in every reply until the iteration cap. Nothing a repeat could show is new, and a
repeated command may ask a person to approve the same thing again, so a repeat is answered from the
history instead of being run.

What counts as the same call: the tool and its arguments as the tool takes them (an argument the
tool does not have, or one given as null, is left out: a model that adds "bytes_written": 14 to its
write repeats it). What counts as nothing changed: no call the run had never made came between this
call and the last time it was made. So `pytest`, an edit, `pytest` again runs all three; a write,
a run, the same write, the same run is a loop: its second run is a repeat.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.parsing.calls import ToolCall
from agent.tools.registry import ARGUMENTS_LIMIT, arguments_size

STUCK_AFTER = 3  # repeats in a row that end the run


@dataclass(frozen=True)
class Seen:
    """The last time a call of this signature was made: its turn, its place among all calls, its outcome."""

    iteration: int
    index: int
    ok: bool


class Repeats:
    """The calls a run made, by signature; `params` is each tool's parameter names (unknown tools: all kept)."""

    def __init__(self, params: Mapping[str, Sequence[str]]) -> None:
        self.params = params
        self._seen: dict[str, Seen] = {}
        self._calls = 0
        self._last_new = -1  # the place of the last call whose signature was new
        self.in_a_row = 0  # repeats since the last call that was not one
        self._unique = itertools.count()

    def signature(self, call: ToolCall) -> str:
        known = self.params.get(call.name)
        kept = {k: v for k, v in call.arguments.items() if v is not None and (known is None or k in known)}
        if arguments_size(kept, ARGUMENTS_LIMIT) is None:  # nested past sense: the gate refuses it; never a repeat
            return f"{call.name}\0#{next(self._unique)}"
        return call.name + "\0" + json.dumps(_bounded(kept), sort_keys=True, default=str)

    def repeat_of(self, call: ToolCall) -> Seen | None:
        """The earlier call this one repeats with nothing changed since, or None."""
        seen = self._seen.get(self.signature(call))
        return seen if seen is not None and seen.index >= self._last_new else None

    def done_before(self, calls: Sequence[ToolCall]) -> bool:
        """Whether every call repeats one that worked, with nothing changed since."""
        found = [self.repeat_of(call) for call in calls]
        return bool(found) and all(seen is not None and seen.ok for seen in found)

    def ran(self, call: ToolCall, ok: bool, iteration: int) -> None:
        """A call that was run (not a repeat)."""
        key = self.signature(call)
        if key not in self._seen:
            self._last_new = self._calls
        self._seen[key] = Seen(iteration, self._calls, ok)
        self._calls += 1
        self.in_a_row = 0

    def repeated(self) -> None:
        """A call that was a repeat, answered without running it."""
        self._calls += 1
        self.in_a_row += 1

    @property
    def stuck(self) -> bool:
        return self.in_a_row >= STUCK_AFTER

    def forget(self) -> None:
        """After a compaction the earlier results are no longer in the model's history: a call made
        again may be needed, so nothing counts as seen."""
        self._seen.clear()
        self._last_new, self.in_a_row = self._calls - 1, 0


def answer(seen: Seen, left: int) -> str:
    """What the model reads instead of a repeat's result."""
    then = "it worked (its result is above)" if seen.ok else "it failed (its error is above)"
    what = (
        "Take the next step, or if the goal is done, reply with your final summary and no tool call."
        if seen.ok
        else "Change the arguments, use a different tool, or give your final answer."
    )
    last = " If you make it once more, the run stops." if left == 1 else ""
    return (
        f"Not run again: you made exactly this call in turn {seen.iteration} and {then}; nothing has "
        f"changed since. {what}{last}"
    )


def _bounded(value: Any) -> Any:
    """Long strings by length and start, so a flood is never serialised whole to compare it."""
    if isinstance(value, str) and len(value) > 4096:
        return f"{len(value)}:{value[:4096]}"
    if isinstance(value, dict):
        return {k: _bounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_bounded(v) for v in value]
    return value
