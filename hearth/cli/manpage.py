"""Man pages for `hearth` and `hearth-loop`, rendered from their argparse parsers as roff.

`hearth man [hearth|hearth-loop]` prints one; nix/package.nix installs both at build time, so
`man hearth` shows every command with the same options and exit codes `--help` prints.
"""

from __future__ import annotations

import argparse

from hearth import __version__
from hearth.cli.completion import Command, walk

SEE_ALSO = ".BR hearth (1),\n.BR hearth\\-loop (1),\n.BR systemd.unit (5)"


def render(program: str, parser: argparse.ArgumentParser) -> str:
    commands = walk(program, parser)
    top, subcommands = commands[0], [c for c in commands[1:] if not c.subcommands]
    lines = [
        f'.TH {_roff(program.upper())} 1 "" "{program} {__version__}" "User Commands"',
        ".SH NAME",
        f"{_roff(program)} \\- {_roff(parser.description or '')}",
        ".SH SYNOPSIS",
        *_block(parser.format_usage().removeprefix("usage: ")),
        ".SH OPTIONS",
        *_options(top),
    ]
    if subcommands:
        lines.append(".SH COMMANDS")
        for command in subcommands:
            lines += _command(parser, command)
    if parser.epilog:
        lines += [".SH NOTES", *_block(parser.epilog)]
    lines += [".SH SEE ALSO", SEE_ALSO]
    return "\n".join(lines) + "\n"


def _command(root: argparse.ArgumentParser, command: Command) -> list[str]:
    parser = _parser_at(root, command.path)
    lines = [f'.SS "{_roff(" ".join((command.program, *command.path)))}"']
    if command.help:
        lines.append(_roff(command.help))
    lines += [".PP", *_block(parser.format_usage().removeprefix("usage: "))]
    lines += _options(command)
    if parser.epilog:
        lines += [".PP", *_block(parser.epilog)]
    return lines


def _parser_at(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> argparse.ArgumentParser:
    for word in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


def _options(command: Command) -> list[str]:
    lines = []
    for action in command.options:
        if isinstance(action, argparse._HelpAction):
            continue
        metavar = f" {action.metavar or action.dest.upper()}" if action.nargs != 0 else ""
        shown = ", ".join(f"\\fB{_roff(option)}\\fR" for option in action.option_strings)
        lines += [".TP", f"{shown}{_roff(str(metavar))}", _roff(action.help or "")]
    return lines


def _block(text: str) -> list[str]:
    """Text kept as written (usage lines, epilogs with their own layout)."""
    return [".nf", *(_roff(line) for line in text.rstrip().splitlines()), ".fi"]


def _roff(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text
