"""The `hearth` subcommands, one module per area; add a module here to add commands."""

from hearth.commands import approvals, creds, demo, doctor, evolve, knowledge, runs

COMMAND_MODULES = [demo, runs, approvals, knowledge, creds, evolve, doctor]
