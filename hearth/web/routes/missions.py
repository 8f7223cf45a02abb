"""Missions: the scheduled goals as `hearth missions` lists them; run one now, pause, resume, add, edit.

Run now, pause and resume are hearth.leash.missions' own `fire`, `pause_mission` and
`resume_mission`, as the CLI calls them. A mission added or edited here is written as the TOML
file an operator would write, after `missions._load` (the check every mission file gets when it is
read) accepted it from a scratch copy; a refusal is shown beside the field it names, with what was
typed kept. On NixOS the files are the module's (services.hearth.schedules) and cannot be written.
"""

from __future__ import annotations

import re
import tempfile
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from hearth.atomic import write_atomic
from hearth.audit import channels as channel_rows
from hearth.audit import runs
from hearth.errors import NotFound, UsageError
from hearth.leash import missions as leash
from hearth.queue.submit import SubmitRefused
from hearth.run.profiles import profile_names
from hearth.settings import Settings
from hearth.web.context import web_of
from hearth.web.reader import Reader
from hearth.web.routes.launch import STATUS_OF, field_of
from hearth.web.routes.operate import recent_actions, record_action, toml_text
from hearth.web.security import Identity, WebError, check_csrf, owner, viewer

router = APIRouter()
LISTS = ("allowed_tools", "egress", "credentials")
NUMBERS = ("max_iterations", "max_tokens", "timeout_s")
LAST_RUNS = 5
FORM_KEYS = ("name", *leash.KEYS)
NAME_RULE = "1-40 characters from A-Z a-z 0-9 . _ - (starting with a letter or digit)"


class MissionRefused(UsageError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field, self.reason = field, reason


def missions_data(settings: Settings, reader: Reader) -> dict[str, Any]:
    """As `hearth missions --json`, plus each mission's last runs and where the files are."""
    loaded, problems = leash.load_missions(settings)
    deliver = {m.name: m.deliver for m in loaded}
    rows = leash.listing(settings, datetime.now())
    for row in rows:
        row["runs"] = runs.requested_by(reader, f"mission:{row['name']}", LAST_RUNS)
        row["deliver"] = deliver.get(row["name"], "")
        sent = channel_rows.deliveries(reader, mission=row["name"], limit=LAST_RUNS * 4)
        row["deliveries"] = {d["subject"]: d for d in reversed(sent)}  # each run's latest
    return {
        "missions": rows,
        "problems": [p.line() for p in problems],
        "directory": str(leash.missions_dir(settings)),
    }


def mission_table(form: dict[str, Any]) -> dict[str, Any]:
    """The form's fields as a mission file's keys: blank is absent, lists split on commas and
    spaces, digits are numbers; anything else is kept as typed, for the file's own check to refuse."""
    data: dict[str, Any] = {}
    for key in leash.KEYS:
        value = form.get(key)
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        text = str(value if value is not None else "").strip()
        if not text:
            continue
        if key in LISTS:
            data[key] = [part for part in re.split(r"[\s,]+", text) if part]
        elif key in NUMBERS:
            data[key] = _number(text)
        else:
            data[key] = text
    return data


def _number(text: str) -> int | float | str:
    if text.isdigit():
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def check(settings: Settings, name: str, data: dict[str, Any]) -> str:
    """The file's text, once the mission loads as hearth loads NAME.toml; MissionRefused names the field."""
    try:
        text = toml_text(data)
    except ValueError as exc:
        raise MissionRefused("goal", str(exc)) from None
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"{name}.toml"  # the name was checked against leash.NAME already
        path.write_text(text, encoding="utf-8")
        try:
            leash._load(path, settings)  # the one check of a mission file
        except leash._Bad as exc:
            reason = str(exc)
            field = "name" if reason.startswith("a mission's file name") else field_of(reason)
            raise MissionRefused(field if field in FORM_KEYS else "", reason) from None
    return text


def save(settings: Settings, me: Identity, form: dict[str, Any], *, editing: str | None) -> str:
    """Add (or, `editing`, replace) a mission file; the name it was saved under."""
    name = editing or str(form.get("name") or "").strip()
    path = leash.missions_dir(settings) / f"{name}.toml"
    try:
        if not name:
            raise MissionRefused("name", f"a mission needs a name: {NAME_RULE}")
        if not leash.NAME.fullmatch(name):  # before the name is any part of a path
            raise MissionRefused("name", f"name {name[:80]!r} is not allowed: {NAME_RULE}")
        if editing is None and path.exists():
            raise MissionRefused("name", f"mission {name} exists already ({path}); edit it instead")
        text = check(settings, name, mission_table(form))
        try:
            write_atomic(path, text.encode())
        except OSError as exc:
            raise MissionRefused(
                "", f"cannot write {path}: {exc.strerror or exc} (on NixOS: services.hearth.schedules)"
            ) from None
    except MissionRefused as exc:
        record_action(settings, me, "missions", "edit" if editing else "add", name, ok=False, detail=exc.reason)
        raise
    record_action(settings, me, "missions", "edit" if editing else "add", name, ok=True, detail=text)
    return name


def form_of(settings: Settings, name: str) -> dict[str, Any]:
    """A mission file's keys as the form shows them (lists joined), to edit it."""
    path = leash.missions_dir(settings) / f"{name}.toml"
    if not leash.NAME.fullmatch(name) or not path.is_file():
        raise WebError(404, f"no mission {name[:80]!r} in {leash.missions_dir(settings)}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return {"name": name, "_problem": f"{path} does not read as TOML ({exc}); fix it in a shell"}
    shown = {k: ", ".join(map(str, v)) if isinstance(v, list) else str(v) for k, v in data.items()}
    return {"name": name, **shown}


def act(settings: Settings, me: Identity, name: str, action: str) -> dict[str, Any]:
    """Run now, pause or resume, through the same functions as `hearth missions run|pause|resume`."""
    try:
        mission = leash.find_mission(settings, name)
        if action == "run":
            done = leash.fire(settings, mission, source="command-center", by=me.decider, now=datetime.now(), force=True)
            answer: dict[str, Any] = {"mission": name, "enqueued": done.id if done else None}
            answer["notes"] = list(done.notes) if done else []
        elif action == "pause":
            answer = {"mission": name, "paused": leash.pause_mission(settings, mission, by=me.decider)}
        else:
            answer = {"mission": name, "resumed": bool(leash.resume_mission(settings, mission))}
    except NotFound as exc:
        raise WebError(404, str(exc)) from None
    except SubmitRefused as exc:
        record_action(settings, me, "missions", action, name, ok=False, detail=str(exc))
        raise WebError(STATUS_OF.get(exc.kind, 409), f"mission {name} was not enqueued: {exc}") from None
    record_action(settings, me, "missions", action, name, ok=True, detail=str(answer.get("enqueued") or ""))
    return answer


# -- pages ------------------------------------------------------------------------------------------
def _render(request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
    return web_of(request).pages.render(request, template, code, **context)


@router.get("/operate/missions", response_class=HTMLResponse, include_in_schema=False)
async def missions_page(request: Request, done: str = "", me: Identity = Depends(viewer)) -> HTMLResponse:
    data = await run_in_threadpool(missions_data, web_of(request).config.settings, web_of(request).reader)
    return _render(request, "missions.html", **data, done=done[:200], changes=recent_actions(request, "missions"))


async def _form_page(request: Request, form: dict[str, Any], editing: str | None, **more: Any) -> HTMLResponse:
    settings = web_of(request).config.settings
    profiles = await run_in_threadpool(profile_names, settings.config_dir)
    code = 422 if more.get("error") else 200
    context = {"error": "", "field": "", **more}
    return _render(request, "mission_form.html", code, form=form, editing=editing, profiles=profiles, **context)


@router.get("/operate/missions/new", response_class=HTMLResponse, include_in_schema=False)
async def new_page(request: Request, me: Identity = Depends(owner)) -> HTMLResponse:
    return await _form_page(request, {"schedule": "daily", "agent": "default"}, None)


@router.get("/operate/missions/{name}/edit", response_class=HTMLResponse, include_in_schema=False)
async def edit_page(request: Request, name: str, me: Identity = Depends(owner)) -> HTMLResponse:
    form = await run_in_threadpool(form_of, web_of(request).config.settings, name)
    return await _form_page(request, form, name, error=form.pop("_problem", ""))


async def _submit(request: Request, me: Identity, editing: str | None) -> Response:
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str) and k in FORM_KEYS}
    try:
        name = await run_in_threadpool(save, web_of(request).config.settings, me, form, editing=editing)
    except MissionRefused as exc:
        return await _form_page(request, form, editing, error=exc.reason, field=exc.field)
    return RedirectResponse(f"/operate/missions?done={name} saved", status_code=303)


@router.post("/operate/missions/new", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def new_submit(request: Request, me: Identity = Depends(owner)) -> Response:
    return await _submit(request, me, None)


@router.post("/operate/missions/{name}/edit", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def edit_submit(request: Request, name: str, me: Identity = Depends(owner)) -> Response:
    await run_in_threadpool(form_of, web_of(request).config.settings, name)  # 404 for a mission not there
    return await _submit(request, me, name)


# after the edit route: /edit is not one of these actions
@router.post("/operate/missions/{name}/{action}", include_in_schema=False, dependencies=[Depends(check_csrf)])
async def mission_action(request: Request, name: str, action: str, me: Identity = Depends(owner)) -> Response:
    if action not in ("run", "pause", "resume"):
        raise WebError(404, "no such page")
    answer = await run_in_threadpool(act, web_of(request).config.settings, me, name, action)
    said = {"run": f"enqueued {answer.get('enqueued')}", "pause": "paused", "resume": "resumed"}[action]
    return RedirectResponse(f"/operate/missions?done={name} {said}", status_code=303)


# -- the API ----------------------------------------------------------------------------------------
@router.get("/api/missions", tags=["missions"])
async def api_missions(request: Request, me: Identity = Depends(viewer)) -> dict[str, Any]:
    """As `hearth missions --json`: each mission's schedule, next fire, pause, skips and last run;
    `problems` lists the files that do not load."""
    return await run_in_threadpool(missions_data, web_of(request).config.settings, web_of(request).reader)


@router.post("/api/missions/{name}/{action}", tags=["missions"], dependencies=[Depends(check_csrf)])
async def api_mission_action(request: Request, name: str, action: str, me: Identity = Depends(owner)) -> Any:
    """`run` (enqueue now, even while paused), `pause` or `resume`, as `hearth missions ACTION NAME --json`."""
    if action not in ("run", "pause", "resume"):
        raise WebError(404, f"no mission action {action[:40]!r}; the actions are run, pause, resume")
    return await run_in_threadpool(act, web_of(request).config.settings, me, name, action)


@router.put("/api/missions/{name}", tags=["missions"], dependencies=[Depends(check_csrf)])
async def api_put_mission(request: Request, name: str, me: Identity = Depends(owner)) -> Response:
    """Add or replace NAME.toml from the mission's keys (schedule, goal, agent, model, ...). 422
    {error, field} when the file would not load; nothing is written then."""
    try:
        body = await request.json()
    except ValueError:
        raise WebError(400, "malformed request body: not valid JSON") from None
    if not isinstance(body, dict):
        raise WebError(400, 'the body must be an object of the mission\'s keys: {"schedule": "daily", "goal": "..."}')
    settings = web_of(request).config.settings
    exists = (leash.missions_dir(settings) / f"{name}.toml").is_file() and bool(leash.NAME.fullmatch(name))
    try:
        saved = await run_in_threadpool(save, settings, me, {**body, "name": name}, editing=name if exists else None)
    except MissionRefused as exc:
        return JSONResponse({"error": exc.reason, "field": exc.field or None}, status_code=422)
    return JSONResponse({"mission": saved, "created": not exists}, status_code=200 if exists else 201)
