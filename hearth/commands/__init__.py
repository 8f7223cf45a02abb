"""The `hearth` subcommands, one module per area; add a module here to add commands."""

from hearth.commands import demo, queue, report, runs

COMMAND_MODULES = [demo, runs, queue, report]
