"""Evals: the matrix of an eval (who passed which case, each cell linking to its runs), a chart of
the models' pass rates, and the recent evals; read from the audit as `hearth eval show` scored it
(the page never runs a check: scoring runs commands in the sandbox, which is the CLI's and the
spawner's to do)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import HTMLResponse

from hearth.audit.evals import eval_row, eval_rows
from hearth.audit.evals import results_of as result_rows
from hearth.errors import NotFound
from hearth.eval.render import cell_text, standing_rows
from hearth.eval.results import matrix
from hearth.web import charts
from hearth.web.context import web_of
from hearth.web.security import Identity, WebError, viewer

router = APIRouter()
RECENT = 30


def evals_data(request: Request, eval_id: str = "") -> dict[str, Any]:
    """The recent evals and the matrix of `eval_id` (default: the latest); WebError 404 for no such eval."""
    reader = web_of(request).reader
    recent = eval_rows(reader, limit=RECENT)
    chosen = eval_id or (recent[0]["id"] if recent else "")
    if not chosen:
        return {"evals": recent, "matrix": None}
    try:
        found = matrix(eval_row(reader, chosen), result_rows(reader, chosen))
    except NotFound as exc:
        raise WebError(404, str(exc)) from None
    return {"evals": recent, "matrix": found.as_json()}


def _view(data: dict[str, Any]) -> dict[str, Any]:
    """What the template draws: each cell's words, the standing rows and the pass-rate chart."""
    m = data["matrix"]
    if m is None:
        return {"cells": {}, "standing": [], "chart": None}
    cells = {(c["case"], c["model"]): {**c, "text": cell_text(c)} for c in m["cells"]}
    rates = [(s["model"], round((s["pass_rate"] or 0) * 100)) for s in m["models_standing"]]
    chart = charts.hbars("Pass rate by model (%)", rates, unit="%", empty="no run scored yet")
    return {"cells": cells, "standing": standing_rows(m["models_standing"]), "chart": chart}


@router.get("/evals", response_class=HTMLResponse, include_in_schema=False)
def evals_page(request: Request, id: str = "", me: Identity = Depends(viewer)) -> HTMLResponse:
    data = evals_data(request, id[:100])
    return web_of(request).pages.render(request, "evals.html", **data, **_view(data))


@router.get("/api/evals", tags=["evals"])
def api_evals(request: Request, id: str = "", me: Identity = Depends(viewer)) -> dict[str, Any]:
    """The recent evals and the matrix of one (id; default the latest): cells per case and model,
    each model's pass rate, spread over repeats, median tokens and times, and each case's winner."""
    return evals_data(request, id[:100])
