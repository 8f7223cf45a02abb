"""The part of a reply that acts: the reply without its reasoning.

Families put reasoning in a channel of its own: `<think>` (Qwen3, DeepSeek R1, GLM, Granite,
Hunyuan, ERNIE...), `<seed:think>` (Seed-OSS), `[THINK]` (Magistral), `<|START_THINKING|>`
(Command R7B and A), `◁think▷` (Kimi), Gemma 4's `<|channel>` and gpt-oss's analysis channel
(`<|channel|>analysis<|message|>...<|end|>`). A call written there is one the model considered,
never one it made, so the whole channel goes. A close with no open means the chat template opened
the channel, so everything before it is reasoning; an open that never closes swallows the rest.
Only where a channel can begin does a tag open one: at a line's start or where the previous
channel closed, never inside a sentence or a string (a file that documents `<think>` is written
intact).
One pass, left to right, so the cost is linear in the reply.
"""

import re

# name: (open, close); the close of gpt-oss's analysis channel may also be the next message's start
_CHANNELS = {
    "think": (r"<(?P<tag>think|thinking|reasoning|thought)>", ""),  # closed by its own tag
    "seed": (r"<seed:think>", r"</seed:think>"),
    "bracket": (r"\[THINK\]", r"\[/THINK\]"),
    "cohere": (r"<\|START_THINKING\|>", r"<\|END_THINKING\|>"),
    "kimi": (r"◁think▷", r"◁/think▷"),
    "gemma": (r"<\|channel>", r"<channel\|>"),
    "harmony": (r"<\|channel\|>\s*analysis\s*<\|message\|>", r"<\|end\|>|(?=<\|start\|>)|(?=<\|channel\|>)"),
}
_OPEN = re.compile("|".join(f"(?P<{name}>{pattern})" for name, (pattern, _) in _CHANNELS.items()), re.I)
# Before a close with no open, reasoning is prose: a JSON object or a call's opening element there
# means the close is inside a call's argument ("content": "...</think>...", or
# <invoke name="x"><parameter name="p">...</think>...), not the end of a channel the template opened.
_OBJECT = re.compile(r"\{\s*[\"']|<[^<>\s]{0,12}(?:function|invoke|tool_call)", re.I)
_CLOSE_ONLY = re.compile(
    r"</(?:think|thinking|reasoning|thought)>|</seed:think>|\[/THINK\]|<\|END_THINKING\|>|◁/think▷|<channel\|>"
    r"|\[BEGIN FINAL RESPONSE\]",  # Apriel: its reasoning comes first, unmarked, then this
    re.I,
)


def visible_text(content: str) -> str:
    """content without its reasoning channels (see the module doc)."""
    text = content
    first_open = _OPEN.search(text)
    stray = _CLOSE_ONLY.search(text, 0, first_open.start() if first_open else len(text))
    if stray and not _OBJECT.search(text, 0, stray.start()):  # the template opened the channel
        text = text[stray.end() :]
    pieces, pos, search = [], 0, 0
    while opened := _OPEN.search(text, search):
        search = opened.end()
        if not _may_open(text, opened, pos):
            continue
        pieces.append(text[pos : opened.start()])
        close = _close_of(opened).search(text, opened.end())
        if close is None:  # never closed: the rest is reasoning too
            return "".join(pieces) + "\n"
        pieces.append("\n")
        pos = search = close.end()
    return "".join(pieces) + text[pos:]


def _may_open(text: str, opened: re.Match[str], channel_end: int) -> bool:
    """A channel opens where the reply, a line, or the previous channel ends; "<think>" in a
    sentence or inside a call's string is a word about thinking. gpt-oss's header is distinctive."""
    at = opened.start()
    if opened.lastgroup == "harmony" or at == channel_end:
        return True
    while at > 0 and text[at - 1] in " \t":
        at -= 1
    return at == 0 or text[at - 1] == "\n"


_CLOSES = {name: re.compile(close, re.I) for name, (_, close) in _CHANNELS.items()}
_TAG_CLOSES = {tag: re.compile(f"</{tag}>", re.I) for tag in ("think", "thinking", "reasoning", "thought")}


def _close_of(opened: re.Match[str]) -> re.Pattern[str]:
    if opened.group("tag"):  # <thinking> is closed by </thinking>, not by </think>
        return _TAG_CLOSES[opened.group("tag").lower()]
    return _CLOSES[opened.lastgroup or "think"]
