"""Launch: the form, /api/enqueue and a run page's follow-up form, each writing a version 1 request as
`hearth enqueue` does (the form offers a marathon and a swarm too).

The request is built by the queue's own model and queued by hearth.queue.submit, so a refusal
is in the queue's words; the form shows it beside the field it names.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from agent.model.backends import probe
from agent.tools import config_repo
from agent.tools.builtin import COMMON, TOOLS
from agent.tools.registry import Tool
from agent.tools.system import NIXOS_ONLY, is_nixos
from hearth.audit.store import new_run_id
from hearth.credentials import CredentialStore
from hearth.demo import GOAL as DEMO_GOAL
from hearth.dispatch.launchers import heal
from hearth.queue.intake import RequestRefused, build_request, load_json
from hearth.queue.longspec import DEFAULT_LEGS, DEFAULT_PAGES, DEFAULT_WORKERS
from hearth.queue.request import MAX_GOAL_CHARS
from hearth.queue.submit import SubmitRefused
from hearth.run.profiles import profile_names
from hearth.users.access import Forbidden
from hearth.users.launch import submit_as
from hearth.web.context import web_of
from hearth.web.routes.runs import follow_up_refused
from hearth.web.security import Identity, WebError, check_csrf, operator

router = APIRouter()
STATUS_OF = {"invalid": 422, "duplicate": 409, "queue": 503}
FORM_FIELD = {"allowed_tools": "tools", "timeout_s": "timeout", "credentials": "credentials"}
RISK_ORDER = ("safe", "edit", "dangerous")


def field_of(reason: str) -> str:
    """The request field a refusal names (`max_iterations: ...`, `egress[0] "x" is not allowed`)."""
    text = reason.removeprefix("invalid request: ")
    for lead in ("missing required field ", "unknown field "):
        text = text.removeprefix(lead)
    found = re.match(r'"?([a-z_]+)', text)
    return found.group(1) if found else ""


# a field as the form labels it: a refusal is said beside its field in the form's words
FORM_LABEL = {
    "goal": "The goal",
    "agent_name": "The profile",
    "model": "The model",
    "mode": "The mode",
    "tools": "The tools",
    "egress": "An egress host",
    "max_iterations": "Max iterations",
    "timeout": "The timeout",
    "id": "The request id",
    "marathon": "Legs",
    "swarm": "Workers",
    "research": "Pages",
    "credentials": "Credentials",
}
_NAMED = re.compile(r'"?[a-z_]+(\[[^\]]*\])*"?:?\s*')


def form_errors(reason: str, goal: str) -> tuple[dict[str, str], str]:
    """The queue's refusal as the form shows it: each problem beside its field, in the form's words
    (`Max iterations must be at most 100, got 500`), once; what no field of the form holds, apart."""
    beside: dict[str, str] = {}
    apart = []
    for problem in reason.removeprefix("invalid request: ").split("; "):
        field = FORM_FIELD.get(field_of(problem), field_of(problem))
        if field not in FORM_LABEL or field in beside or problem.startswith(("unknown field", "missing required")):
            apart.append(problem)
            continue
        said = plain_refusal(problem, goal)
        beside[field] = said if said != problem else f"{FORM_LABEL[field]} {_NAMED.sub('', problem, count=1)}"
    return beside, "; ".join(apart)


def form_choices(request: Request) -> dict[str, Any]:
    """What the form offers: profiles, the models Ollama has, tools by risk, credential names."""
    settings = web_of(request).config.settings
    tools = sorted(offered(), key=lambda t: (RISK_ORDER.index(t.risk) if t.risk in RISK_ORDER else 9, t.name))
    try:
        credentials = [
            e["name"] for e in CredentialStore(settings.credentials_path, settings.credentials_dir).entries()
        ]
    except Exception:  # an unreadable store offers no names; the run checks them again anyway
        credentials = []
    return {
        "profiles": profile_names(settings.config_dir),
        "models": probe(settings.model_host, timeout_s=1.0),
        "model_host": settings.model_host,
        "default_model": settings.model,
        "tools": [{"name": t.name, "risk": t.risk, "description": t.description.split(". ")[0]} for t in tools],
        "credential_names": credentials,
        "default_tools": None if settings.tool_set == "all" else list(COMMON),
    }


def offered() -> list[Tool]:
    """The tools a run launched here may be given: not the config repository's (a self-evolution's,
    which this form does not launch), nor NixOS's generations on a host that is not NixOS."""
    kept = {t.name for t in config_repo.TOOLS} | (set() if is_nixos() else set(NIXOS_ONLY))
    return [t for t in TOOLS.values() if t.name not in kept]


def request_object(form: dict[str, Any], me: Identity) -> dict[str, Any]:
    """The form's values as a version 1 request object; empty fields are left to the defaults."""
    obj: dict[str, Any] = {"id": form.get("id") or new_run_id(), "goal": stored_goal(form.get("goal", ""))}
    for name in ("model", "agent_name", "mode"):
        if form.get(name):
            obj[name] = form[name]
    for name, key in (("max_iterations", "max_iterations"), ("timeout", "timeout_s")):
        if form.get(name):
            value = str(form[name]).strip()
            obj[key] = int(value) if value.isdigit() else value
    if form.get("tools"):
        obj["allowed_tools"] = form["tools"]
    if form.get("credentials"):
        obj["credentials"] = form["credentials"]
    hosts = [h for h in re.split(r"[\s,]+", form.get("egress") or "") if h]
    if hosts:
        obj["egress"] = hosts
    obj.update(long_work(form))
    return {**obj, "source": "command-center", "requested_by": me.user}


def stored_goal(text: str) -> str:
    """A goal as the queue keeps it: a browser sends a textarea's line breaks as CRLF, so a goal
    typed with 1,000 lines would count 1,000 characters more than the person typed."""
    return text.replace("\r\n", "\n")


def plain_refusal(reason: str, goal: str) -> str:
    """The queue's words about a goal, said plainly with its length and the limit."""
    if field_of(reason) == "goal" and "at most" in reason:
        return (
            f"the goal is {len(goal):,} characters; the limit is {MAX_GOAL_CHARS:,}. "
            "Shorten it, or put the long part in a file in the workspace and name the file in the goal."
        )
    return reason


def long_work(form: dict[str, Any]) -> dict[str, Any]:
    """The form's "long work" choice: a marathon (legs, its check), a swarm (workers) or research
    (pages), else nothing."""
    if form.get("long") == "marathon":
        plan: dict[str, Any] = {"max_legs": _number(form.get("legs"), DEFAULT_LEGS)}
        files = [f for f in re.split(r"[\s,]+", form.get("check_files") or "") if f]
        command = (form.get("check_command") or "").strip()
        if files or command:
            plan["check"] = {**({"files": files} if files else {}), **({"command": command} if command else {})}
        return {"marathon": plan}
    if form.get("long") == "swarm":
        return {"swarm": {"max_workers": _number(form.get("workers"), DEFAULT_WORKERS)}}
    if form.get("long") == "research":
        return {"research": {"max_pages": _number(form.get("pages"), DEFAULT_PAGES)}}
    return {}


def _number(text: Any, default: int) -> Any:
    value = str(text or "").strip()
    return default if not value else int(value) if value.isdigit() else value


def _queue(request: Request, obj: dict[str, Any], me: Identity) -> dict[str, str]:
    try:
        built = build_request(obj, file_id=None).request
    except RequestRefused as exc:
        raise SubmitRefused(f"invalid request: {exc}", "invalid") from None
    try:
        done = submit_as(built, web_of(request).config.settings, me.account, requested_by=me.user, heal=heal)
    except Forbidden as exc:
        raise WebError(403, str(exc)) from None
    return {"id": done.id, "path": str(done.path), "notes": done.notes}  # type: ignore[dict-item]


async def _form_values(request: Request) -> dict[str, Any]:
    form = await request.form()
    values: dict[str, Any] = {k: v for k, v in form.items() if isinstance(v, str) and k not in ("tools", "credentials")}
    values["tools"] = [v for v in form.getlist("tools") if isinstance(v, str)]
    values["credentials"] = [v for v in form.getlist("credentials") if isinstance(v, str)]
    return values


@router.get("/launch", response_class=HTMLResponse, include_in_schema=False)
async def launch_page(request: Request, demo: bool = False, me: Identity = Depends(operator)) -> HTMLResponse:
    form = {"goal": DEMO_GOAL, "mode": "auto"} if demo else {}
    choices = await run_in_threadpool(form_choices, request)
    return web_of(request).pages.render(request, "launch.html", form=form, error="", errors={}, **choices)


@router.post("/launch", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def launch_submit(request: Request, me: Identity = Depends(operator)) -> Response:
    form = await _form_values(request)
    try:
        done = await run_in_threadpool(_queue, request, request_object(form, me), me)
    except SubmitRefused as exc:
        choices = await run_in_threadpool(form_choices, request)
        errors, apart = form_errors(str(exc), stored_goal(form.get("goal", "")))
        status = STATUS_OF[exc.kind]
        return web_of(request).pages.render(
            request, "launch.html", status, form=form, error=apart, errors=errors, **choices
        )
    return RedirectResponse(f"/runs/{done['id']}?queued=1", status_code=303)


@router.post("/runs/{run_id}/continue", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def continue_submit(request: Request, run_id: str, me: Identity = Depends(operator)) -> Response:
    """The run page's follow-up form: a request with `continues`, queued; its page next."""
    earlier = await run_in_threadpool(web_of(request).reader.run, run_id)
    if earlier is None or earlier["status"] == "running":
        raise WebError(
            404 if earlier is None else 409,
            f"run {run_id[:80]!r} cannot be continued: it is {'unknown' if earlier is None else 'still running'}",
        )
    refused = await run_in_threadpool(follow_up_refused, web_of(request).config.settings.model_host, earlier)
    if refused:
        raise WebError(409, f"run {run_id[:80]!r} cannot be continued: {refused}")
    form = await _form_values(request)
    obj = {"id": new_run_id(), "goal": stored_goal(form.get("goal", "")), "continues": run_id}
    try:
        done = await run_in_threadpool(
            _queue, request, {**obj, "source": "command-center", "requested_by": me.user}, me
        )
    except SubmitRefused as exc:
        said = plain_refusal(str(exc).removeprefix("invalid request: "), str(obj["goal"]))
        raise WebError(STATUS_OF[exc.kind], f"the follow-up was not queued: {said}") from None
    return RedirectResponse(f"/runs/{done['id']}?queued=1", status_code=303)


@router.post("/api/enqueue", tags=["launch"], status_code=201, dependencies=[Depends(check_csrf)])
async def api_enqueue(request: Request, me: Identity = Depends(operator)) -> Response:
    """Queue a version 1 request (queue-spec/); `id` is optional, `source` and `requested_by` are yours.

    201 {id, path} as `hearth enqueue --json`; 400 malformed JSON; 422 a request the queue would
    refuse ({error, field}); 409 a duplicate id; 503 the queue cannot be written.
    """
    try:
        obj = load_json(await request.body())
    except RequestRefused as exc:
        raise WebError(400, f"malformed request body: {exc}") from None
    obj = {"id": new_run_id(), **obj, "source": "command-center", "requested_by": me.user}
    try:
        done = await run_in_threadpool(_queue, request, obj, me)
    except SubmitRefused as exc:
        body = {"error": str(exc), "field": field_of(str(exc)) if exc.kind == "invalid" else None}
        return JSONResponse(body, status_code=STATUS_OF[exc.kind])
    return JSONResponse(done, status_code=201)
