"""Errors a hearth user sees as one line (`--debug` shows the traceback), drawn once. Each class
lives beside the code that raises it; the CLI (`hearth`, `hearth-loop`) prints str(error) and
exits with .exit_code, as `--help` documents.

HearthError             anything hearth reports and exits on; .exit_code says how (exit 1)
├── UsageError          bad arguments or input the user can fix (exit 2)
│   ├── SubmitRefused   the queue's front door did not queue a request: invalid, duplicate, queue unwritable (exit 2)
│   ├── BudgetRefused   a budget limit the operator pages would not write, naming its field (exit 2)
│   └── MissionRefused  a mission the operator pages would not write, naming its field (exit 2)
├── ConfigError         a state or config directory hearth cannot use (exit 2)
│   └── SkillInvalid    a SKILL.md that cannot be offered, naming its file and key (exit 2)
├── NotFound            a run, request or record that does not exist (exit 2)
├── ApprovalClosed      an approval decided or expired already; nothing changed (exit 1)
├── ActionRefused       an alert's Approve or Deny link that is forged, used, expired or for another approval
├── RuleRefused         a standing rule that may not be made (the hard floor, not one simple command) or was removed already (exit 1)
├── NotRunning          a stop for a run that has ended already; nothing changed (exit 1)
├── SteerRefused        a steer for a run that has ended, or with 20 steers unread; nothing left for it (exit 1)
├── Forbidden           a user's act their role and memberships do not allow, through any door; nothing changed (exit 1)
├── StopFailed          a run that could not be stopped: systemctl refused, no right to signal it (exit 1)
├── RequestRefused      a queue file or request that must not run; the reason is recorded beside it
├── LaunchError         a run that could not be started: no systemctl, a unit refused, no local fork
├── NoHistory           a run left no checkpoint to restore its workspace from
├── CalendarError       a mission's schedule this parser does not read (also a ValueError)
├── KeyRefused          a /v1 key that is missing, wrong, over its rate or budget, or may not use the profile
│   └── Refused         a /v1 request refused in OpenAI's error shape, with its status and code
├── ColumnRefused       a row or change naming a table or column the audit has not, or one the audit sets itself (a row's key, a step's run); nothing written
├── WorkerRefused       a fleet worker's call the hub refuses (a bad token, a run not its own, a decision it may not send); its HTTP status
├── ChannelDown       a chat platform that cannot be reached or failed on its side; the channel backs off
├── Undeliverable     a message a chat platform refused; recorded failed and tried again
├── InstallError        hearth install cannot go on: a bad install.toml, a path taken by another kind of file (exit 1)
└── WebError            a command-center request refused; it carries its HTTP status
    └── SignInNeeded    a page that needs a viewer or operator token, asked without one (401)

RequestRefused, LaunchError, NoHistory, CalendarError and WebError are caught and turned into a
recorded rejection, a UsageError, a mission's problem or an HTTP answer before they could reach
the CLI; one that did would exit 1.

Not errors, and so outside the tree: each is caught in one place, and an `except HearthError`
must never swallow one.

StopRun                 the engine's ending of a run (agent/errors.py draws its family)
└── Tripped             a decoy's canary seen or a decoy opened; the loop ends the run (tripped)
BaseException
├── Interrupted         SIGTERM or SIGINT arrived; the run is recorded interrupted (exit 130)
└── Suspended           a queued run's approval waited long enough: recorded waiting, its process ends (exit 0)
    └── Delegated       a queued run handed work to a child run: recorded waiting until the child ends (exit 0)

Private, and so outside the tree too: `_Bad` (the mission loader's problem with one file, made
into that file's line by its caller).

This module imports nothing of hearth: any module may import it without a circle.
"""

from __future__ import annotations

__all__ = ["ConfigError", "HearthError", "NotFound", "UsageError"]


class HearthError(Exception):
    exit_code = 1


class UsageError(HearthError):
    exit_code = 2


class ConfigError(HearthError):
    exit_code = 2


class NotFound(HearthError):
    exit_code = 2
