"""Lenient JSON: `loads_lenient` and the scanner behind it; the only JSON repair in hearth.

Part of `agent.parsing`, which re-exports `loads_lenient`; its call extraction also scans reply
text with `_value_at` and reacts to `_CutOff` and `_Invalid` (a cut-off value, not JSON).
"""

import json
import re
from typing import Any


class _CutOff(Exception):
    """The text ended inside a string or in the middle of a value."""


class _Invalid(Exception):
    """Not JSON. Its argument lists where the containers still open at the failure began: a scan
    from any of them reads the same tokens in the same state and fails at the same place, so the
    search skips them (without that, nested garbage costs quadratic time)."""


_WORD = re.compile(r"[-+.\w]+")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = {"true": "true", "false": "false", "null": "null", "True": "true", "False": "false", "None": "null"}
_PUNCTUATION = {"{": "open", "[": "open", "}": "close", "]": "close", ",": ",", ":": ":"}
# what a string reader must look at: its own quote, a backslash, a control character, or a " to escape
_SPECIAL = {"'": re.compile(r"['\\\x00-\x1f\"]"), '"': re.compile(r'["\\\x00-\x1f]')}
_CONTROL = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f", '"': '\\"'}


def loads_lenient(text: str) -> Any | None:
    """Parse JSON as weak models write it; None when it cannot be repaired.

    Repairs: trailing commas; single-quoted strings and keys; Python True/False/None; raw
    newlines, tabs and other control characters inside strings; invalid escapes such as a regex's
    `\\d` (kept as a literal backslash); stray closing brackets after a complete value; missing
    final closing braces or brackets when the text ends right after a complete string, literal,
    or closed value. Never repaired: text that ends inside a string, after a key, a colon, a comma
    or a number (the number may itself be cut short), because the rest of the value is unknown.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    body = text.strip()
    try:
        found = _value_at(body, 0) if body else None
    except (_CutOff, _Invalid):
        return None
    return None if found is None or body[found[1] :].strip(" \t\r\n}]") else found[0]


def _value_at(text: str, start: int, *, at_end: str = "repair") -> tuple[Any, int]:
    """The lenient JSON value at text[start] and the index after it. The value is None when the
    text is JSON-shaped but cannot be decoded (a bad \\u escape, nesting deeper than Python's
    stack): the caller still learns where it ends, so it never rescans the inside. A value that
    starts at { or [ is never JSON null, so None is unambiguous. Raises _CutOff or _Invalid as
    _scan does; `at_end` is _scan's."""
    strict, end = _scan(text, start, at_end)
    try:
        return json.loads(strict), end
    except (json.JSONDecodeError, RecursionError):
        return None, end


def _scan(text: str, start: int, at_end: str = "repair") -> tuple[str, int]:
    """Rewrite the lenient JSON value at text[start] as strict JSON text.

    Returns the strict text and the index just past the value. Raises _Invalid when it is not
    JSON, _CutOff when the text ends inside the value and its last token is not complete. With
    at_end="strict" the end of the text is a cut-off whenever a list is still open or the last
    token did not close something: a reply that stops there was cut short, and only a forgotten
    final brace (after a closed value) is repaired. A tag or a fence still ends a value leniently:
    the model wrote it, so it meant the value to end there.
    """
    out: list[str] = []
    closers: list[str] = []  # the closer each open container expects (a str, no tuple per bracket)
    starts: list[int] = []  # where each open container began
    last, i, comma_at, closed = "", start, 0, False
    # A tag or a fence ends the value even with braces missing: `{...}\n</tool_call>` is common.
    while i < len(text) and text[i] not in "<`":
        if text[i].isspace():
            out.append(text[i])
            i += 1
            continue
        token = _token(text, i)
        state = _state_after(token[2], token[0], last, closers[-1] if closers else "") if token else None
        if token is None or state is None:
            raise _Invalid(starts)
        if state == "open":
            closers.append("}" if token[0] == "{" else "]")
            starts.append(i)
        elif token[2] == "close":
            closers.pop()
            starts.pop()
            if last == ",":
                del out[comma_at]
        comma_at = len(out) if state == "," else comma_at
        out.append(token[0])
        i, last, closed = token[1], state, token[2] == "close"
        if not closers:
            return "".join(out), i
    if not closers or (last != "value" and i < len(text)):
        raise _Invalid(starts)
    cut_short = i == len(text) and at_end == "strict" and (not closed or "]" in closers)
    if last != "value" or cut_short:
        raise _CutOff
    return "".join(out) + "".join(reversed(closers)), i


def _token(text: str, i: int) -> tuple[str, int, str] | None:
    """One token at text[i] as (strict text, next index, kind), or None if no JSON token starts here."""
    ch = text[i]
    if ch in "\"'":
        token, end = _read_string(text, i)
        return token, end, "string"
    if ch in _PUNCTUATION:
        return ch, i + 1, _PUNCTUATION[ch]
    match = _WORD.match(text, i)
    word = match.group() if match else ""
    if word in _LITERALS:
        return _LITERALS[word], i + len(word), "value"
    if _NUMBER.fullmatch(word):
        return word, i + len(word), "number"
    return None


def _state_after(kind: str, token: str, last: str, closer: str) -> str | None:
    """What the scanner has just read after this token ("key", "value", "number", "open", ","
    or ":"), or None when JSON grammar does not allow it here. `closer` ends the innermost open
    container ("" at top level)."""
    in_object = closer == "}"
    wants_key = in_object and last in ("open", ",")
    wants_value = last in ("", ":") or (not in_object and last in ("open", ","))
    if kind == "string":
        return "key" if wants_key else "value" if wants_value else None
    if kind == "close":  # after a "," too: that trailing comma is dropped
        fits = closer == token and last in ("value", "number", "open", ",")
        return "value" if fits else None
    if kind == ",":
        return "," if closer and last in ("value", "number") else None
    if kind == ":":
        return ":" if last == "key" else None
    return kind if wants_value else None


def _read_string(text: str, i: int) -> tuple[str, int]:
    """The '...' or "..." string at text[i] as a strict JSON string; raises _CutOff if unterminated."""
    quote, out, i = text[i], ['"'], i + 1
    special = _SPECIAL[quote]
    while match := special.search(text, i):
        out.append(text[i : match.start()])  # a run of plain characters, copied in one step
        ch, i = match.group(), match.start()
        if ch == quote:
            return "".join(out) + '"', i + 1
        if ch == "\\" and i + 1 < len(text):
            out.append(_escape(text[i + 1]))
            i += 2
            continue
        if ch == "\\":
            break
        out.append(_CONTROL.get(ch) or f"\\u{ord(ch):04x}")
        i += 1
    raise _CutOff


def _escape(ch: str) -> str:
    """The strict form of backslash + ch inside a string."""
    if ch == "'":
        return "'"  # only needed inside single quotes, and not a JSON escape
    if ch in '"\\/bfnrtu':
        return "\\" + ch
    return "\\\\" + (_CONTROL.get(ch) or ch)  # `\d` in a regex means a backslash and a d
