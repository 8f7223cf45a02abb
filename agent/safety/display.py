"""What a terminal and a refusal show of untrusted text: control characters escaped visibly, long
values shortened with their length stated, refusals bounded.

Model and tool output may hold escape sequences (cursor moves, colour, OSC titles, the bell),
carriage returns that overwrite a line, bidirectional overrides that reorder it, and newlines that
forge a line of hearth's own. Everything hearth prints for a person goes through `visible_line`
(one line: newlines escaped too) or `visible` (a block: newlines kept, each line escaped); JSON
for programs goes through `json_safe`. The audit keeps the bytes as they were; only showing escapes.
"""

from __future__ import annotations

import re

MAX_REFUSAL = 500  # characters of any refusal a model, an operator or a sender reads

# C0 and C1 controls, DEL, and the invisible characters that reorder or hide text (bidi
# embeddings, overrides and isolates, the marks, the Arabic letter mark).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_CONTROL_IN_BLOCK = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\e"}
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible_line(text: object) -> str:
    """`text` as one line a terminal shows as written: every control character escaped (\\e, \\n ...)."""
    return _CONTROL.sub(_escape, str(text))


def visible(text: object) -> str:
    """A block of text: newlines and tabs kept, every other control character escaped."""
    return _CONTROL_IN_BLOCK.sub(_escape, str(text))


def json_safe(text: str) -> str:
    """JSON text (from json.dumps with ensure_ascii=False) with what it leaves raw, DEL, the C1
    controls and the invisible reordering characters, written as \\u escapes (still valid JSON)."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def shorten(value: str, limit: int = 80) -> str:
    """A value cut to about `limit` characters, head and tail kept, its length stated when cut."""
    if len(value) <= limit:
        return value
    head = max(1, limit * 2 // 3)
    tail = max(1, limit - head - 1)
    return f"{value[:head]}…{value[-tail:]} ({len(value)} characters)"


def bounded(message: str, limit: int = MAX_REFUSAL) -> str:
    """A refusal of at most `limit` characters; what is cut is said, with the whole length."""
    if len(message) <= limit:
        return message
    note = f" … ({len(message)} characters in all)"
    return message[: limit - len(note)] + note
