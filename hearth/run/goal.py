"""A run's input and its plan: GoalRequest (what a source asks, unresolved) and RunPlan (what admission
resolved); their ceilings are in hearth/limits.py.

    source -> GoalRequest -> admission (profile, router, settings) -> RunPlan -> runner, services, audit

`hearth-loop`, the queue (`hearth agent ID`, through `hearth.run.admission.goal_request`, the one
copy of a queue Request), the demo, the self-test and self-evolution each build a GoalRequest;
hearth/run/admission.py resolves it into a RunPlan, and nothing after admission reads the
GoalRequest again. Follow-ups, marathon legs, swarm syntheses and linked runs start from an
earlier run's plan (`RunPlan.as_request()` with `dataclasses.replace`), linked by `parent_run` and
`link` (hearth/run/long/followup.py, marathon.py, swarm.py, router.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class GoalRequest:
    """One goal to run, as asked: admission resolves it into a RunPlan and nothing after reads it.
    model, mode, max_iters and allowed_tools left as None come from the agent profile named by
    agent_name, else hearth's defaults (see hearth/run/profiles.py); a model of None, "" or `auto`
    is chosen by the router (hearth/run/router.py)."""

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
    approval_wait_s: float | None = None  # None: the profile's, else the host's
    num_ctx: int = 8192
    config_repo: Path | None = None  # the config checkout the self tools work on (self-evolution)
    credentials: list[str] = field(default_factory=list)  # names the run's tools may use (cred:NAME)
    egress: list[str] = field(default_factory=list)  # hosts network tools may reach; empty: any public
    parent_run: str | None = None  # the run this one is made from, and how (hearth.audit.store.RUN_LINKS)
    link: str | None = None
    kind: str | None = None  # marathon | swarm: the run that holds legs or children
    continues: str | None = None  # a follow-up of this run (hearth/run/long/followup.py fills the rest)
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
    think: bool | str | None = None  # Ollama's think option; None: the profile's, else not sent
    web_extract: bool | None = None  # web_fetch through the no-tools extractor; None: the profile's, else on
    reply_tokens: int | None = None  # the most tokens one model reply may have; None: the profile's, else the host's
    # from the queue (goal_request): its asker is only what the request says (hearth/run/long/followup.py)
    queued: bool = False
    escalate: bool = False
    heartbeat: str = ""  # upkeep | strategic-review: a role's turn that continues its heartbeat conversation


@dataclass(frozen=True)
class RunPlan:
    """One run as admission resolved it: every value decided, none of them None, all immutable.

    Where "none" is a value it is the empty value of the field's type, never None: `every_tool`
    True is every tool hearth has (`allowed_tools` is then empty), `timeout_s` 0 no time limit,
    `max_tokens` 0 no token cap of the run's own (the daily budgets still apply), "" no label, link,
    parent, kind, follow-up or config repository, an empty `prompt_values` placeholder values frozen
    at run start (none reused), an empty `restore_from` nothing to restore. `workspace` is the
    directory the run was given, else its fresh one (`<state>/agents/<run id>`, made once the run
    is admitted); `fresh` says which."""

    run_id: str
    goal: str
    agent_name: str
    model: str  # routed: the request's, the profile's, a router rule's or the host's (hearth/run/router.py)
    mode: str
    max_iters: int
    every_tool: bool
    allowed_tools: tuple[str, ...]
    network: bool
    egress: tuple[str, ...]
    credentials: tuple[str, ...]
    timeout_s: float
    approval_wait_s: float  # how long an approval waits for a person: the request's, the profile's, the host's
    max_tokens: int
    num_ctx: int
    workspace: Path
    fresh: bool
    source: str
    requested_by: str
    label: str
    parent_run: str
    link: str
    kind: str
    continues: str
    preface: str
    prompt_values: tuple[tuple[str, str], ...]  # (placeholder, value) pairs, as GoalRequest.prompt_values
    prompt_sha256: str
    restore_from: tuple[str, ...]  # (the run, hearth's git dir, the commit), as GoalRequest.restore_from
    config_repo: str
    # what allowed_tools none shows: every tool (`all`) or the common chores (agent/tools/builtin.py)
    tool_set: str = "all"
    think: str = ""  # Ollama's think as the run row keeps it: "" (not sent), true, false, low, medium, high
    web_extract: bool = False
    reply_tokens: int = 0  # the most tokens one model reply may have (0: the server's own limit)
    role: str = ""  # the role whose home the run works in, one run at a time (hearth/roles/)
    heartbeat: str = ""  # upkeep | strategic-review: it continues the role's heartbeat conversation

    @property
    def manifest(self) -> list[str] | None:
        """The tools as the engine takes them (agent/tools/gate.py): None for every tool."""
        return None if self.every_tool else list(self.allowed_tools)

    def as_request(self) -> GoalRequest:
        """The plan as a request naming each resolved value: what a linked run, a marathon's leg and
        a swarm's synthesis start from (with `dataclasses.replace`), admitted again as any request."""
        restore = self.restore_from
        return GoalRequest(
            goal=self.goal,
            model=self.model,
            agent_name=self.agent_name,
            mode=self.mode,
            max_iters=self.max_iters,
            workspace=None if self.fresh else self.workspace,
            run_id=self.run_id,
            source=self.source,
            requested_by=self.requested_by,
            allowed_tools=self.manifest,
            network=self.network,
            timeout_s=self.timeout_s or None,
            approval_wait_s=self.approval_wait_s,
            num_ctx=self.num_ctx,
            config_repo=Path(self.config_repo) if self.config_repo else None,
            credentials=list(self.credentials),
            egress=list(self.egress),
            parent_run=self.parent_run or None,
            link=self.link or None,
            kind=self.kind or None,
            continues=self.continues or None,
            preface=self.preface,
            prompt_values=dict(self.prompt_values) or None,
            prompt_sha256=self.prompt_sha256,
            restore_from=(restore[0], restore[1], restore[2]) if restore else None,
            label=self.label or None,
            max_tokens=self.max_tokens or None,
            think=think_value(self.think),
            web_extract=self.web_extract,
            reply_tokens=self.reply_tokens or None,
            heartbeat=self.heartbeat,
        )


def think_text(value: bool | str | None) -> str:
    """Ollama's think option as a run row keeps it ("" when not sent)."""
    if value is None:
        return ""
    return ("true" if value else "false") if isinstance(value, bool) else value


def think_value(text: str) -> bool | str | None:
    """The option from its row text: what the chat body carries (None: not sent)."""
    return {"": None, "true": True, "false": False}.get(text, text)
