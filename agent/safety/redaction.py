"""Credential values in every spelling: the redactor every output passes through, and the finder
the network guard uses to keep a value from leaving.

`spellings(value)` is the one list of how a value may appear: as written, JSON-escaped,
percent-encoded (reserved characters only, or every byte, in either case, or with `+` for a
space), hex (either case), base64 and base64url (padded, unpadded, and the stable middle of the
value inside a longer encoded blob, at each of the three byte alignments).

- `Redactor` replaces every spelling with `[redacted:NAME]` before the model, the audit, the state
  file or a log sees it; a value split across lines (a wrapped line, base64 folded at 76
  columns) is found too, and the break goes with it.
- `SecretFinder` tells which credential's value a URL, header or body carries, in any spelling
  and any case, percent-decoded or not, split or not; the guard refuses to send it to a host the
  credential is not bound to.
"""

from __future__ import annotations

import base64
import bisect
import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, quote_plus, unquote_plus

MIN_SPELLING = 8  # a shorter fragment would match ordinary text
_BREAK = re.compile(r"[ \t]*\r?\n[ \t]*|\r")


def spellings(value: str) -> dict[str, str]:
    """Every spelling of `value` hearth recognises -> the name of its encoding."""
    data = value.encode("utf-8")
    forms = {value: "raw", json.dumps(value)[1:-1]: "raw"}
    every = "".join(f"%{b:02X}" for b in data)
    for text in (quote(value, safe=""), quote_plus(value, safe=""), every, every.lower()):
        forms.setdefault(text, "percent-encoded")
    forms.setdefault(data.hex(), "hex")
    forms.setdefault(data.hex().upper(), "hex")
    for name, encode in (("base64", base64.b64encode), ("base64url", base64.urlsafe_b64encode)):
        whole = encode(data).decode()
        forms.setdefault(whole, name)
        forms.setdefault(whole.rstrip("="), name)
        for shift in (0, 1, 2):  # inside a longer blob the value starts at any byte alignment
            core = _core(encode(b"\0" * shift + data).decode(), shift, len(data))
            if len(core) >= MIN_SPELLING:
                forms.setdefault(core, name)
    return {form: kind for form, kind in forms.items() if len(form) >= min(MIN_SPELLING, len(value))}


def _core(encoded: str, shift: int, size: int) -> str:
    """The characters of `encoded` that depend on the value's bytes alone (not on its neighbours)."""
    whole_groups = (shift + size) // 3
    return encoded[4 if shift else 0 : 4 * whole_groups]


def _alternation(forms: Iterable[str], flags: int = 0) -> re.Pattern[str] | None:
    ordered = sorted(set(forms), key=len, reverse=True)  # longest first: a value holding another stays whole
    return re.compile("|".join(re.escape(f) for f in ordered), flags) if ordered else None


def _squeezed(text: str) -> tuple[str, list[int], list[int]]:
    """`text` without its line breaks (and the blanks around them), with a map back: the offset in
    the squeezed text where each kept piece starts, and where that piece starts in `text`."""
    pieces, squeezed_at, original_at, position, length = [], [], [], 0, 0
    for brk in _BREAK.finditer(text):
        pieces.append(text[position : brk.start()])
        squeezed_at.append(length)
        original_at.append(position)
        length += brk.start() - position
        position = brk.end()
    pieces.append(text[position:])
    squeezed_at.append(length)
    original_at.append(position)
    return "".join(pieces), squeezed_at, original_at


def _original(offset: int, squeezed_at: list[int], original_at: list[int], *, end: bool = False) -> int:
    k = bisect.bisect_right(squeezed_at, offset - (1 if end else 0)) - 1
    return original_at[k] + offset - squeezed_at[k]


class Redactor:
    def __init__(self, values: dict[str, str] | None = None) -> None:
        self._marks: dict[str, str] = {}
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()
        for name, value in (values or {}).items():
            self.add(name, value)

    def add(self, name: str, value: str) -> None:
        if not value:
            return
        with self._lock:
            before = len(self._marks)
            for form in spellings(value):
                self._marks.setdefault(form, f"[redacted:{name}]")
            if len(self._marks) != before:
                self._pattern = _alternation(self._marks)

    def __bool__(self) -> bool:
        return bool(self._marks)

    def __call__(self, text: str) -> str:
        pattern = self._pattern
        if pattern is None or not isinstance(text, str):
            return text
        text = pattern.sub(lambda m: self._marks[m.group(0)], text)
        return self._across_lines(pattern, text) if "\n" in text or "\r" in text else text

    def _across_lines(self, pattern: re.Pattern[str], text: str) -> str:
        squeezed, squeezed_at, original_at = _squeezed(text)
        out, last = [], 0
        for match in pattern.finditer(squeezed):
            start = _original(match.start(), squeezed_at, original_at)
            end = _original(match.end(), squeezed_at, original_at, end=True)
            if start < last:
                continue
            out += [text[last:start], self._marks[match.group(0)]]
            last = end
        return "".join(out) + text[last:] if out else text

    def data(self, value: Any) -> Any:
        """A copy of a JSON-like structure with every string (keys too) redacted."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


def no_redaction(text: str) -> str:
    return text


@dataclass(frozen=True)
class Found:
    name: str  # the credential
    encoding: str  # raw | percent-encoded | hex | base64 | base64url
    hosts: tuple[str, ...]  # where it may go


class SecretFinder:
    """Which credential a text carries, for the guard: (name, value, bound host patterns) each.

    `bound(host)` says whether a host may receive a credential; the finder itself knows only the
    patterns, matched by the caller's function (the guard's host matching)."""

    def __init__(self, secrets: Iterable[tuple[str, str, Iterable[str]]] = ()) -> None:
        self._owner: dict[str, tuple[str, str, tuple[str, ...]]] = {}
        for name, value, hosts in secrets:
            for form, kind in spellings(value).items():
                self._owner.setdefault(form.lower(), (name, kind, tuple(hosts)))
        self._pattern = _alternation(self._owner, re.IGNORECASE)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def mask(self, text: str) -> str:
        """`text` (a host name, say) with every spelling found replaced by `[redacted:NAME]`."""
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda m: f"[redacted:{self._owner[m.group(0).lower()][0]}]", text)

    def find(self, text: str | bytes | None, allowed: Callable[[tuple[str, ...]], bool]) -> Found | None:
        """The first credential in `text` whose hosts `allowed` refuses, or None."""
        if self._pattern is None or not text:
            return None
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        views = [text, unquote_plus(text)]
        views += [_squeezed(view)[0] for view in views if "\n" in view or "\r" in view]
        for view in views:
            for match in self._pattern.finditer(view):
                name, kind, hosts = self._owner[match.group(0).lower()]
                if not allowed(hosts):
                    return Found(name, kind, hosts)
        return None
