"""Where a span stands in the reply, and how the prose before it frames it (see extractors.py).

`Layout` is built once per reply from the text and the spans that hold calls, and walks forward
through it as it is asked about each span in turn, so every stretch of text is looked at once and a
reply with thousands of calls on one long line stays linear.
"""

import re
from bisect import bisect_right
from collections.abc import Sequence

from agent.parsing.calls import Hit, NextMatch

# Markup that is neither prose nor call: tags, special tokens, fences, a family's bare keyword.
TAG = re.compile(
    r"</?[A-Za-z][\w:.=-]{0,60}(?:\s[^<>\n]{0,200})?/?>"  # <tool_call>, <invoke name="x">, <function=f>
    r"|<\|[^<>\n]{1,60}>|<[\w\"]{1,40}\|>|</?｜[^<>\n]{1,200}>"  # <|python_tag|>, <|tool_call>, <tool_call|>, <｜tool▁sep｜>
    r"|\[/?[A-Z][A-Z_]{1,30}\]|```[\w-]*|\bfunctools(?=\[)|>>>(?:all\b)?"  # [TOOL_CALLS], fences, Phi-4, Functionary
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
_PROSE = re.compile(r"[^\s;]")  # a character of prose: not space, not a `;` between calls
_NEWLINE = re.compile(r"\n")
_FENCE = re.compile(r"^[ \t]*```[\w-]*[ \t]*\n(.*?)(?:^[ \t]*```|\Z)", re.S | re.M)
_LEAD_IN_REACH = 300  # a framing cue that far before the call no longer frames it

_EXAMPLE = (
    r"(?<![\w/.-])(?:for example|for instance|e\.g\.|as an example|here(?: is|'s) an example"
    r"|examples?\s*:|(?:an )?example (?:of|call|usage|request)\b|looks? like this|would look like"
    r"|(?:this|following|call|request|output|response|tool[ -]call) format"
    r"|you (?:can|could|should|would|must|need to|might) (?:write|use|call|send|output|emit|reply)"
    r"|to (?:call|use|invoke) (?:a|any) tool|such as[\s:]*\Z)"
)
# How calls in general are written, not what this reply does: a format's name, how a call "is
# written", calls as a kind, what "the model emits". A first-person intent in the lead-in wins over it.
_FORMAT = (
    r"\b(?:syntax|format|shape|structure|template|schema|notation|convention)\b|\busage\s*:"
    r"|\b(?:is|are|be|gets?) (?:written|formatted|expressed|encoded|rendered|spelled|structured|represented"
    r"|serialized)\b|\b(?:takes?|has|in) the form\b|\blike so\b|\bas follows\b"
    r"|\b(?:a|each|every|any|one) (?:tool[ -]|function[ -])?call (?:is|has|takes|looks|must|should|needs|consists)\b"
    r"|\b(?:tool|function) calls (?:are|use|look|take|have|must|should)\b|\bcalls are\b|\ba valid (?:tool |function )?call\b"
    r"|\b(?:the (?:model|assistant|agent|llm|parser|server|family)|it) (?:emits|writes|outputs|replies|returns|sends"
    r"|produces|generates|expects|reads|accepts)\b|\bthey (?:emit|write|output|reply|return|send|produce|generate)\b"
    r"|\b(?:when|if|whenever) you (?:want|need|wish)\b"
)
_PAST = (
    r"\b(?:earlier|previously|last time|already|before that"
    r"|(?:I|we) (?:ran|called|used|tried|invoked|executed|sent|issued|made|did)"
    r"|(?:was|were|had been) (?:run|called|invoked|executed|sent|tried|used)"
    r"|(?:it|this|that) (?:failed|returned|errored|gave|produced|worked)"
    r"|(?:the|my) (?:last|previous|earlier|first) (?:call|attempt|try|run|command))\b"
)
_INTENT = r"\b(?:let me|let's|I'll|I will|I'm going to|I am going to|I need to|I should|now|next)\b"
_FRAME = re.compile(rf"(?P<example>{_EXAMPLE})|(?P<format>{_FORMAT})|(?P<past>{_PAST})|(?P<intent>{_INTENT})", re.I)
# The prose right after a span that explains it: its parts named ("where `name` is ..."), or
# what to put in their place ("Replace the path with ...").
_EXPLAINS = re.compile(
    r"^\s*(?:where|in which)\b[^\n]{0,60}?\b(?:is|are|holds|names|gives|says)\b|^\s*(?:here,|replace|substitute|fill in)\b"
    r"|`(?:name|arguments|parameters|args)`|placeholder",
    re.I,
)
# The markers that close a region of calls (the mirror of OPENER), with space between them.
_CLOSERS = re.compile(
    r"(?:[ \t]*(?:</(?:[\w-]+:)?(?:tool_calls?|tools|function_calls?|toolcall|TOOLCALL|longcat_tool_call)>"
    r"|<\|(?:tool_calls?_end|tool_call_end|tool_calls_section_end|python_end|END_ACTION|action_end|tools_suffix)\|>"
    r"|<[|｜]tool[▁_ ]calls?[▁_ ]end[|｜]>|<end_function_call>|<tool_call\|>))+"
)
_TRAIL_REACH = 200  # how much of the line after a span is read for an explanation


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
    """How the lead-in frames what follows: "example" if it shows an example, "format" if it
    explains how calls are written (unless it also says "let me", "I'll", "now": then it is about
    to act), else "past" if its last cue reports something done ("I ran", "earlier"), else "call";
    a later "let me" or "now" turns a past report back into an action."""
    cues = [match.lastgroup for match in _FRAME.finditer(lead_in)]
    if "example" in cues:
        return "example"
    if "format" in cues and "intent" not in cues:
        return "format"
    cues = [cue for cue in cues if cue != "format"]
    return "past" if cues and cues[-1] == "past" else "call"


class Layout:
    """Lines, prose and fences of one reply with its call spans blanked, walked forward: ask about
    the spans in the order of the text, and every stretch of it is looked at once."""

    def __init__(self, text: str, hits: Sequence[Hit]) -> None:
        self.text = text
        prose = mask(text, [hit for hit in hits if hit.calls != ()])
        self.prose = blank_tags(prose)
        self.fences = [(m.start(1), m.end(1)) for m in _FENCE.finditer(prose)]
        self._mixed: dict[int, bool] = {}
        self._next_prose, self._next_newline = NextMatch(_PROSE), NextMatch(_NEWLINE)
        self._cursor = 0
        self._line_has_prose = False  # on the line at the cursor, before it
        self._prose_end = 0  # just past the last prose character before the cursor

    def stands_alone(self, hit: Hit) -> bool:
        """Nothing but tags, space or `;` after the hit on its last line; before it on its first
        line, nothing either, or a marker that opened it, or prose that ends with a colon to
        introduce it. A call with prose after it on the line is quoted in a sentence, not made;
        except a marked call that begins its line and ends at its family's close marker (LFM2
        writes `<|tool_call_start|>[f(x=1)]<|tool_call_end|>Checking the file.`)."""
        self._walk_to(hit.start)
        alone_before = not self._line_has_prose or hit.marked or self.prose[self._prose_end - 1] == ":"
        after = self._next_prose.search(self.prose, hit.end)
        newline = self._next_newline.search(self.prose, hit.end)
        alone_after = after is None or (newline is not None and newline.start() < after.start())
        if not alone_after and hit.marked and not self._line_has_prose:
            alone_after = _CLOSERS.match(self.text, hit.end) is not None
        return alone_before and alone_after

    def explained_after(self, hit: Hit) -> bool:
        """Whether the first line of prose after the hit explains it: names its parts ("where
        `name` is the tool") or says what to put in their place ("Replace the path with ...")."""
        after = self._next_prose.search(self.prose, hit.end)
        if after is None:
            return False
        end = self.prose.find("\n", after.start(), after.start() + _TRAIL_REACH)
        line = self.prose[after.start() : end if end >= 0 else after.start() + _TRAIL_REACH]
        return _EXPLAINS.search(line) is not None

    def in_mixed_fence(self, hit: Hit) -> bool:
        """Whether the hit is in a fenced block that holds anything besides calls (code, data)."""
        index = bisect_right(self.fences, (hit.start, len(self.prose) + 1)) - 1
        if index < 0 or not self.fences[index][0] <= hit.start < self.fences[index][1]:
            return False
        if index not in self._mixed:
            self._mixed[index] = _PROSE.search(self.prose, *self.fences[index]) is not None
        return self._mixed[index]

    def lead_in(self, start: int) -> str:
        """The last line of prose before text[start] (its last few hundred characters)."""
        self._walk_to(start)
        end = self._prose_end
        line_start = self.prose.rfind("\n", max(0, end - _LEAD_IN_REACH), end) + 1
        return self.prose[max(line_start, end - _LEAD_IN_REACH) : end]

    def _walk_to(self, position: int) -> None:
        if position <= self._cursor:
            return
        stretch = self.prose[self._cursor : position]
        last = _PROSE.search(stretch[::-1])  # the last prose character of the stretch
        if last is not None:
            self._prose_end = position - last.start()
        newline = stretch.rfind("\n")
        if newline >= 0:
            self._line_has_prose = _PROSE.search(stretch, newline + 1) is not None
        else:
            self._line_has_prose = self._line_has_prose or last is not None
        self._cursor = position


def _blank(span: str) -> str:
    return re.sub(r"[^\n]", " ", span)
