"""The router: router.toml's rules, and "try a goal": which model a goal would get, and why.

The answer is the router's own (hearth.run.router.route_request, as admission calls it for a run,
with the agent profile applied and the models Ollama has pulled), so it is what a run would get
now; trying changes nothing, so a viewer may try too. Each rule says whether it matched the goal
(Rule.matches), so "why not my rule" has its answer beside "why this model".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse

from agent.model.backends import probe
from hearth.errors import HearthError
from hearth.run.goal import GoalRequest
from hearth.run.profiles import apply_profile, load_profile, profile_names
from hearth.run.router import ROUTER_FILE, Facts, Route, Router, Rule, load_router, route_request
from hearth.settings import Settings, model_origin
from hearth.web.context import web_of
from hearth.web.security import Identity, viewer

router = APIRouter()
GOAL_CAP = 100_000
SOURCES = ("command-center", "cli", "timer")
WHY = {
    "request": "the request names this model",
    "profile": "the agent profile names this model",
    "default": "no rule matched: the router's default (else the host's model)",
    "tag": "the name resolved to this pulled tag",
    "fallback": "the first choice is not pulled: the next fallback that is",
    "escalation": "the run before it ended short: the next model up",
}


@dataclass(frozen=True)
class Trial:
    goal: str = ""
    agent: str = "default"
    mode: str = ""
    model: str = ""
    source: str = "command-center"


def rules_data(settings: Settings) -> dict[str, Any]:
    """router.toml as the router reads it, or the one line saying why it does not load."""
    try:
        found, problem = load_router(settings.config_dir), ""
    except HearthError as exc:
        found, problem = Router(), str(exc)
    return {
        "file": str(settings.config_dir / ROUTER_FILE),
        "problem": problem,
        "default": found.default,
        "host_default": settings.model,
        "host_default_from": model_origin(settings.model),
        "fallbacks": list(found.fallbacks),
        "escalate": found.escalate,
        "rules": [_rule(rule) for rule in found.rules],
    }


def _rule(rule: Rule) -> dict[str, Any]:
    return {
        "name": rule.name,
        "model": rule.model,
        "agents": list(rule.agents),
        "modes": list(rule.modes),
        "tools": list(rule.tools),
        "sources": list(rule.sources),
        "goal": rule.goal.pattern if rule.goal else None,
        "goal_min_chars": rule.goal_min_chars,
        "goal_max_chars": rule.goal_max_chars,
        "fallbacks": list(rule.fallbacks),
        "escalate": rule.escalate,
    }


def try_goal(settings: Settings, trial: Trial) -> dict[str, Any]:
    """The model `trial` would get and why; {error, field} when the profile refuses it."""
    try:
        profile = load_profile(settings.config_dir, trial.agent)
        chosen = apply_profile(
            profile,
            model=trial.model or None,
            mode=trial.mode or None,
            max_iters=None,
            allowed_tools=None,
            defaults=settings,
        )
    except HearthError as exc:  # an unknown profile, or a mode above its ceiling
        return {"error": str(exc), "field": "mode" if str(exc).startswith("mode ") else "agent"}
    request = GoalRequest(
        goal=trial.goal,
        model=trial.model or None,
        agent_name=trial.agent,
        mode=trial.mode or None,
        source=trial.source,
    )
    pulled = probe(settings.model_host, timeout_s=1.0)
    chosen_route, warning = route_request(request, profile, chosen, settings, pulled)
    facts = Facts(trial.agent, chosen.mode, chosen.allowed_tools, trial.source, trial.goal)
    try:
        rules = load_router(settings.config_dir).rules
    except HearthError:
        rules = ()  # route_request fell back to no rules, and its warning says why
    return {
        "model": chosen_route.model,
        "reason": chosen_route.reason,
        "why": explain(chosen_route),
        "fallbacks": list(chosen_route.fallbacks),
        "escalate": chosen_route.escalate,
        "problem": chosen_route.problem,
        "warning": warning,
        "mode": chosen.mode,
        "pulled": pulled,
        "rules": [{"name": r.name, "model": r.model, "matched": r.matches(facts)} for r in rules],
    }


def explain(chosen: Route) -> str:
    """The route's reason in words: a rule's name is the rule that matched first."""
    return WHY.get(chosen.reason, f"rule {chosen.reason!r} matched first")


def _trial(goal: str, agent: str, mode: str, model: str, source: str) -> Trial:
    return Trial(
        goal[:GOAL_CAP],
        agent[:64] or "default",
        mode[:16],
        model[:200],
        source if source in SOURCES else "command-center",
    )


@router.get("/operate/router", response_class=HTMLResponse, include_in_schema=False)
async def router_page(
    request: Request,
    goal: str = "",
    agent: str = "default",
    mode: str = "",
    model: str = "",
    source: str = "command-center",
    me: Identity = Depends(viewer),
) -> HTMLResponse:
    settings = web_of(request).config.settings
    trial = _trial(goal, agent, mode, model, source)
    answer = await run_in_threadpool(try_goal, settings, trial) if goal.strip() else None
    data = await run_in_threadpool(rules_data, settings)
    profiles = await run_in_threadpool(profile_names, settings.config_dir)
    return web_of(request).pages.render(
        request, "router.html", **data, trial=trial, answer=answer, profiles=profiles, sources=SOURCES
    )


@router.get("/api/router", tags=["router"])
async def api_router(request: Request, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """router.toml's rules, default and fallbacks as the router reads them; `problem` when it does not load."""
    return await run_in_threadpool(rules_data, web_of(request).config.settings)


@router.get("/api/router/try", tags=["router"])
async def api_try(
    request: Request,
    goal: str,
    agent: str = "default",
    mode: str = "",
    model: str = "",
    source: str = "command-center",
    me: Identity = Depends(viewer),
) -> dict[str, Any]:
    """The model a goal would get now and why (`reason` as runs record it, `why` in words), its
    fallbacks, and whether each rule matched; changes nothing."""
    return await run_in_threadpool(try_goal, web_of(request).config.settings, _trial(goal, agent, mode, model, source))
