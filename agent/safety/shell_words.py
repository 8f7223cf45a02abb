"""Read a shell line the way /bin/sh would split it, without running any of it.

`parse(line)` gives every simple command the line would run, as words after quote removal:

- quotes: '...', "..." (backslash escapes inside), $'...' with its escapes decoded, backslashes;
- substitutions: `$(...)`, backticks, `<(...)`/`>(...)` and `$((...))` are parsed as commands of
  their own; the word that held one gets DYNAMIC, because its text is only known at run time;
- chains: `;` `&&` `||` `|` `|&` `&`, newlines, subshells `( )` and groups `{ }`;
- redirections are taken out of the words (their targets kept), fd numbers dropped;
- `$IFS` splits words (the old `rm${IFS}-rf` trick), `{a,b}` braces expand (bash does), and a
  variable set earlier on the line to a literal (`a=rm; $a -rf /`) is replaced by its value.

What it returns is a plain reading of the text, nothing more: which programs those words start
and what they mean is `agent.safety.command_reading`'s business.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

DYNAMIC = "\x00"  # stands for text known only when the shell runs the line
_OPERATORS = ("&&", "||", ";;", "|&", ";", "&", "|", "(", ")", "\n")
_REDIRECT = re.compile(r"&>>|&>|>>|>\||>&|<<<|<<-|<<|<>|<&|>|<")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\+?=(.*)$", re.S)
_BRACES = re.compile(r"^(.*?)\{([^{}]*,[^{}]*)\}(.*)$", re.S)
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
_KEYWORDS = frozenset(
    {
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "do",
        "done",
        "while",
        "until",
        "!",
        "{",
        "}",
        "function",
        "case",
        "esac",
        "select",
        "coproc",
    }
)
_MAX_BRACE_WORD = 4096  # longer words are not brace-expanded (the match would cost too much)
_MAX_BRACE_WORDS = 256
_MAX_FUNCTIONS = 64  # a fork bomb is one short function
_MAX_BODY = 4096
MAX_LENGTH = 1_000_000  # beyond this the reading is not attempted


@dataclass
class Command:
    """One simple command: its words, the assignments before it, where it redirects to."""

    words: list[str]
    assignments: dict[str, str] = field(default_factory=dict)
    redirects: list[tuple[str, str]] = field(default_factory=list)  # (operator, target)
    compound: bool = False  # a keyword (if, while, {, !, ...) came off its front


@dataclass
class Line:
    commands: list[Command]
    substitutions: list[str]  # the text inside $(...), backticks, <(...), to be read the same way
    complete: bool  # False when a quote or a substitution was left open
    functions: dict[str, list[str]] = field(default_factory=dict)  # name -> the words of its body
    operators: list[str] = field(default_factory=list)  # the control operators, in order (; && | ( ...)


@dataclass
class _Token:
    kind: str  # 'word' | 'op' | 'redir'
    text: str


class _Lexer:
    """Characters to tokens, with quotes removed and substitutions set aside."""

    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0
        self.tokens: list[_Token] = []
        self.subs: list[str] = []
        self.complete = True
        self.word: list[str] = []
        self.in_word = False
        self.quoted = False

    def run(self) -> list[_Token]:
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
            self.tokens.append(_Token("word", "".join(self.word)))
        self.word, self.in_word, self.quoted = [], False, False

    def _operator(self) -> bool:
        redirect = _REDIRECT.match(self.text, self.i)
        if redirect:
            if self.in_word and not self.quoted and "".join(self.word).isdigit():
                self.word, self.in_word = [], False  # `2>`: a file descriptor number, not a word
            self._end_word()
            self.tokens.append(_Token("redir", redirect.group()))
            self.i = redirect.end()
            return True
        for op in _OPERATORS:
            if self.text.startswith(op, self.i):
                self._end_word()
                self.tokens.append(_Token("op", ";" if op == "\n" else op))
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


def parse(line: str) -> Line:
    """Every simple command of ``line``, in order, with the texts of its substitutions."""
    if len(line) > MAX_LENGTH:
        return Line([], [], complete=False)
    lexer = _Lexer(line)
    tokens = lexer.run()
    commands, functions = _commands(tokens)
    operators = [token.text for token in tokens if token.kind == "op"]
    return Line(commands, lexer.subs, lexer.complete, functions, operators)


def _commands(tokens: list[_Token]) -> tuple[list[Command], dict[str, list[str]]]:
    commands: list[Command] = []
    variables: dict[str, str] = {}
    current = Command([])
    pending_redirect = ""
    for token in tokens:
        if token.kind == "redir":
            pending_redirect = token.text
        elif token.kind == "word" and pending_redirect:
            current.redirects.append((pending_redirect, token.text))
            pending_redirect = ""
        elif token.kind == "word":
            current.words.append(token.text)
        else:
            _close(current, commands, variables)
            current = Command([])
    _close(current, commands, variables)
    return commands, _functions(tokens)


def _close(command: Command, commands: list[Command], variables: dict[str, str]) -> None:
    """Finish one simple command: keywords and assignments off the front, words expanded."""
    words = list(command.words)
    while words and (words[0] in _KEYWORDS or _ASSIGNMENT.match(words[0])):
        command.compound |= words[0] in _KEYWORDS
        assignment = _ASSIGNMENT.match(words.pop(0))
        if assignment:
            command.assignments[assignment.group(1)] = assignment.group(2)
    if not words:  # `a=rm` alone sets a shell variable for the rest of the line
        variables.update({k: v for k, v in command.assignments.items() if DYNAMIC not in v and "$" not in v})
    if words[:1] == ["export"]:
        for word in words[1:]:
            assignment = _ASSIGNMENT.match(word)
            if assignment and DYNAMIC not in assignment.group(2):
                variables[assignment.group(1)] = assignment.group(2)
    command.words = [w for word in words for w in _expand(word, variables)]
    if command.words or command.redirects:
        commands.append(command)


def _literally(text: str) -> Callable[[re.Match[str]], str]:
    """A re.sub replacement that is `text` as written (no backslash escapes)."""
    return lambda match: text


def _expand(word: str, variables: dict[str, str]) -> list[str]:
    for name, value in variables.items():
        word = word.replace("${" + name + "}", value)
        word = re.sub(r"\$" + name + r"(?![A-Za-z0-9_])", _literally(value), word)
    words, done = [word], list[str]()
    while words and len(done) + len(words) <= _MAX_BRACE_WORDS:
        current = words.pop()
        braces = _BRACES.match(current) if len(current) <= _MAX_BRACE_WORD else None
        if braces:  # bash brace expansion: {rm,-rf,/} is three words
            words += [braces.group(1) + part + braces.group(3) for part in reversed(braces.group(2).split(","))]
        else:
            done.append(current)
    return done + words[::-1]


def _functions(tokens: list[_Token]) -> dict[str, list[str]]:
    """name() { body } and `function name { body }`: the words of each body.

    Bounded (the first _MAX_FUNCTIONS definitions, bodies of at most _MAX_BODY tokens), so a
    line of thousands of unclosed definitions costs no more than any other line.
    """
    found: dict[str, list[str]] = {}
    definitions = 0
    for k, token in enumerate(tokens):
        if token.kind != "word" or definitions >= _MAX_FUNCTIONS:
            continue
        parens = [(t.kind, t.text) for t in tokens[k + 1 : k + 3]] == [("op", "("), ("op", ")")]
        keyword = k > 0 and tokens[k - 1].text == "function" and tokens[k - 1].kind == "word"
        if not (parens or keyword):
            continue
        start = k + (3 if parens else 1)
        definitions += 1
        found[token.text.lstrip("\\")] = _body(tokens, start)
    return found


def _body(tokens: list[_Token], start: int) -> list[str]:
    depth, body = 0, []
    for token in tokens[start : start + _MAX_BODY]:
        if token.kind == "word" and token.text == "{":
            depth += 1
        elif token.kind == "word" and token.text == "}":
            depth -= 1
            if depth <= 0:
                break
        elif token.kind == "op" and token.text in "()" and depth == 0:
            depth += 1 if token.text == "(" else -1
            if depth < 0:
                break
        body.append(token.text)
    return body
