"""Where a span stands in the reply, and how the prose before it frames it (see extractors.py).

`Layout` is built once per reply from the text and the spans that hold calls. Its questions cost
O(log n) each (bisect over newlines and runs of prose, all found in one pass), so a reply with
thousands of calls on one long line stays linear.
"""

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import NamedTuple

from agent.parsing.calls import Hit

# Markup that is neither prose nor call: tags, special tokens, fences, a family's bare keyword.
TAG = re.compile(
    r"</?[A-Za-z][\w:.=-]{0,60}(?:\s[^<>\n]{0,200})?/?>"  # <tool_call>, <invoke name="x">, <function=f>
    r"|<\|[^<>\n]{1,60}>|<[\w\"]{1,40}\|>|</?｜[^<>\n]{1,200}>"  # <|python_tag|>, <|tool_call>, <tool_call|>, <｜tool▁sep｜>
    r"|\[/?[A-Z][A-Z_]{1,30}\]|```[\w-]*|\bfunctools(?=\[)|>>>"  # [TOOL_CALLS], fences, Phi-4, Functionary
)
# Markup that opens a region of calls: a value right after it is a call even mid-line.
OPENER = re.compile(
    r"<(?:[\w-]+:)?(?:tool_calls?|tools|function_calls?|toolcall|TOOLCALL)>|<｜DSML｜(?:function|tool)_calls>"
    r"|<\|(?:tool_calls?|tool_call_start|tool_calls_section_begin|python_tag|python_start|START_ACTION"
    r"|action_start|plugin|tools_prefix|function_call)\|>|<\|tool_call>|<[|｜]tool[▁_ ]calls?[▁_ ]begin[|｜]>"
    r"|\[TOOL_CALLS\]|<start_function_call>|<longcat_tool_call>|\bfunctools(?=\[)|function call<\|role_sep\|>"
    r"|```(?:tool_calls?|tool_code|function_calls?)\b"
)
# a marker, then only space and tags up to the span's first character (which a lookahead may see)
_OPENED = re.compile(rf"(?:{OPENER.pattern})(?:\s|{TAG.pattern})*(?=[\s\S]\Z)")
_PROSE_RUN = re.compile(r"[^\s;]+")
_FENCE = re.compile(r"^[ \t]*```[\w-]*[ \t]*\n(.*?)(?:^[ \t]*```|\Z)", re.S | re.M)
_LEAD_IN_REACH = 300  # a framing cue that far before the call no longer frames it

_EXAMPLE = (
    r"(?<![\w/.-])(?:for example|for instance|e\.g\.|as an example|here(?: is|'s) an example"
    r"|examples?\s*:|(?:an )?example (?:of|call|usage|request)\b|looks? like this|would look like"
    r"|(?:this|following|call|request|output|response|tool[ -]call) format"
    r"|you (?:can|could|should|would|must|need to|might) (?:write|use|call|send|output|emit|reply)"
    r"|to (?:call|use|invoke) (?:a|any) tool)"
)
_PAST = (
    r"\b(?:earlier|previously|last time|already|before that"
    r"|(?:I|we) (?:ran|called|used|tried|invoked|executed|sent|issued|made|did)"
    r"|(?:was|were|had been) (?:run|called|invoked|executed|sent|tried|used)"
    r"|(?:it|this|that) (?:failed|returned|errored|gave|produced|worked)"
    r"|(?:the|my) (?:last|previous|earlier|first) (?:call|attempt|try|run|command))\b"
)
_INTENT = r"\b(?:let me|let's|I'll|I will|I'm going to|I am going to|I need to|I should|now|next)\b"
_FRAME = re.compile(rf"(?P<example>{_EXAMPLE})|(?P<past>{_PAST})|(?P<intent>{_INTENT})", re.I)


def mask(text: str, hits: Sequence[Hit]) -> str:
    """text with every hit blanked to spaces, newlines kept so lines and offsets stay put."""
    if not hits:
        return text
    pieces, pos = [], 0
    for hit in sorted(hits):
        if hit.start < pos:
            continue
        pieces += [text[pos : hit.start], _blank(text[hit.start : hit.end])]
        pos = hit.end
    return "".join(pieces) + text[pos:]


def blank_tags(text: str) -> str:
    return TAG.sub(lambda m: " " * len(m.group()), text)


def opened_by_marker(text: str, start: int) -> bool:
    """Whether a call marker opens the region text[start] is in (tags and space between allowed)."""
    return _OPENED.search(text, max(0, start - 400), start + 1) is not None


def framing(lead_in: str) -> str:
    """How the lead-in frames what follows: "example" if it documents a format, else "past" if its
    last cue reports something done ("I ran", "earlier"), else "call"; a later "let me" or
    "now" turns a past report back into an action."""
    cues = [match.lastgroup for match in _FRAME.finditer(lead_in)]
    if "example" in cues:
        return "example"
    return "past" if cues and cues[-1] == "past" else "call"


class _Run(NamedTuple):
    start: int
    end: int


class Layout:
    """Lines, prose and fences of one reply with its call spans blanked."""

    def __init__(self, text: str, hits: Sequence[Hit]) -> None:
        prose = mask(text, [hit for hit in hits if hit.calls != ()])
        self.prose = blank_tags(prose)
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        runs = [_Run(m.start(), m.end()) for m in _PROSE_RUN.finditer(self.prose)]
        self.run_starts = [run.start for run in runs]
        self.run_ends = [run.end for run in runs]
        self.fences = [(m.start(1), m.end(1)) for m in _FENCE.finditer(prose)]

    def stands_alone(self, hit: Hit) -> bool:
        """Nothing but tags, space or `;` after the hit on its last line; before it on its first
        line, nothing either, or a marker that opened it, or prose that ends with a colon to
        introduce it. A call with prose after it on the line is quoted in a sentence, not made."""
        before = bisect_left(self.run_ends, hit.start + 1) - 1  # the last run ending at or before start
        after = bisect_left(self.run_starts, hit.end)  # the first run starting at or after end
        if after < len(self.run_starts) and not self._newline_between(hit.end, self.run_starts[after]):
            return False
        if before < 0 or hit.marked or self._newline_between(self.run_ends[before], hit.start):
            return True
        return self.prose[self.run_ends[before] - 1] == ":"

    def in_mixed_fence(self, hit: Hit) -> bool:
        """Whether the hit is in a fenced block that holds anything besides calls (code, data)."""
        index = bisect_right(self.fences, (hit.start, len(self.prose) + 1)) - 1
        if index < 0 or not self.fences[index][0] <= hit.start < self.fences[index][1]:
            return False
        start, end = self.fences[index]
        first = bisect_left(self.run_starts, start)
        return first < len(self.run_starts) and self.run_starts[first] < end

    def lead_in(self, start: int) -> str:
        """The last line of prose before text[start] (its last few hundred characters)."""
        index = bisect_left(self.run_ends, start + 1) - 1
        if index < 0:
            return ""
        end = self.run_ends[index]
        line = bisect_left(self.newlines, end)
        line_start = self.newlines[line - 1] + 1 if line else 0
        return self.prose[max(line_start, end - _LEAD_IN_REACH) : min(end, start)]

    def _newline_between(self, start: int, end: int) -> bool:
        return bisect_left(self.newlines, end) > bisect_left(self.newlines, start)


def _blank(span: str) -> str:
    return re.sub(r"[^\n]", " ", span)
