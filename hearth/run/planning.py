"""A request resolved into its plan, nothing recorded: `plan_of` applies the agent's profile
(hearth/run/profiles.py), routes the model (hearth/run/router.py) and takes hearth's defaults for
the rest, into a frozen `RunPlan` (hearth/run/goal.py); `validate` says why a plan cannot run;
`resolved` and `routed` are both for a caller that only asks (admission, hearth/run/admission.py,
records what it resolves).
"""

from __future__ import annotations

from pathlib import Path

from agent.context.prompt import PromptPart
from agent.safety.policy import MODES
from hearth.audit.store import new_run_id
from hearth.errors import UsageError
from hearth.limits import MAX_ITERATIONS, MAX_REPLY_TOKENS, MIN_REPLY_TOKENS, parse_duration
from hearth.roles.admit import as_role
from hearth.run.goal import GoalRequest, RunPlan, think_text
from hearth.run.profiles import Chosen, Profile, apply_network, apply_profile, load_profile
from hearth.run.prompting import config_parts
from hearth.run.router import Route, route_request
from hearth.settings import Settings, check_tool_names


def plan_of(
    request: GoalRequest, settings: Settings, pulled: list[str] | None, run_id: str
) -> tuple[RunPlan, Route, list[PromptPart], str]:
    """The run `request` asks for, resolved: its profile applied (hearth/run/profiles.py), its model
    routed (hearth/run/router.py), hearth's defaults (settings) for the rest; with the route, the
    operator's prompt parts and a warning when router.toml is broken (never a refusal). HearthError
    when the profile cannot be applied; what else cannot run is `validate`'s to say."""
    profile = load_profile(settings.config_dir, request.agent_name)
    request = as_role(request, profile, settings)  # a role's run works in its home; one switched off runs nothing
    parts = config_parts(settings.config_dir, profile)
    chosen = apply_profile(
        profile,
        model=request.model,
        mode=request.mode,
        max_iters=request.max_iters,
        allowed_tools=request.allowed_tools,
        defaults=settings,
        think=request.think,
        web_extract=request.web_extract,
        reply_tokens=request.reply_tokens,
    )
    chosen = apply_network(profile, chosen, network=request.network, egress=request.egress)
    route, warning = route_request(request, profile, chosen, settings, pulled)
    plan = _plan(request, chosen, route.model, profile, settings.agents_dir / run_id, run_id, settings.approval_wait_s)
    return plan, route, parts, warning


def _plan(
    request: GoalRequest, chosen: Chosen, model: str, profile: Profile, fresh_dir: Path, run_id: str, host_wait: float
) -> RunPlan:
    """The plan: what the profile settled (`chosen`), the routed model, and the request's own."""
    return RunPlan(
        run_id=run_id,
        goal=request.goal,
        agent_name=request.agent_name,
        model=model,
        mode=chosen.mode,
        max_iters=chosen.max_iters,
        every_tool=chosen.allowed_tools is None,
        allowed_tools=chosen.allowed_tools or (),
        network=chosen.network,
        egress=chosen.egress,
        credentials=tuple(request.credentials),
        timeout_s=request.timeout_s or 0.0,
        approval_wait_s=request.approval_wait_s
        or (parse_duration(profile.approval_wait) if profile.approval_wait else host_wait),
        max_tokens=request.max_tokens or profile.max_tokens or 0,
        num_ctx=request.num_ctx,
        workspace=request.workspace or fresh_dir,
        fresh=request.workspace is None,
        source=request.source,
        requested_by=request.requested_by,
        label=request.label or "",
        parent_run=request.parent_run or "",
        link=request.link or "",
        kind="heartbeat" if request.heartbeat else request.kind or "",
        continues=request.continues or "",
        preface=request.preface,
        prompt_values=tuple((request.prompt_values or {}).items()),
        prompt_sha256=request.prompt_sha256,
        restore_from=request.restore_from or (),
        config_repo=str(request.config_repo or ""),
        tool_set=chosen.tool_set,
        think=think_text(chosen.think),
        web_extract=chosen.web_extract,
        reply_tokens=chosen.reply_tokens,
        role=profile.name if profile.home else "",
        heartbeat=request.heartbeat,
    )


def resolved(request: GoalRequest, settings: Settings, run_id: str | None = None) -> RunPlan:
    """The request's plan, checked as a run's would be; the error if it cannot run (nothing recorded)."""
    return routed(request, settings, run_id, None)[0]


def routed(
    request: GoalRequest, settings: Settings, run_id: str | None, pulled: list[str] | None
) -> tuple[RunPlan, Route]:
    """`resolved`, its model resolved against `pulled` (what the model server has; None: not asked,
    the name as given) as a run's is: a model that is not pulled is the route's `problem`, not an error."""
    plan, route, _, _ = plan_of(request, settings, pulled, run_id or request.run_id or new_run_id())
    reason = validate(plan)
    if reason:
        raise UsageError(reason)
    return plan, route


def validate(plan: RunPlan) -> str | None:
    """The one-line reason a plan cannot run, or None."""
    if not plan.goal.strip():
        return "the goal is empty; say what the agent should do"
    if plan.mode not in MODES:
        return f"unknown mode {plan.mode!r}; use one of {', '.join(MODES)}"
    if not 1 <= plan.max_iters <= MAX_ITERATIONS:
        return f"max iterations must be between 1 and {MAX_ITERATIONS}, got {plan.max_iters}"
    if not plan.model.strip():
        return "no model given; pass --model NAME"
    if not MIN_REPLY_TOKENS <= plan.reply_tokens <= MAX_REPLY_TOKENS:
        return f"reply tokens must be between {MIN_REPLY_TOKENS} and {MAX_REPLY_TOKENS}, got {plan.reply_tokens}"
    if plan.allowed_tools:  # [] is a run with no tools (queue-spec's no-tools); a flag refuses it
        try:
            check_tool_names(list(plan.allowed_tools))
        except UsageError as exc:
            return str(exc)
    return None
