"""The hard floor: the few commands run_command denies in every mode, bypass included.

`floor_violation(line)` gives the reason, or None: wiping `/` or a home directory (`rm -r`,
`find -delete`), mkfs and friends, writing onto a block device (`dd of=`, a redirection,
tee/cp/shred), a fork bomb, shutdown/reboot/halt/poweroff, and `chmod`/`chown -R` on `/`. Each
program of the line, as `agent.safety.command_reading` finds it, is judged on its own.

It is a room of its own because it is the one part of the command guard no mode and no operator
setting relaxes; the rules that let a line run without asking are `agent.safety.command_approval`.

This is a floor, not the wall: it cannot see what a script file or a program does on its own.
The OS sandbox around run_command is what contains those.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Iterator

from agent.safety.command_reading import MAX_DEPTH, Program, program_name, read, split_options
from agent.safety.shell_tokens import DYNAMIC

_BLOCK_DEVICE = re.compile(
    r"^/dev/(?:[shv]d[a-z]|xvd[a-z]|nvme\d|mmcblk\d|md\d|dm-\d|loop\d|nbd\d|zram\d|ram\d|sr\d|"
    r"mapper/|disk/|block/|root$)"
)
_HOME_PREFIX = re.compile(r"^(?:~[A-Za-z0-9_.-]*|\$HOME\b|\$\{HOME(?:[:?%#/=+-][^}]*)?\})")
_HOME_MARK = "/\x01home"
_POWER_VERBS = frozenset({"poweroff", "reboot", "halt", "kexec", "soft-reboot"})
_FORMATTERS = ("mkfs", "mke2fs", "mkswap", "mkntfs", "mkdosfs", "mkexfatfs", "mkfs.*", "wipefs", "blkdiscard")


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
    base = program_name(head)
    if not any(c in base for c in "*?["):
        return [base]
    known = [*_RULES, *[f for f in _FORMATTERS if "*" not in f], "mkfs.ext4", "mkfs.xfs", "mkfs.vfat"]
    return [name for name in known if fnmatch.fnmatchcase(name, base)]


def _is_formatter(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in _FORMATTERS)


def _format_rule(name: str, args: list[str]) -> str | None:
    return f"{name} formats or wipes a filesystem or block device"


def _recursive(options: list[str], letters: str) -> bool:
    return any(o == "--recursive" or (not o.startswith("--") and set(o[1:]) & set(letters)) for o in options)


def _rm_rule(name: str, args: list[str]) -> str | None:
    options, operands = split_options(args)
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
        args[k] in ("-exec", "-execdir") and k + 1 < len(args) and program_name(args[k + 1]) in ("rm", "shred")
        for k in range(len(args))
    )
    precious = [t for t in starts if _precious(t)]
    return f"find would delete everything under {precious[0]}" if destructive and precious else None


def _mode_rule(name: str, args: list[str]) -> str | None:
    options, operands = split_options(args)
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
    operands = split_options(args)[1]
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
