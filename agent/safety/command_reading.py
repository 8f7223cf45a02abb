"""What a run_command line really runs: every program, its wrappers peeled and its shell text re-read.

`read(line)` reads the line with `agent.safety.shell_words` and peels the wrappers that only start
another program (sudo, doas, env, nohup, timeout, nice, ionice, stdbuf, setsid, xargs, command,
exec, builtin, time, busybox, chroot, flock, taskset, watch), re-reads what shells are handed as
text (`sh -c`, `bash -c`, `eval`, `su -c`, `env -S`, a literal `echo ... | sh`), and adds find's
`-exec` commands. Every program it yields is judged on its own, so nothing chained after an
allowed command rides along.

It is a room of its own because two sets of rules judge what it finds and neither owns it: the
hard floor (`agent.safety.command_floor`) and the auto-approved heads
(`agent.safety.command_approval`). It decides nothing itself.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from agent.safety.shell_words import Command, parse

MAX_DEPTH = 6  # nested sh -c / eval / $(...) / find -exec levels; deeper than any real command goes
_MAX_WRAPPERS = 16  # wrappers peeled off one command

# wrapper -> (options that take a value, positional words before the wrapped program)
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (
        frozenset(
            [
                "-u",
                "-g",
                "-C",
                "-D",
                "-h",
                "-p",
                "-r",
                "-t",
                "-U",
                "-T",
                "--user",
                "--group",
                "--close-from",
                "--chdir",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--other-user",
                "--command-timeout",
            ]
        ),
        0,
    ),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "nohup": (frozenset(), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "setsid": (frozenset(), 0),
    "xargs": (
        frozenset(
            [
                "-a",
                "-d",
                "-E",
                "-e",
                "-I",
                "-i",
                "-L",
                "-l",
                "-n",
                "-P",
                "-s",
                "--arg-file",
                "--delimiter",
                "--eof",
                "--replace",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ]
        ),
        0,
    ),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "busybox": (frozenset(), 0),
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "flock": (frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}), 1),
    "taskset": (frozenset(), 1),
    "unbuffer": (frozenset(), 0),
    "runuser": (frozenset({"-u", "-g", "-G", "--user", "--group", "--supp-group"}), 0),
}
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish"})
SCRIPT_OPTIONS = {
    "su": ("-c", "--command"),
    "flock": ("-c", "--command"),
    "runuser": ("-c", "--command"),
    "env": ("-S", "--split-string"),
}


@dataclass
class Program:
    """One program the line runs, after wrappers: its words, and whether NAME=value came first."""

    words: list[str]
    assignments: bool = False  # PATH=. git ... runs ./git: such a line is never auto-approved

    @property
    def head(self) -> str:
        return self.words[0] if self.words else ""


@dataclass
class Reading:
    programs: list[Program] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)  # targets of output redirections
    complete: bool = True  # False: a quote or substitution left open
    too_deep: bool = False  # nesting past MAX_DEPTH
    fork_bomb: str | None = None


def read(line: str) -> Reading:
    """Every program ``line`` runs, wrappers peeled and shell text re-read, in order."""
    reading = Reading()
    _read_into(reading, line, 0)
    return reading


def _read_into(reading: Reading, line: str, depth: int, assigned: bool = False) -> None:
    if depth > MAX_DEPTH:
        reading.too_deep = True
        return
    parsed = parse(line)
    reading.complete &= parsed.complete
    reading.fork_bomb = reading.fork_bomb or _fork_bomb(parsed.functions)
    for index, command in enumerate(parsed.commands):
        reading.writes += [target for op, target in command.redirects if ">" in op]
        before = parsed.commands[index - 1] if index else None
        _peel(reading, command.words, assigned or bool(command.assignments), depth, before)
    for sub in parsed.substitutions:
        _read_into(reading, sub, depth + 1)


def _peel(reading: Reading, words: list[str], assigned: bool, depth: int, before: Command | None) -> None:
    """Take wrappers off ``words`` until the real program shows; re-read text handed to a shell."""
    if depth > MAX_DEPTH:
        reading.too_deep = True
        return
    for _ in range(_MAX_WRAPPERS):
        while words and _assignment(words[0]):
            assigned, words = True, words[1:]
        if not words:
            return
        head = program_name(words[0])
        script = _script_argument(head, words[1:], before)
        if script is not None:
            _read_into(reading, script, depth + 1, assigned)  # PATH=. sh -c 'git' runs ./git
            return
        if head == "find":
            _find_exec(reading, words, depth)
        inner = _after_options(words[1:], *WRAPPERS[head]) if head in WRAPPERS else []
        if head == "xargs" and not inner:
            inner = ["echo"]  # what xargs runs when given no program
        if not inner:
            reading.programs.append(Program(words, assigned))
            return
        words = inner
    reading.too_deep = True  # `sudo sudo sudo ...`: nobody writes that many wrappers


def _script_argument(head: str, args: list[str], before: Command | None) -> str | None:
    """Shell text a program is handed to run: sh -c TEXT, eval TEXT, su -c TEXT, echo TEXT | sh."""
    if head == "eval":
        return " ".join(args)
    if head == "watch":
        return " ".join(_after_options(args, frozenset({"-n", "--interval"}), 0))
    if head in SHELLS:
        script = _shell_c(args)
        if script is None and not split_options(args)[1]:
            script = _echoed(before)  # echo TEXT | sh
        return script
    for option in SCRIPT_OPTIONS.get(head, ()):
        for k, arg in enumerate(args):
            if arg == option and k + 1 < len(args):
                return args[k + 1]
            if arg.startswith(option + "="):
                return arg.split("=", 1)[1]
    return None


def _echoed(before: Command | None) -> str | None:
    """The literal text an `echo`/`printf` just before a shell reading its stdin hands it."""
    if before is None or not before.words or program_name(before.words[0]) not in ("echo", "printf"):
        return None
    return " ".join(w for w in before.words[1:] if not w.startswith("-"))


def _shell_c(args: list[str]) -> str | None:
    """The TEXT of `sh [options] -c TEXT`, or None when the shell runs a file or its stdin."""
    k, has_c = 0, False
    while k < len(args) and args[k][:1] in "-+" and args[k] not in ("-", "--"):
        option = args[k]
        has_c |= not option.startswith("--") and "c" in option[1:]
        k += 2 if option in ("-o", "+o", "-O", "+O") else 1
    k += args[k : k + 1] == ["--"]
    if has_c:
        return args[k] if k < len(args) else ""
    return None


def _after_options(args: list[str], takes_value: frozenset[str], positional: int) -> list[str]:
    k = 0
    while k < len(args) and args[k].startswith("-") and args[k] != "-":
        if args[k] == "--":
            k += 1
            break
        k += 2 if args[k] in takes_value else 1
    return args[k + positional :]


def _find_exec(reading: Reading, words: list[str], depth: int) -> None:
    """find ... -exec CMD {} ; runs CMD: it is a program of the line too."""
    k = 0
    while k < len(words):
        if words[k] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(k + 1, len(words)) if words[j] in (";", "+")), len(words))
            if end > k + 1:
                _peel(reading, words[k + 1 : end], False, depth + 1, None)
            k = end
        k += 1


def _assignment(word: str) -> bool:
    return re.match(r"^[A-Za-z_][A-Za-z0-9_]*\+?=", word) is not None


def program_name(word: str) -> str:
    """The program a word names: its base name, without the backslash that only skips an alias."""
    word = word.lstrip("\\")
    return posixpath.basename(word) if "/" in word else word


def _fork_bomb(functions: dict[str, list[str]]) -> str | None:
    for name, body in functions.items():
        if body.count(name) >= 2:  # a function that starts itself twice doubles every generation
            return f"a fork bomb (function {name!r} starts itself more than once)"
    return None


def split_options(args: list[str]) -> tuple[list[str], list[str]]:
    """(options, operands) with '--' ending the options."""
    options, operands, ended = [], [], False
    for arg in args:
        if ended or not arg.startswith("-") or arg == "-":
            operands.append(arg)
        elif arg == "--":
            ended = True
        else:
            options.append(arg)
    return options, operands
