"""A streamed reply that has stopped saying anything new: the model writes one stretch of text
again and again (a small model repeating its last call forty times, a word, a blank line).

Seen on a real 0.5B model on a CPU box: one reply held a call and then the same line until the
reply cap, 2,048 tokens and eight and a half minutes. The readers feed each streamed piece to a
`Runaway`; once the end of the text is one period repeated (at least REPEATS times and
MIN_SPAN characters, the period at most MAX_PERIOD), the reader stops reading, which closes the
connection and so tells the server to stop generating, and the reply keeps its text up to the first
time the repeated stretch was written. The check runs every CHECK_EVERY characters, not per token.
"""

from __future__ import annotations

REPEATS = 4  # the fewest times one period must follow itself
MIN_SPAN = 256  # and the fewest characters of repetition: a short period must repeat more often
MAX_PERIOD = 200  # a repeated stretch longer than this (a long call written twice) is left to the cap
CHECK_EVERY = 64


class Runaway:
    """One reply's text as it streams, watched for a period that repeats to its end."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._checked = 0
        self.keep = -1  # where to cut the text once it ran away (-1: it has not)

    def feed(self, piece: str) -> bool:
        """Add one streamed piece; True once the text has run away (it stays so)."""
        if self.keep >= 0 or not piece:
            return self.keep >= 0
        self._parts.append(piece)
        self._size += len(piece)
        if self._size - self._checked >= CHECK_EVERY:
            self._checked = self._size
            self.keep = _runaway_at("".join(self._parts))
        return self.keep >= 0

    def text(self) -> str:
        """The text fed, cut after the first writing of its repeated stretch when it ran away."""
        text = "".join(self._parts)
        return text[: self.keep] if self.keep >= 0 else text


def _runaway_at(text: str) -> int:
    """Where a text that ends in one period repeated should be cut (after its first writing); -1 if it
    does not end so."""
    for period in range(1, min(MAX_PERIOD, len(text) // REPEATS) + 1):
        span = max(REPEATS * period, MIN_SPAN)
        if span > len(text):
            continue
        tail = text[-span:]
        if tail[period:] == tail[:-period]:
            start = len(text) - span
            while start > 0 and text[start - 1] == text[start - 1 + period]:
                start -= 1  # back to where the repetition began, whatever the phase the end is in
            end = start + period
            line_end = text.find("\n", end - 1) if "\n" in text[start:end] else -1
            return line_end + 1 if line_end >= 0 else end  # a repeated line is kept whole, once
    return -1
