"""Which run_command lines run without asking: the operator's auto-approved heads.

`auto_approved(line, heads)` is True when the line is only simple commands (no redirection,
subshell, substitution, assignment or wrapper such as `sh -c`, `env`, `xargs`) joined by `;`,
`&&`, `||` or `|`, and every program of it is one of the operator's heads (`git`, `ls`,
`pytest`), written literally. `heads(line)` names the programs an "always" answer would cover.

It is a room of its own because it only ever loosens `auto` mode, and an operator setting drives
it; the hard floor (`agent.safety.command_floor`) is judged first and nothing here can undo it.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.safety.command_reading import SCRIPT_OPTIONS, SHELLS, WRAPPERS, program_name, read
from agent.safety.shell_tokens import DYNAMIC
from agent.safety.shell_words import parse


def heads(line: str) -> list[str] | None:
    """The program of every command in ``line``, or None when one of them cannot be known
    (a variable or substitution as the program, assignments in front, an unclosed quote)."""
    reading = read(line)
    if not reading.complete or reading.too_deep or not reading.programs:
        return None
    found = []
    for program in reading.programs:
        head = program.head
        if program.assignments or not head or DYNAMIC in head or "$" in head or any(c in head for c in "*?["):
            return None
        found.append(head)
    return found


_CHAINS = frozenset({";", "&&", "||", "|", "\n"})  # what may join simple commands of an auto-approved line


def simple_heads(line: str) -> list[str] | None:
    """The program of every command of ``line`` when it is only simple commands joined by ``;``,
    ``&&``, ``||``, ``|`` or newlines: no redirection, subshell, group or other compound, no
    substitution, no assignment, no wrapper or shell (sudo, env, xargs, sh -c, eval, find -exec
    ...); None otherwise."""
    parsed = parse(line)
    if not parsed.complete or parsed.substitutions or parsed.functions or not parsed.commands:
        return None
    if any(op not in _CHAINS for op in parsed.operators):
        return None
    found = []
    for command in parsed.commands:
        head = command.words[0] if command.words else ""
        if command.redirects or command.assignments or command.compound or not _plain_head(head):
            return None
        if head in ("find", "xargs") and any(w.startswith(("-exec", "-ok")) for w in command.words):
            return None
        found.append(head)
    return found


def _plain_head(head: str) -> bool:
    if not head or DYNAMIC in head or any(c in head for c in "$*?[\\"):
        return False
    base = program_name(head)
    return base not in WRAPPERS and base not in SHELLS and base not in SCRIPT_OPTIONS and base not in ("eval", "watch")


def auto_approved(line: str, allowed_heads: Iterable[str]) -> bool:
    """True when ``line`` is simple (`simple_heads`) and every program of it is one of
    ``allowed_heads``, as written: `ls > out` or `sh -c 'ls'` ask even when ls is listed.

    A head with a slash matches only the same path: `./git` is not `git`.
    """
    allowed = {h.strip() for h in allowed_heads if h.strip()}
    found = simple_heads(line)
    return bool(allowed) and found is not None and all(head in allowed for head in found)
