"""What a run_command line really runs: the hard floor and the operator's auto-approved heads.

`programs(line)` reads the line with `agent.safety.shell_words` and peels the wrappers that only start
another program (sudo, doas, env, nohup, timeout, nice, ionice, stdbuf, setsid, xargs, command,
exec, builtin, time, busybox, chroot, flock, taskset, watch), re-reads what shells are handed as
text (`sh -c`, `bash -c`, `eval`, `su -c`, `env -S`, a literal `echo ... | sh`), and adds find's
`-exec` commands. Every program it yields is judged on its own, so nothing chained after an
allowed command rides along.

- `floor_violation(line)`: the reason the line is denied in every mode, bypass included: wiping
  `/` or a home directory (`rm -r`, `find -delete`), mkfs and friends, writing onto a block device
  (`dd of=`, a redirection, tee/cp/shred), a fork bomb, shutdown/reboot/halt/poweroff, and
  `chmod`/`chown -R` on `/`.
- `auto_approved(line, heads)`: True when the line is only simple commands (no redirection,
  subshell, substitution, assignment or wrapper such as `sh -c`, `env`, `xargs`) joined by `;`,
  `&&`, `||` or `|`, and every program of it is one of the operator's heads (`git`, `ls`,
  `pytest`), written literally.

This is a floor, not the wall: it cannot see what a script file or a program does on its own.
The OS sandbox around run_command is what contains those.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from agent.safety.shell_words import DYNAMIC, Command, parse

MAX_DEPTH = 6  # nested sh -c / eval / $(...) / find -exec levels; deeper than any real command goes
_MAX_WRAPPERS = 16  # wrappers peeled off one command

# wrapper -> (options that take a value, positional words before the wrapped program)
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
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
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish"})
_SCRIPT_OPTIONS = {
    "su": ("-c", "--command"),
    "flock": ("-c", "--command"),
    "runuser": ("-c", "--command"),
    "env": ("-S", "--split-string"),
}
_BLOCK_DEVICE = re.compile(
    r"^/dev/(?:[shv]d[a-z]|xvd[a-z]|nvme\d|mmcblk\d|md\d|dm-\d|loop\d|nbd\d|zram\d|ram\d|sr\d|"
    r"mapper/|disk/|block/|root$)"
)
_HOME_PREFIX = re.compile(r"^(?:~[A-Za-z0-9_.-]*|\$HOME\b|\$\{HOME(?:[:?%#/=+-][^}]*)?\})")
_HOME_MARK = "/\x01home"
_POWER_VERBS = frozenset({"poweroff", "reboot", "halt", "kexec", "soft-reboot"})
_FORMATTERS = ("mkfs", "mke2fs", "mkswap", "mkntfs", "mkdosfs", "mkexfatfs", "mkfs.*", "wipefs", "blkdiscard")


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
        head = _base(words[0])
        script = _script_argument(head, words[1:], before)
        if script is not None:
            _read_into(reading, script, depth + 1, assigned)  # PATH=. sh -c 'git' runs ./git
            return
        if head == "find":
            _find_exec(reading, words, depth)
        inner = _after_options(words[1:], *_WRAPPERS[head]) if head in _WRAPPERS else []
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
    if head in _SHELLS:
        script = _shell_c(args)
        if script is None and not _split_options(args)[1]:
            script = _echoed(before)  # echo TEXT | sh
        return script
    for option in _SCRIPT_OPTIONS.get(head, ()):
        for k, arg in enumerate(args):
            if arg == option and k + 1 < len(args):
                return args[k + 1]
            if arg.startswith(option + "="):
                return arg.split("=", 1)[1]
    return None


def _echoed(before: Command | None) -> str | None:
    """The literal text an `echo`/`printf` just before a shell reading its stdin hands it."""
    if before is None or not before.words or _base(before.words[0]) not in ("echo", "printf"):
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


def _base(word: str) -> str:
    word = word.lstrip("\\")
    return posixpath.basename(word) if "/" in word else word


def _fork_bomb(functions: dict[str, list[str]]) -> str | None:
    for name, body in functions.items():
        if body.count(name) >= 2:  # a function that starts itself twice doubles every generation
            return f"a fork bomb (function {name!r} starts itself more than once)"
    return None


# --- the hard floor ------------------------------------------------------------------------------


def floor_violation(line: str) -> str | None:
    """Why ``line`` is denied in every mode, or None. See the module docstring for the list."""
    reading = read(line)
    if reading.fork_bomb:
        return reading.fork_bomb
    device = next((t for t in reading.writes if _BLOCK_DEVICE.match(t)), None)
    if device:
        return f"it writes onto the block device {device}"
    for program in reading.programs:
        reason = _program_floor(program)
        if reason:
            return reason
    if reading.too_deep:
        return f"it nests shells, wrappers or substitutions more than {MAX_DEPTH} levels deep, too deep to judge"
    return None


def _program_floor(program: Program) -> str | None:
    for name in _names_for(program.head):
        rule = _RULES.get(name) or (_format_rule if _is_formatter(name) else None)
        reason = rule(name, program.words[1:]) if rule else None
        if reason:
            return reason
    return None


def _names_for(head: str) -> list[str]:
    """The floor's program names a head may be: itself, or what a glob like /bin/r? matches."""
    base = _base(head)
    if not any(c in base for c in "*?["):
        return [base]
    known = [*_RULES, *[f for f in _FORMATTERS if "*" not in f], "mkfs.ext4", "mkfs.xfs", "mkfs.vfat"]
    return [name for name in known if fnmatch.fnmatchcase(name, base)]


def _is_formatter(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in _FORMATTERS)


def _format_rule(name: str, args: list[str]) -> str | None:
    return f"{name} formats or wipes a filesystem or block device"


def _split_options(args: list[str]) -> tuple[list[str], list[str]]:
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


def _recursive(options: list[str], letters: str) -> bool:
    return any(o == "--recursive" or (not o.startswith("--") and set(o[1:]) & set(letters)) for o in options)


def _rm_rule(name: str, args: list[str]) -> str | None:
    options, operands = _split_options(args)
    if "--no-preserve-root" in options:
        return "rm --no-preserve-root"
    precious = [t for t in operands if _precious(t)]
    if _recursive(options, "rR") and precious:
        return f"rm -r would wipe {precious[0]}"
    return None


def _find_rule(name: str, args: list[str]) -> str | None:
    starts = []
    for arg in args:
        if arg.startswith("-") or arg in ("(", "!"):
            break
        starts.append(arg)
    destructive = "-delete" in args or any(
        args[k] in ("-exec", "-execdir") and k + 1 < len(args) and _base(args[k + 1]) in ("rm", "shred")
        for k in range(len(args))
    )
    precious = [t for t in starts if _precious(t)]
    return f"find would delete everything under {precious[0]}" if destructive and precious else None


def _mode_rule(name: str, args: list[str]) -> str | None:
    options, operands = _split_options(args)
    if "--no-preserve-root" in options:
        return f"{name} --no-preserve-root"
    roots = [t for t in operands if _precious(t, homes=False)]
    if _recursive(options, "R") and roots:
        return f"{name} -R on {roots[0]}"
    return None


def _dd_rule(name: str, args: list[str]) -> str | None:
    targets = [a.split("=", 1)[1] for a in args if a.startswith("of=")]
    device = next((t for t in targets if _BLOCK_DEVICE.match(t)), None)
    return f"dd onto the block device {device}" if device else None


def _copy_rule(name: str, args: list[str]) -> str | None:
    operands = _split_options(args)[1]
    written = operands[-1:] if name == "cp" else operands  # cp writes its last operand, tee and shred all
    device = next((a for a in written if _BLOCK_DEVICE.match(a)), None)
    return f"{name} onto the block device {device}" if device else None


def _power_rule(name: str, args: list[str]) -> str | None:
    return f"{name} stops or restarts the machine"


def _init_rule(name: str, args: list[str]) -> str | None:
    return f"{name} {args[0]} stops or restarts the machine" if args[:1] in (["0"], ["6"]) else None


def _control_rule(name: str, args: list[str]) -> str | None:
    verb = next((a for a in args if not a.startswith("-")), "")
    return f"{name} {verb} stops or restarts the machine" if verb in _POWER_VERBS else None


_RULES = {
    "rm": _rm_rule,
    "find": _find_rule,
    "chmod": _mode_rule,
    "chown": _mode_rule,
    "chgrp": _mode_rule,
    "dd": _dd_rule,
    "tee": _copy_rule,
    "cp": _copy_rule,
    "shred": _copy_rule,
    "shutdown": _power_rule,
    "reboot": _power_rule,
    "halt": _power_rule,
    "poweroff": _power_rule,
    "kexec": _power_rule,
    "init": _init_rule,
    "telinit": _init_rule,
    "systemctl": _control_rule,
    "loginctl": _control_rule,
}


def _precious(target: str, *, homes: bool = True) -> bool:
    """Whether ``target`` is / or a home directory (or holds one): what must never be wiped."""
    if DYNAMIC in target:
        return False
    path = target
    home = _HOME_PREFIX.match(path)
    if home:
        path = _HOME_MARK + path[home.end() :]
    if not path.startswith("/"):
        return False
    norm = "/" + posixpath.normpath(path).lstrip("/")
    norm = norm[:-2] or "/" if norm.endswith("/*") else norm
    if norm == "/":
        return True
    if not homes:
        return False
    return re.fullmatch(r"/home/[^/]+", norm) is not None or any(
        norm == h or h.startswith(norm.rstrip("/") + "/") for h in _homes()
    )


def _homes() -> Iterator[str]:
    yield _HOME_MARK
    yield "/root"
    yield "/home/\x01user"  # stands for every /home/NAME
    real = os.path.expanduser("~")
    if real.startswith("/") and real != "/":
        yield posixpath.normpath(real)


# --- auto-approval ------------------------------------------------------------------------------


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
    base = _base(head)
    return (
        base not in _WRAPPERS and base not in _SHELLS and base not in _SCRIPT_OPTIONS and base not in ("eval", "watch")
    )


def auto_approved(line: str, allowed_heads: Iterable[str]) -> bool:
    """True when ``line`` is simple (`simple_heads`) and every program of it is one of
    ``allowed_heads``, as written: `ls > out` or `sh -c 'ls'` ask even when ls is listed.

    A head with a slash matches only the same path: `./git` is not `git`.
    """
    allowed = {h.strip() for h in allowed_heads if h.strip()}
    found = simple_heads(line)
    return bool(allowed) and found is not None and all(head in allowed for head in found)
