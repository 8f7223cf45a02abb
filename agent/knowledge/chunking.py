"""Splitting text into overlapping chunks whose boundaries depend on the text, not on offsets.

A chunk ends at a blank line once it is half full, or at a line end once it is full, so an edit
moves only the boundaries near it: the chunks after the next blank line come out the same as
before and keep their content hash (the knowledge store then skips them). Each chunk after the
first starts with the last lines (up to `overlap` characters) of the one before, so a passage cut
at a boundary is still found whole in one of them.
"""

from __future__ import annotations

CHUNK_CHARS = 1500
OVERLAP_CHARS = 200


def chunk_text(text: str, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[str]:
    chunks, tail = [], ""
    for piece in _pieces(text, size):
        chunk = (tail + piece).strip()
        if chunk:
            chunks.append(chunk)
        tail = _tail(piece, overlap)
    return chunks


def _pieces(text: str, size: int) -> list[str]:
    pieces: list[str] = []
    current: list[str] = []
    length = 0
    for line in _lines(text, size):
        current.append(line)
        length += len(line)
        if length >= size or (length >= size // 2 and not line.strip()):
            pieces.append("".join(current))
            current, length = [], 0
    if current:
        pieces.append("".join(current))
    return pieces


def _lines(text: str, size: int) -> list[str]:
    """Lines with their endings; a line longer than a chunk is cut at spaces (or hard) to fit."""
    out = []
    for line in text.splitlines(keepends=True):
        while len(line) > size:
            cut = line.rfind(" ", size // 2, size)
            cut = cut + 1 if cut != -1 else size
            out.append(line[:cut])
            line = line[cut:]
        out.append(line)
    return out


def _tail(piece: str, overlap: int) -> str:
    """The last whole lines of piece that fit in overlap characters (or its last words)."""
    if overlap <= 0:
        return ""
    lines = piece.splitlines(keepends=True)
    taken: list[str] = []
    total = 0
    for line in reversed(lines):
        if total + len(line) > overlap:
            break
        taken.append(line)
        total += len(line)
    if taken:
        return "".join(reversed(taken))
    end = piece[-overlap:]
    space = end.find(" ")
    return end[space + 1 :] if space != -1 else end
