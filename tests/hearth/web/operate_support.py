"""What the operator pages' tests share: a guarded command center (operator and viewer tokens),
spend recorded today, and each page looked at by a real browser at desktop and phone width."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hearth.audit.store import AuditStore, RunRecord
from tests.browser_support import Browser
from tests.web_support import Center

OPERATOR = "operator-token-0123456789abcdef"
VIEWER = "viewer-token-0123456789abcdef"
WIDTHS = ((1280, 900), (390, 844))


def spend(state_dir: Path, run_id: str, agent: str, tokens_in: int, tokens_out: int) -> None:
    """A run of `agent` with one model step now: what today's budgets count."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(RunRecord(id=run_id, agent_name=agent, model="m", goal="g", mode="plan"))
        audit.record_step(run_id, "model", iteration=1, tokens_in=tokens_in, tokens_out=tokens_out, ok=1)
        audit.finish_run(run_id, status="done", iterations=1, tokens_in=tokens_in, tokens_out=tokens_out)


def signed_in(center: Center, browser: Browser, token: str, width: int = 1280, height: int = 900) -> Any:
    """A page at that size, signed in with `token` through the sign-in form."""
    page = browser.page(width, height)
    page.goto(center.url + "/signin")
    page.fill("input[name=token]", token)
    page.click("form button.primary")
    page.wait_for_url(center.url + "/")
    return page


def looked_at(browser: Browser, page: Any, url: str, name: str) -> None:
    """The page at both widths: a screenshot of each, and no serious or critical axe violation."""
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(url)
        browser.shot(page, f"{name}-{width}")
        found = browser.axe(page)
        assert found == [], f"{name} at {width}x{height}: {found}"
