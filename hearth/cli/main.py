"""`hearth`: the operator's commands. Each command module parses, makes one call, renders.

The command modules live in `hearth/cli/commands/`; only the one of the command being run is
imported (see hearth/cli/commands/__init__.py), so a quick command starts quickly. The conventions
every command gets from here, whoever wrote it: `--version` and `--state-dir` before the command,
a bad flag answered with that command's own usage, and one help line for every `--json`.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from hearth.cli.commands import modules_for
from hearth.errors import HearthError
from hearth.render import fill_json_help, visible_line

if TYPE_CHECKING:
    from hearth.settings import Settings

INTERNAL_ERROR = 70
GLOBAL_VALUED = ("--state-dir",)  # options before the command that take a value


class VersionAction(argparse.Action):
    """`--version`: the version and the commit, worked out only when asked (git is a process)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from hearth.version import describe

        print(describe(parser.prog))
        parser.exit()


class Parser(argparse.ArgumentParser):
    """argparse's parser, but a word that is none of the choices (`hearth aprove`, `hearth kb serch`)
    is answered with the one likely meant, as a mistyped tool or model is."""

    def error(self, message: str) -> NoReturn:
        found = re.fullmatch(r"(argument .+?: invalid choice: '(.*)') \(choose from (.*)\)", message, re.S)
        if found:
            choices = [choice.strip(" '") for choice in found.group(3).split(",")]
            near = difflib.get_close_matches(found.group(2), choices, n=1)
            if near:
                message = f"{found.group(1)}; did you mean {near[0]}? (choose from {found.group(3)})"
        super().error(message)


def add_common(parser: argparse.ArgumentParser) -> None:
    """What `hearth` and `hearth-loop` both take before anything else."""
    parser.add_argument("--version", action=VersionAction)
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="audit, queue, live state and workspaces (default $HEARTH_STATE_DIR, else /var/lib/hearth)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def positive(text: str) -> int:
    """The argument type of every count a command takes (--limit, --concurrency): 1 or more."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return int(text)


def use_state_dir(state_dir: str | None) -> None:
    """--state-dir wins over $HEARTH_STATE_DIR, for this process and what it starts."""
    if state_dir:
        os.environ["HEARTH_STATE_DIR"] = os.path.abspath(state_dir)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with `command`'s module registered, or every module's when it is None or unknown."""
    parser = Parser(
        prog="hearth",
        description="Operate hearth: run the demo, read the audit, manage the queue and the stores.",
        epilog="exit codes: 0 ok, 1 a check or run failed, 2 bad usage or missing record, 70 internal error",
    )
    add_common(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in modules_for(command):
        module.register(sub)
    own_usage(sub)
    fill_json_help(parser)
    return parser


def own_usage(sub: argparse._SubParsersAction) -> None:
    """Each (sub)command remembers its parser, so a flag it does not know shows its own usage."""
    for child in dict.fromkeys(sub.choices.values()):
        child.set_defaults(_parser=child)
        for action in child._actions:
            if isinstance(action, argparse._SubParsersAction):
                own_usage(action)


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """parse_args, but an unknown argument is reported by the command it was given to."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        (getattr(args, "_parser", None) or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(build_parser(_command_word(argv)), argv)
    use_state_dir(args.state_dir)
    try:
        return _run(args)
    finally:
        flush_alerts()


def _store_redactor(settings: Settings) -> Callable[[str], str]:
    """The credential store's values, for the logs of a process that admits no run."""
    from hearth.run.services import load_redactor

    return load_redactor(settings)


def _run(args: argparse.Namespace) -> int:
    # here, not at the top: a usage or --help needs neither the settings nor the logging set up
    from hearth.logs import configure as configure_logging
    from hearth.settings import Settings

    try:
        settings = Settings.from_env()
        configure_logging(settings.log_level, lambda: _store_redactor(settings))
        return args.handler(args, settings)
    except HearthError as exc:
        print(visible_line(f"hearth {args.command}: {exc}"), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line, the traceback only on request
        if args.debug or os.environ.get("HEARTH_DEBUG"):
            import traceback

            traceback.print_exc()
        print(
            visible_line(f"hearth {args.command}: internal error: {type(exc).__name__}: {exc} (rerun with --debug)"),
            file=sys.stderr,
        )
        return INTERNAL_ERROR


def flush_alerts() -> None:
    """Let the alerts still going out finish (bounded) while the interpreter can still send them."""
    alerts = sys.modules.get("hearth.leash.alerts")
    if alerts is not None:
        alerts.flush()


def _command_word(argv: list[str]) -> str | None:
    """The subcommand argv names (the first word that is neither an option nor its value), if any."""
    words = iter(argv)
    for word in words:
        if word in GLOBAL_VALUED:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


if __name__ == "__main__":
    sys.exit(main())
