"""Rendering: Jinja2 with autoescaping on, and the small filters the templates share.

Nothing from the audit, a model or a tool is ever marked safe: goals, replies, arguments, tool
output, file names and diffs are text. The only Markup in a page is the server's own SVG
(hearth/web/charts.py), whose labels are escaped there.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from fastapi import Request
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.responses import HTMLResponse

from hearth.queue.request import MAX_GOAL_CHARS
from hearth.render import time_left
from hearth.web.charts import STATUS_COLOURS
from hearth.web.security import Identity

NAV = (
    ("/", "Overview"),
    ("/launch", "Launch"),
    ("/runs", "Runs"),
    ("/approvals", "Approvals"),
    ("/report", "Report"),
    ("/knowledge", "Knowledge"),
    ("/proposals", "Proposals"),
    ("/operate", "Operate"),  # budgets, missions, router, security, alerts, model server
    ("/evals", "Evals"),
    ("/operate/mcp", "MCP"),
)


def duration(ms: Any) -> str:
    """1200 -> 1.2 s, 95000 -> 1 min 35 s; `-` when unknown."""
    if ms is None:
        return "-"
    seconds = float(ms) / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def when(text: Any) -> str:
    """An audit time as `2026-01-31 09:30:01` (UTC), shorter than ISO and still exact."""
    return str(text).replace("T", " ")[:19] if text else "-"


def pretty(text: Any) -> str:
    """JSON text indented for reading; other text as it is."""
    if not text:
        return ""
    return _pretty(text) if isinstance(text, str) else str(text)


@lru_cache(maxsize=256)  # a live run's page is drawn again at each of its steps, with the same arguments
def _pretty(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


def left(expires_at: str | None, now: datetime | None = None) -> str:
    """Time until an approval expires, for a person: `4 min 10 s left`."""
    if not expires_at:
        return "-"
    end = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
    seconds = int((end - (now or datetime.now(UTC))).total_seconds())
    return "expired" if seconds <= 0 else f"{time_left(seconds)} left"


def status_class(status: Any) -> str:
    """A CSS class for a status or live state; unknown words get the neutral one."""
    name = str(status or "").replace(" ", "_")
    return f"st-{name}" if name in STATUS_COLOURS or name in LIVE_STATES or name in CALL_STATES else "st-other"


LIVE_STATES = ("starting", "claimed", "thinking", "tool", "waiting_approval", "queued")
# a tool call's (hearth/web/steps.py) and an approval's: their colours are in hearth.css
CALL_STATES = ("ok", "not_run", "unknown", "running", "approved", "denied", "expired", "pending", "cancelled")


# a pill's words where they are not its status with spaces
PILL_WORDS = {"tool": "running tool", "waiting_approval": "waiting for approval", "waiting": "waiting for approval"}


def pill(status: Any) -> Markup:
    """A status as a coloured pill with its words (a function, not a macro: a long run's page draws
    one a step, and a Jinja macro call costs several times more)."""
    words = PILL_WORDS.get(status, str(status or "-").replace("_", " "))
    return Markup(f'<span class="pill {status_class(status)}">{escape(words)}</span>')  # the class is one of ours


def more(run: Any, step: Any, name: str, cap: int) -> Markup:
    """The note under a step's field cut at `cap` characters, linking to the whole step; else nothing."""
    whole = step.get(f"{name}_chars") if isinstance(step, dict) else None
    if not (cap and whole and whole > cap):
        return Markup("")
    return Markup(
        '<p class="hint cut">Shown: the first {} of {} characters; <a href="/api/runs/{}/steps/{}">the whole step</a>.</p>'
    ).format(f"{cap:,}", f"{whole:,}", quote(str(run["id"]), safe="/"), step["seq"])


class RowEnvironment(Environment):
    """Jinja reading `run.status` on the audit's rows (dicts) by key first. Its own lookup tries the
    attribute first, and the AttributeError every dict raises there was half of a long run's page."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)


def environment() -> Environment:
    env = RowEnvironment(
        loader=PackageLoader("hearth.web", "templates"),
        autoescape=select_autoescape(["html"], default_for_string=True, default=True),
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # the templates ship with the package: no stat of each one per page
    )
    env.filters.update(duration=duration, when=when, pretty=pretty, left=left, status_class=status_class)
    env.globals.update(nav=NAV, pill=pill, more=more)
    env.globals["goal_limit"] = MAX_GOAL_CHARS  # shown beside every goal box before it is sent
    return env


class Pages:
    def __init__(self) -> None:
        self.env = environment()

    def render(self, request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
        identity: Identity = request.state.identity
        page = self.env.get_template(template).render(
            request_path=request.url.path,
            me=identity,
            csrf=identity.csrf,
            **context,
        )
        return HTMLResponse(page, status_code=code)
