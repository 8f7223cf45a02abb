"""`hearth`: the operator's commands. Each command module parses, makes one call, renders.

The command modules live in `hearth/commands/`; only the one of the command being run is
imported (see hearth/commands/__init__.py), so a quick command starts quickly.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from hearth.commands import modules_for
from hearth.errors import HearthError
from hearth.logs import configure as configure_logging
from hearth.render import visible_line
from hearth.settings import Settings

INTERNAL_ERROR = 70


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with `command`'s module registered, or every module's when it is None or unknown."""
    parser = argparse.ArgumentParser(
        prog="hearth",
        description="Operate hearth: run the demo, read the audit, manage the queue and the stores.",
        epilog="exit codes: 0 ok, 1 a check or run failed, 2 bad usage or missing record, 70 internal error",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in modules_for(command):
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(_command_word(argv)).parse_args(argv)
    try:
        return _run(args)
    finally:
        flush_alerts()


def _run(args: argparse.Namespace) -> int:
    try:
        settings = Settings.from_env()
        configure_logging(settings.log_level)
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
            traceback.print_exc()
        print(
            visible_line(f"hearth {args.command}: internal error: {type(exc).__name__}: {exc} (rerun with --debug)"),
            file=sys.stderr,
        )
        return INTERNAL_ERROR


def flush_alerts() -> None:
    """Let the alerts still going out finish (bounded) while the interpreter can still send them."""
    alerts = sys.modules.get("hearth.alerts")
    if alerts is not None:
        alerts.flush()


def _command_word(argv: list[str]) -> str | None:
    """The subcommand argv names (the first word that is not an option), if any."""
    return next((word for word in argv if not word.startswith("-")), None)


if __name__ == "__main__":
    sys.exit(main())
