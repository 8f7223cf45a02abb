"""Shell text to tokens: the character-by-character half of reading a line the way /bin/sh would.

`Lexer(text).run()` gives the line's tokens (words, control operators, redirection operators):

- quotes: '...', "..." (backslash escapes inside), $'...' with its escapes decoded, backslashes;
- substitutions: the text inside `$(...)`, backticks, `<(...)`/`>(...)` and `$((...))` (when it
  holds one) is set aside in `subs`, and the word that held it gets DYNAMIC;
- `$IFS` unquoted ends a word (the old `rm${IFS}-rf` trick), a `#` comment is skipped to the end
  of its line, and the fd number before a redirection (`2>`) is dropped.

It is a room of its own because it is the only code that walks characters, a state machine over
quotes and nesting; `agent.safety.shell_words` groups its tokens into commands and never looks at
a character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DYNAMIC = "\x00"  # stands for text known only when the shell runs the line
_OPERATORS = ("&&", "||", ";;", "|&", ";", "&", "|", "(", ")", "\n")
_REDIRECT = re.compile(r"&>>|&>|>>|>\||>&|<<<|<<-|<<|<>|<&|>|<")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ANSI_SIMPLE = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


@dataclass
class Token:
    kind: str  # 'word' | 'op' | 'redir'
    text: str


class Lexer:
    """Characters to tokens, with quotes removed and substitutions set aside."""

    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0
        self.tokens: list[Token] = []
        self.subs: list[str] = []
        self.complete = True
        self.word: list[str] = []
        self.in_word = False
        self.quoted = False

    def run(self) -> list[Token]:
        while self.i < len(self.text):
            self._step(self.text[self.i])
        self._end_word()
        return self.tokens

    def _step(self, c: str) -> None:
        if c in " \t\r":
            self._end_word()
            self.i += 1
        elif c == "#" and not self.in_word:
            end = self.text.find("\n", self.i)
            self.i = len(self.text) if end < 0 else end
        elif c == "\\":
            self._backslash()
        elif c == "'":
            self._single()
        elif c == '"':
            self._double()
        elif c == "$":
            self._dollar(quoted=False)
        elif c == "`":
            self._backtick()
        elif c in "<>" and self.text.startswith("(", self.i + 1):
            self._substitution(self.i + 1)
        elif not self._operator():
            self._add(c)
            self.i += 1

    def _add(self, text: str) -> None:
        self.word.append(text)
        self.in_word = True

    def _end_word(self) -> None:
        if self.in_word:
            self.tokens.append(Token("word", "".join(self.word)))
        self.word, self.in_word, self.quoted = [], False, False

    def _operator(self) -> bool:
        redirect = _REDIRECT.match(self.text, self.i)
        if redirect:
            if self.in_word and not self.quoted and "".join(self.word).isdigit():
                self.word, self.in_word = [], False  # `2>`: a file descriptor number, not a word
            self._end_word()
            self.tokens.append(Token("redir", redirect.group()))
            self.i = redirect.end()
            return True
        for op in _OPERATORS:
            if self.text.startswith(op, self.i):
                self._end_word()
                self.tokens.append(Token("op", ";" if op == "\n" else op))
                self.i += len(op)
                return True
        return False

    def _backslash(self) -> None:
        nxt = self.text[self.i + 1 : self.i + 2]
        if nxt != "\n":  # backslash-newline joins lines
            self._add(nxt)
            self.quoted = True
        self.i += 2

    def _single(self) -> None:
        end = self.text.find("'", self.i + 1)
        if end < 0:
            self.complete, end = False, len(self.text)
        self._add(self.text[self.i + 1 : end])
        self.quoted, self.i = True, end + 1

    def _double(self) -> None:
        self.i += 1
        self.in_word = self.quoted = True
        while self.i < len(self.text):
            c = self.text[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.text[self.i + 1 : self.i + 2] in ("$", "`", '"', "\\", "\n"):
                self.word.append(self.text[self.i + 1].replace("\n", ""))
                self.i += 2
            elif c == "$":
                self._dollar(quoted=True)
            elif c == "`":
                self._backtick()
            else:
                self.word.append(c)
                self.i += 1
        self.complete = False

    def _dollar(self, *, quoted: bool) -> None:
        rest = self.text[self.i + 1 : self.i + 2]
        name = _NAME.match(self.text, self.i + 1)
        if rest == "(":
            self._substitution(self.i + 1)
        elif rest == "'" and not quoted:
            self._ansi_c()
        elif rest == '"' and not quoted:
            self.i += 1  # $"..." is "..." translated; the next step reads it as "..."
        elif rest == "{":
            self._braced_parameter(quoted=quoted)
        elif name and name.group() == "IFS" and not quoted:
            self._end_word()  # unquoted $IFS splits words, which is how it hides spaces
            self.i = name.end()
        else:
            end = name.end() if name else self.i + 1 + (1 if rest and rest in "?$!#@*-0123456789" else 0)
            self._add(self.text[self.i : end])
            self.i = end

    def _braced_parameter(self, *, quoted: bool) -> None:
        end = _matching(self.text, self.i + 1, "{", "}")
        if end is None:
            self.complete, end = False, len(self.text) - 1
        inner = self.text[self.i + 2 : end]
        if "$(" in inner or "`" in inner:
            self.subs.append(inner)  # ${x:-$(cmd)} runs cmd
            self._add(DYNAMIC)
        elif re.match(r"IFS\b", inner) and not quoted:
            self._end_word()
        else:
            self._add(self.text[self.i : end + 1])
        self.i = end + 1

    def _substitution(self, open_at: int) -> None:
        """$(...), $((...)), <(...) or >(...) starting with the '(' at open_at."""
        end = _matching(self.text, open_at, "(", ")")
        if end is None:
            self.complete, end = False, len(self.text)
        inner = self.text[open_at + 1 : end]
        if not self.text.startswith("((", open_at) or "$(" in inner or "`" in inner:
            self.subs.append(inner)  # arithmetic runs nothing unless it holds a substitution
        self._add(DYNAMIC)
        self.i = end + 1

    def _backtick(self) -> None:
        j, inner = self.i + 1, []
        while j < len(self.text) and self.text[j] != "`":
            if self.text[j] == "\\" and j + 1 < len(self.text):
                inner.append(self.text[j + 1])
                j += 2
                continue
            inner.append(self.text[j])
            j += 1
        if j >= len(self.text):
            self.complete = False
        self.subs.append("".join(inner))
        self._add(DYNAMIC)
        self.i = j + 1

    def _ansi_c(self) -> None:
        j, out = self.i + 2, []
        while j < len(self.text) and self.text[j] != "'":
            if self.text[j] == "\\" and j + 1 < len(self.text):
                decoded, j = _ansi_escape(self.text, j + 1)
                out.append(decoded)
                continue
            out.append(self.text[j])
            j += 1
        if j >= len(self.text):
            self.complete = False
        self._add("".join(out))
        self.quoted, self.i = True, j + 1


def _ansi_escape(text: str, j: int) -> tuple[str, int]:
    """The character a $'...' escape stands for, and where the escape ends."""
    c = text[j]
    if c in _ANSI_SIMPLE:
        return _ANSI_SIMPLE[c], j + 1
    spec = {"x": (16, 2), "u": (16, 4), "U": (16, 8)}.get(c)
    base, width, start = (spec[0], spec[1], j + 1) if spec else (8, 3, j)
    digits = re.match(rf"[0-9a-fA-F]{{1,{width}}}" if base == 16 else r"[0-7]{1,3}", text[start:])
    if not digits:
        return "\\" + c, j + 1
    try:
        return chr(int(digits.group(), base)), start + digits.end()
    except (ValueError, OverflowError):
        return "", start + digits.end()


def _matching(text: str, open_at: int, opener: str, closer: str) -> int | None:
    """Index of the closer balancing text[open_at], skipping quoted text; None if never closed."""
    depth, j = 0, open_at
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c in "'\"":
            end = _quote_end(text, j)
            if end is None:
                return None
            j = end
        elif c == opener:
            depth += 1
        elif c == closer:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return None


def _quote_end(text: str, j: int) -> int | None:
    quote, j = text[j], j + 1
    while j < len(text) and text[j] != quote:
        j += 2 if quote == '"' and text[j] == "\\" else 1
    return j if j < len(text) else None
