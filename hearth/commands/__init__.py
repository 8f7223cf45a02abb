"""The `hearth` subcommands, one module per area; add a module here to add commands."""

from hearth.commands import approvals, creds, demo, doctor, evolve, knowledge, queue, report, runs

COMMAND_MODULES = [demo, runs, queue, report, approvals, knowledge, creds, evolve, doctor]
