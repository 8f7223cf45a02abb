"""Budgets: today's spend against the daily token budgets (as `hearth budget`), and changing them.

A change is written to $HEARTH_CONFIG_DIR/budget.toml only after `load_budget` (the same check
every reader of the file makes) accepted it from a scratch copy; a refusal names the field and
keeps what was typed. HEARTH_DAILY_TOKENS, when set, wins over the file's `daily` (the page says so).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from hearth.atomic import write_atomic
from hearth.audit.store import AuditStore
from hearth.errors import ConfigError, UsageError
from hearth.leash.budget import BUDGET_FILE, load_budget, local_now, overview
from hearth.run.profiles import profile_names
from hearth.settings import Settings
from hearth.web.context import web_of
from hearth.web.routes.operate import recent_actions, record_action, toml_text
from hearth.web.security import Identity, WebError, check_csrf, owner, viewer

router = APIRouter()


class BudgetRefused(UsageError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field, self.reason = field, reason


def budget_data(settings: Settings) -> dict[str, Any]:
    """As `hearth budget --json`, plus the file, the profiles, and a broken file's one line."""
    problem = ""
    try:
        budget = load_budget(settings.config_dir, settings.daily_tokens)
    except ConfigError as exc:
        problem, budget = str(exc), None
    view: dict[str, Any] = {}
    if budget is not None:
        where = settings.audit_path if settings.audit_path.exists() else ":memory:"
        with AuditStore(where) as audit:
            view = overview(budget, audit, local_now())
    return {
        **view,
        "problem": problem,
        "file": str(settings.config_dir / BUDGET_FILE),
        "env_daily": settings.daily_tokens,
        "profiles": profile_names(settings.config_dir),
    }


def parse_limits(form: dict[str, Any], profiles: list[str]) -> dict[str, Any]:
    """The form's limits as budget.toml's tables: a blank field is no limit; digits are a number;
    anything else goes to load_budget as it was typed, for its own refusal."""
    data: dict[str, Any] = {}
    daily = _number(form.get("daily"))
    if daily is not None:
        data["daily"] = daily
    agents = {name: _number(form.get(f"agent.{name}")) for name in profiles}
    kept = {name: value for name, value in agents.items() if value is not None}
    if kept:
        data["per_agent"] = kept
    return data


def _number(text: Any) -> Any:
    value = str(text if text is not None else "").strip().replace(",", "").replace("_", "")
    return None if not value else int(value) if value.isdigit() else value


def save_limits(settings: Settings, data: dict[str, Any]) -> None:
    """Check the limits as every reader of budget.toml would, then replace the file."""
    path = settings.config_dir / BUDGET_FILE
    with tempfile.TemporaryDirectory() as scratch:
        try:
            text = toml_text(data)
        except ValueError as exc:
            raise BudgetRefused("daily", str(exc)) from None
        (Path(scratch) / BUDGET_FILE).write_text(text)
        try:
            load_budget(Path(scratch))
        except ConfigError as exc:
            reason = str(exc).replace(str(Path(scratch) / BUDGET_FILE), str(path))
            raise BudgetRefused(_field_of(reason), reason) from None
    try:
        write_atomic(path, text.encode())
    except OSError as exc:
        raise BudgetRefused(
            "daily", f"cannot write {path}: {exc.strerror or exc} (on NixOS set services.hearth.budget instead)"
        ) from None


def _field_of(reason: str) -> str:
    """`...budget.toml: per_agent.notes must be ...` -> `agent.notes` (the form's name for it)."""
    where = reason.split(": ", 1)[1] if ": " in reason else reason
    name = where.split(" ", 1)[0]
    return "agent." + name.removeprefix("per_agent.") if name.startswith("per_agent.") else "daily"


def change(settings: Settings, me: Identity, form: dict[str, Any], names: list[str] | None = None) -> dict[str, Any]:
    """Save the limits and record who did (or the refusal); `names` the agents (default: the profiles)."""
    data = parse_limits(form, profile_names(settings.config_dir) if names is None else names)
    try:
        save_limits(settings, data)
    except BudgetRefused as exc:
        record_action(settings, me, "budgets", "change", exc.field, ok=False, detail=exc.reason)
        raise
    record_action(settings, me, "budgets", "change", "budget.toml", ok=True, detail=toml_text(data))
    return data


@router.get("/operate/budgets", response_class=HTMLResponse, include_in_schema=False)
async def budgets_page(request: Request, saved: bool = False, me: Identity = Depends(viewer)) -> HTMLResponse:
    return await _page(request, form=None, error="", field="", saved=saved)


async def _page(request: Request, *, form: dict[str, Any] | None, error: str, field: str, **more: Any) -> HTMLResponse:
    settings = web_of(request).config.settings
    data = await run_in_threadpool(budget_data, settings)
    if form is None:
        form = {"daily": _shown(data.get("box", {}).get("limit") if not data["env_daily"] else None)}
        form |= {f"agent.{a['agent']}": _shown(a["limit"]) for a in data.get("agents", [])}
    changes = recent_actions(request, "budgets")
    page = web_of(request).pages.render(
        request,
        "budgets.html",
        422 if error else 200,
        budget=data,
        form=form,
        error=error,
        field=field,
        changes=changes,
        **more,
    )
    return page


def _shown(limit: int | None) -> str:
    return "" if limit is None else str(limit)


@router.post("/operate/budgets", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def budgets_submit(request: Request, me: Identity = Depends(owner)) -> Response:
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    try:
        await run_in_threadpool(change, web_of(request).config.settings, me, form)
    except BudgetRefused as exc:
        return await _page(request, form=form, error=exc.reason, field=exc.field)
    return RedirectResponse("/operate/budgets?saved=1", status_code=303)


@router.get("/api/budgets", tags=["budgets"])
async def api_budgets(request: Request, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """As `hearth budget --json`: since, resets_at, the box's and each agent's limit, spent and
    remaining; plus the file, HEARTH_DAILY_TOKENS (env_daily), the profiles, and `problem` when
    budget.toml does not load."""
    return await run_in_threadpool(budget_data, web_of(request).config.settings)


@router.put("/api/budgets", tags=["budgets"], dependencies=[Depends(check_csrf)])
async def api_change_budgets(request: Request, me: Identity = Depends(owner)) -> Response:
    """Replace budget.toml's limits: {"daily": N or null, "per_agent": {"notes": N}}. 422 {error,
    field} when load_budget would refuse them; the file is then unchanged."""
    try:
        body = await request.json()
    except ValueError:
        raise WebError(400, "malformed request body: not valid JSON") from None
    if not isinstance(body, dict):
        raise WebError(400, 'the body must be an object: {"daily": N, "per_agent": {"NAME": N}}')
    agents = body.get("per_agent") or {}
    form = {
        "daily": body.get("daily"),
        **{f"agent.{k}": v for k, v in (agents if isinstance(agents, dict) else {}).items()},
    }
    settings = web_of(request).config.settings
    names = [k.removeprefix("agent.") for k in form if k.startswith("agent.")]  # a profile may come later
    try:
        data = await run_in_threadpool(change, settings, me, form, names)
    except BudgetRefused as exc:
        field = exc.field.replace("agent.", "per_agent.", 1)
        return JSONResponse({"error": exc.reason, "field": field}, status_code=422)
    return JSONResponse({"saved": data, **await run_in_threadpool(budget_data, settings)})
