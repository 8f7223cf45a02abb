"""The call extraction: reply text -> list[ToolCall] (agent/parsing/__init__.py is its face).

Weak local models often write tool calls into the text instead of the structured field, in
whatever format they were trained on. A reply is read in four steps:

1. reasoning.py drops every reasoning channel (`<think>`, `[THINK]`, gpt-oss analysis, ...): a
   call written there was considered, not made.
2. One pass, left to right: the family whose opener comes first reads its span, and nothing
   inside a span is read again (a JSON string that mentions `<function=f>` or `read_file(...)`
   stays a string). The families: xml_calls.py (arguments as elements), tagged.py (a name in
   the family's syntax, JSON after it), json_calls.py (any JSON value), python_calls.py.
3. Each span's candidates pass the name rule (calls.resolve), then the rule below.
4. Identical calls collapse into one.

What is a call. A missed call costs a nudge; an invented `write_file` changes the workspace. A
span is a call only if all of these hold; check a case against them in order:
- It is complete. Text that ends inside a value, a string, a list or an element is cut off: no
  call from it and none after it, never a guess at the missing part.
- It stands where calls stand: alone on its lines (only tags, space or `;` beside it), or right
  after a call marker (`<tool_call>`, `[TOOL_CALLS]`, `<|python_tag|>`, a family's own syntax)
  or after prose that ends with a colon ("I'll read it: {...}"), and never with prose after it
  on its line. A value in a sentence ("Earlier I ran {...} and it failed"), in a table row or in
  inline code is quoted, not made.
- A fenced block counts only whole: if it holds anything besides calls (`call = {...}`, an
  import, a comment), it is code or data, and nothing in it is a call.
- It has a call's shape: a name and arguments and nothing else but bookkeeping (id, type, a
  thought). A record that also says what happened (a result, a status, a time) is a log line;
  a list is a batch only if every item is a call; a JSON schema is a tool definition.
- Its name is a tool name. Where the format says "this is the name" (a name key beside an
  arguments key, a family's call syntax, a marker) any one word counts, and a name the run lacks
  comes back with known=False. Where only the shape suggests a call (an object keyed by a name,
  a name line above JSON, a bare Python call) it must be one of the run's tools. A batch of two
  or more naming none of the run's tools is a table of records. Placeholders (`tool_name`,
  `<name>`) are never names.
- The prose does not frame it as an example or as past. The lead-in is the last line of prose
  before the span. An example cue there ("for example", "e.g.", "in this format", "you can
  write", "such as" right before the span; layout._EXAMPLE) means the message documents a format: that span and every later one
  are dropped. A past cue as its last cue ("I ran", "was called", "earlier", "it failed") means a
  report of a call already made: that span is dropped. A later "let me"/"I'll"/"now" makes it an
  action again ("It failed, so let me retry:").
- It is not a format being explained. A lead-in that says how calls in general are written (a
  format's name: "the syntax is", "format:", "usage:"; how a call "is written as", "takes the
  form", "like so"; calls as a kind: "a tool call is", "each call", "tool calls use"; what "the
  model emits" or "it replies with"; "when you want ..."; layout._FORMAT) documents a format, unless it also says
  "let me"/"I'll"/"now"; so does prose right after a span that names its parts ("where `name`
  is ...") or what to put in their place ("Replace the path with ..."; layout._EXPLAINS). Either
  way, that span and every later one are dropped, as after an example cue.
- It is not an API response being shown. A value that carries a server's own bookkeeping at any
  level of its envelope (a model, a creation time, usage, a finish, stop or done reason, an
  `object` type; json_calls._RESPONSE_KEYS) reports calls someone already made: it is data.
- It is not a listing of tool schemas. Arguments that are a JSON Schema (an object schema, or a
  map of parameters each to its own schema: {"path": {"type": "string"}}) describe a tool, so a
  name above its schema, a name key beside a schema, or a name keyed to one is a definition.
"""

import re
from collections.abc import Iterable, Mapping, Sequence

from agent.parsing import json_calls, python_calls, tagged, xml_calls
from agent.parsing.calls import Hit, Reader, ToolCall, ToolSet, dedupe
from agent.parsing.layout import OPENER, Layout, framing
from agent.parsing.reasoning import visible_text
from agent.parsing.sieve import may_hold_a_call

Tools = Iterable[str] | Mapping[str, Sequence[str]]


def parse_tool_calls(content: str, tools: Tools) -> list[ToolCall]:
    """The tool calls written in a reply's text, in order; [] when it holds none (see module doc).

    `tools` is the run's tool names, or {name: parameter names in order} (see parameter_order),
    which also lets positional Python arguments be named and flattened arguments be checked."""
    if not may_hold_a_call(content):
        return []
    toolset = ToolSet.of(tools)
    text = visible_text(content)
    return dedupe(_calls(text, _extract(text, toolset)))


def looks_like_tool_call(content: str) -> bool:
    """True when a reply seems to attempt a call that parse_tool_calls could not read: a call
    marker, or a call begun and cut off by the end of the text. Complete JSON does not count, so
    an answer that only shows an example is not mistaken for a failed call."""
    if not may_hold_a_call(content):
        return False
    text = visible_text(content)
    if OPENER.search(text):
        return True
    return any(hit.calls is None and hit.attempt for hit in _extract(text, ToolSet([], {})))


class _Scanner:
    """One family's opener, searched ahead of the reading position and kept until it is passed."""

    def __init__(self, pattern: re.Pattern[str], reader: Reader) -> None:
        self.pattern, self.reader = pattern, reader
        self.match: re.Match[str] | None = None
        self.done = False

    def peek(self, text: str, pos: int) -> re.Match[str] | None:
        if not self.done and (self.match is None or self.match.start() < pos):
            self.match = self.pattern.search(text, pos)
            self.done = self.match is None
        return self.match

    def decline(self, text: str, match: re.Match[str]) -> None:
        self.match = self.pattern.search(text, match.start() + 1)
        self.done = self.match is None


def _extract(text: str, tools: ToolSet) -> list[Hit]:
    """Every span the families read, left to right, until the text ends or a call is cut off."""
    modules = (xml_calls, tagged, json_calls, python_calls)  # on a tie, the earlier family reads
    scanners = [_Scanner(pattern, reader) for module in modules for pattern, reader in module.readers()]
    hits: list[Hit] = []
    pos = 0
    while ahead := sorted((m.start(), order) for order, s in enumerate(scanners) if (m := s.peek(text, pos))):
        order = ahead[0][1]
        rival = ahead[1] if len(ahead) > 1 else (len(text) + 1, 0)
        hit = _first_hit(text, scanners[order], order, rival, tools, pos)
        if hit is not None:
            hits.append(hit)
            pos = hit.end
            if hit.calls is None:
                break  # the reply was cut off inside a call: nothing after it is read
    return hits


def _first_hit(
    text: str, scanner: _Scanner, order: int, rival: tuple[int, int], tools: ToolSet, pos: int
) -> Hit | None:
    """The leading family reads on until it finds a span or its next opener falls behind the rival's
    (so a run of openers that are not calls, `{ { { ...`, costs one family's search, not all of them)."""
    while (match := scanner.match) is not None and (match.start(), order) < rival:
        hit = scanner.reader(text, match, tools, pos)
        if hit is not None and hit.end > pos:
            return hit
        scanner.decline(text, match)
    return None


def _calls(text: str, hits: list[Hit]) -> list[ToolCall]:
    if not any(hit.calls for hit in hits):
        return []
    layout = Layout(text, hits)
    calls: list[ToolCall] = []
    documenting = False
    for hit in hits:
        if hit.calls is None:
            break
        if not hit.calls or not layout.stands_alone(hit) or layout.in_mixed_fence(hit):
            continue
        frame = framing(layout.lead_in(hit.start))
        documenting = documenting or frame in ("example", "format") or layout.explained_after(hit)
        if not documenting and frame != "past":
            calls += hit.calls
    return calls


_LEFTOVER = re.compile(r"^\s*(?:```[\w-]*|</?[A-Za-z_|][\w|-]*>|\[/?TOOL_CALLS\])\s*$", re.M)


def prose(content: str, tools: Tools) -> str:
    """What a reply says beside its calls: its visible text without the spans its calls were read
    from (and the fences or tags left empty around them)."""
    text = visible_text(content)
    if not may_hold_a_call(content):
        return text.strip()
    kept, pos = [], 0
    for hit in _extract(text, ToolSet.of(tools)):
        if hit.calls:
            kept.append(text[pos : hit.start])
            pos = hit.end
    kept.append(text[pos:])
    return _LEFTOVER.sub("", "".join(kept)).strip()
