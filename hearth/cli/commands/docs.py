"""`hearth completion SHELL` and `hearth man [PROGRAM]`: generated from the parsers themselves.

Both build the whole parser tree (every command module is imported), which is why they are
commands of their own and nothing else pays for it.
"""

from __future__ import annotations

import argparse

from hearth.settings import Settings

PROGRAMS = ("hearth", "hearth-loop")


def register(sub: argparse._SubParsersAction) -> None:
    from hearth.cli.completion import SHELLS

    completion = sub.add_parser(
        "completion",
        help="print a shell completion script for hearth and hearth-loop",
        epilog="bash: source <(hearth completion bash); zsh: put `hearth completion zsh` in a file _hearth "
        "on $fpath; fish: hearth completion fish > ~/.config/fish/completions/hearth.fish",
    )
    completion.add_argument("shell", choices=SHELLS)
    completion.set_defaults(handler=print_completion)
    man = sub.add_parser("man", help="print the man page of hearth or hearth-loop (roff; pipe to man -l -)")
    man.add_argument("program", nargs="?", choices=PROGRAMS, default="hearth")
    man.set_defaults(handler=print_man)


def parsers(settings: Settings) -> dict[str, argparse.ArgumentParser]:
    from hearth.cli.loop import build_parser as build_loop_parser
    from hearth.cli.main import build_parser

    return {"hearth": build_parser(), "hearth-loop": build_loop_parser(settings)}


def print_completion(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.cli.completion import render, walk

    trees = [walk(name, parser) for name, parser in parsers(settings).items()]
    print(render(args.shell, trees), end="")
    return 0


def print_man(args: argparse.Namespace, settings: Settings) -> int:
    from hearth.cli.manpage import render

    print(render(args.program, parsers(settings)[args.program]), end="")
    return 0
