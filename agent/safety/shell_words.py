"""Read a shell line the way /bin/sh would split it, without running any of it.

`parse(line)` gives every simple command the line would run, as words after quote removal:

- quotes: '...', "..." (backslash escapes inside), $'...' with its escapes decoded, backslashes;
- substitutions: `$(...)`, backticks, `<(...)`/`>(...)` and `$((...))` are parsed as commands of
  their own; the word that held one gets DYNAMIC, because its text is only known at run time;
- chains: `;` `&&` `||` `|` `|&` `&`, newlines, subshells `( )` and groups `{ }`;
- redirections are taken out of the words (their targets kept), fd numbers dropped;
- `$IFS` splits words (the old `rm${IFS}-rf` trick), `{a,b}` braces expand (bash does), and a
  variable set earlier on the line to a literal (`a=rm; $a -rf /`) is replaced by its value.

The characters are read into tokens by `agent.safety.shell_tokens` (quotes, substitutions,
operators); this module groups those tokens into commands: keywords and assignments taken off the
front, redirection targets taken out of the words, braces and variables expanded, function bodies
found.

What it returns is a plain reading of the text, nothing more: which programs those words start
and what they mean is `agent.safety.command_reading`'s business.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from agent.safety.shell_tokens import DYNAMIC, Lexer, Token

_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\+?=(.*)$", re.S)
_BRACES = re.compile(r"^(.*?)\{([^{}]*,[^{}]*)\}(.*)$", re.S)
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


def parse(line: str) -> Line:
    """Every simple command of ``line``, in order, with the texts of its substitutions."""
    if len(line) > MAX_LENGTH:
        return Line([], [], complete=False)
    lexer = Lexer(line)
    tokens = lexer.run()
    commands, functions = _commands(tokens)
    operators = [token.text for token in tokens if token.kind == "op"]
    return Line(commands, lexer.subs, lexer.complete, functions, operators)


def _commands(tokens: list[Token]) -> tuple[list[Command], dict[str, list[str]]]:
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


def _functions(tokens: list[Token]) -> dict[str, list[str]]:
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


def _body(tokens: list[Token], start: int) -> list[str]:
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
