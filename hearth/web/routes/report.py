"""The report (what `hearth report` computes, with charts drawn as SVG) and /metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import HTMLResponse, Response

from hearth.errors import UsageError
from hearth.report import build_report, parse_since
from hearth.web import charts
from hearth.web.context import web_of
from hearth.web.metrics import exposition
from hearth.web.security import Identity, WebError, viewer

router = APIRouter()
PERIODS = (("24h", "24 hours"), ("7d", "7 days"), ("30d", "30 days"), ("90d", "90 days"), ("", "all time"))


def report_data(request: Request, since: str) -> dict[str, Any]:
    """`hearth report --json` for the period, plus the per-day series the charts draw."""
    try:
        moment = parse_since(since) if since else None
    except UsageError as exc:
        raise WebError(400, str(exc).replace("--since", "since")) from None
    return build_report(web_of(request).reader, moment)


def pictures(report: dict[str, Any]) -> dict[str, Any]:
    days = sorted({row["day"] for row in report["per_day"]})
    index = {day: i for i, day in enumerate(days)}
    by_status: dict[str, list[int]] = {status: [0] * len(days) for status in report["by_status"]}
    tokens = {"tokens in": [0] * len(days), "tokens out": [0] * len(days)}
    for row in report["per_day"]:
        i = index[row["day"]]
        by_status.setdefault(row["status"], [0] * len(days))[i] += row["runs"]
        tokens["tokens in"][i] += row["tokens_in"]
        tokens["tokens out"][i] += row["tokens_out"]
    duration = report["duration_ms"]
    return {
        "runs_chart": charts.stacked_bars("Runs per day, by status", days, by_status),
        "tokens_chart": charts.stacked_bars("Tokens per day", days, tokens),
        "tools_chart": charts.hbars(
            "Tools most used (calls)",
            [(t["tool"] or "-", t["calls"]) for t in report["tools"][:10]],
            empty="no tool calls in this period",
        ),
        "failures_chart": charts.hbars(
            "Most common failure reasons",
            [(f["what"], f["count"]) for f in report["failures"]],
            empty="no failures in this period",
        ),
        "duration_chart": charts.hbars(
            f"Run duration, p50 and p95 of {duration['n']} finished runs (ms)",
            [(name, duration[name] or 0) for name in ("p50", "p95")] if duration["n"] else [],
            unit=" ms",
            empty="no finished runs in this period",
        ),
    }


@router.get("/report", response_class=HTMLResponse, include_in_schema=False)
def report_page(request: Request, since: str = "30d", me: Identity = Depends(viewer)) -> HTMLResponse:
    report = report_data(request, since)
    return web_of(request).pages.render(
        request, "report.html", report=report, since=since, periods=PERIODS, **pictures(report)
    )


@router.get("/api/report", tags=["report"])
def api_report(request: Request, since: str = "", me: Identity = Depends(viewer)) -> dict[str, Any]:
    """`hearth report --json` (since: 7d, 24h, a date; empty: everything) plus runs and tokens per day."""
    return report_data(request, since)


@router.get("/metrics", tags=["report"], response_class=Response)
def metrics(request: Request, me: Identity = Depends(viewer)) -> Response:
    """Prometheus text format: runs, tool calls, tokens, durations, queue depth, pending approvals, sandboxes."""
    web = web_of(request)
    return Response(exposition(web.config, web.reader), media_type="text/plain; version=0.0.4; charset=utf-8")
