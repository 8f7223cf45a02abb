"""Errors a hearth user sees as one line (`--debug` shows the traceback).

HearthError             anything hearth reports and exits on; .exit_code says how
├── UsageError          bad arguments or input the user can fix (exit 2)
├── ConfigError         a state or config directory hearth cannot use (exit 2)
└── NotFound            a run, request or record that does not exist (exit 2)
"""

from __future__ import annotations


class HearthError(Exception):
    exit_code = 1


class UsageError(HearthError):
    exit_code = 2


class ConfigError(HearthError):
    exit_code = 2


class NotFound(HearthError):
    exit_code = 2
