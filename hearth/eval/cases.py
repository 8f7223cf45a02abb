"""A case made from a recorded run (`hearth eval add RUN --suite S`): its goal and profile, its
`before` checkpoint as the start, and checks drawn from what it did: the files it wrote must
exist, the tools it used must be called, at most twice its iterations, no denial, no tripwire.
The operator edits the suite's file to tighten them (a command, a match, a judge's question).
"""

from __future__ import annotations

import json
import re

from hearth.audit.steps import tool_steps
from hearth.audit.store import AuditStore
from hearth.errors import NotFound, UsageError
from hearth.eval.suite import NAME, Case, Checks

WRITERS = ("write_file", "edit_file")
UNFINISHED = ("running", "waiting")


def case_from_run(audit: AuditStore, run_id: str, name: str = "") -> Case:
    """The case run `run_id` makes; NotFound for no such run, UsageError for one still going."""
    run = audit.run(run_id)
    if run is None:
        raise NotFound(f"no run {run_id!r} in the audit; `hearth runs` lists them")
    if run["status"] in UNFINISHED:
        raise UsageError(f"run {run_id} is still {run['status']}; make a case of it once it has ended")
    steps = [s for s in tool_steps(audit, run_id) if s["ok"] == 1]
    tools = list(dict.fromkeys(s["tool"] for s in steps if s["tool"]))
    files = list(dict.fromkeys(p for s in steps if s["tool"] in WRITERS and (p := _path(s["arguments"]))))
    iterations = int(run.get("iterations") or 0)
    checks = Checks(files=tuple(files), tools_called=tuple(tools), max_iterations=max(2, 2 * iterations))
    mode = run.get("mode") if run.get("mode") in ("plan", "auto", "bypass") else None
    return Case(_name(name, run), run["goal"], run.get("agent_name") or "default", mode, "", run_id, checks)


def _path(arguments: str | None) -> str:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return ""
    path = value.get("path") if isinstance(value, dict) else None
    return path if isinstance(path, str) and path and not path.startswith("/") else ""


def _name(given: str, run: dict[str, object]) -> str:
    if given:
        if not NAME.fullmatch(given):
            raise UsageError(f"{given!r} cannot name a case: use 1-40 characters from A-Z a-z 0-9 . _ -")
        return given
    return slug_of(run, 40)


def slug_of(run: dict[str, object], width: int) -> str:
    """A name for what a run did: the first words of its label or goal, else its id's tail
    (a case's default name, a learned skill's)."""
    words = re.findall(r"[a-z0-9]+", str(run.get("label") or run["goal"]).lower())[:4]
    return "-".join(words)[:width].strip("-") or f"run-{str(run['id'])[-6:]}"
