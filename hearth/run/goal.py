"""GoalRequest: one goal to run, as every source hands it to the runner (its ceilings: hearth/limits.py).

`hearth-loop`, the queue (`hearth agent ID`), the demo, the self-test and self-evolution all
build one of these; hearth/run/runner.py runs it and hearth/run/services.py builds its services.
Follow-ups, marathon legs, swarm children and syntheses are GoalRequests too, linked by
`parent_run` and `link` (hearth/run/followup.py, marathon.py, swarm.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class GoalRequest:
    """One goal to run. model, mode, max_iters and allowed_tools left as None come from the agent
    profile named by agent_name, else hearth's defaults (see hearth/run/profiles.py); a model of
    None, "" or `auto` is chosen by the router (hearth/run/router.py)."""

    goal: str
    model: str | None = None
    agent_name: str = "default"
    mode: str | None = None
    max_iters: int | None = None
    workspace: Path | None = None
    run_id: str | None = None
    source: str = "cli"
    requested_by: str = ""
    allowed_tools: list[str] | None = None
    network: bool | None = None  # commands get network, only through the run's proxy; None: the profile's
    timeout_s: float | None = None
    num_ctx: int = 8192
    config_repo: Path | None = None  # the config checkout the self tools work on (self-evolution)
    credentials: list[str] = field(default_factory=list)  # names the run's tools may use (cred:NAME)
    egress: list[str] = field(default_factory=list)  # hosts network tools may reach; empty: any public
    parent_run: str | None = None  # the run this one is made from, and how (hearth.audit.store.RUN_LINKS)
    link: str | None = None
    kind: str | None = None  # marathon | swarm: the run that holds legs or children
    continues: str | None = None  # a follow-up of this run (hearth/run/followup.py fills the rest)
    preface: str = ""  # put before the goal in the first message (a follow-up's or a leg's context)
    prompt_values: dict[str, str] | None = None  # placeholder values to reuse (same prompt bytes)
    prompt_sha256: str = ""  # the system prompt this run's should equal, when nothing changed
    # a follow-up in a fresh directory: (the run it continues, hearth's git dir, the commit) its
    # files are restored from, both "" when that run's workspace held nothing (hearth/run/history.py)
    restore_from: tuple[str, str, str] | None = None
    label: str | None = None  # the operator's name for the run (the command center's `name`)
    max_tokens: int | None = None  # the run's own token cap; None: the profile's, else none
    # set on a linked run (fallback, escalation): the model is used as given, with this reason,
    # and these are the models still to try after it
    model_reason: str | None = None
    model_requested: str | None = None
    fallbacks: tuple[str, ...] = ()
    escalate: bool = False
