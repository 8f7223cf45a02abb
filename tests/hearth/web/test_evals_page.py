"""The command center's Evals page in a real Chromium: the matrix says who won which case, each cell
links to its run, the chart and the models' standing are there, at a desktop's and a phone's width,
with no serious accessibility violation; /api/evals answers the same."""

from __future__ import annotations

from pathlib import Path

from hearth.audit.evals import Item, record_eval, record_score
from hearth.audit.store import AuditStore, RunRecord
from tests.browser_support import Browser
from tests.web_support import Center

CASES = ("hello", "count", "tidy")
FAILS = {"hello": "files", "count": "max_iterations", "tidy": "no_denial"}


def _seed(state_dir: Path) -> str:
    """An eval of three cases on models a and b, scored: a passes all, b fails each one check."""
    eval_id = "ev-20261202T050000-abc123"
    items = [
        Item(f"{eval_id}-{n:03d}", case, model, 1, {}, {})
        for n, (case, model) in enumerate(((c, m) for c in CASES for m in ("a", "b")), 1)
    ]
    state_dir.mkdir(parents=True, exist_ok=True)
    row = {"id": eval_id, "suite": "chores", "created_at": "2026-12-02T05:00:00.000Z", "requested_by": "cli:test"}
    with AuditStore(state_dir / "audit.db") as audit:
        record_eval(audit, {**row, "models": ["a", "b"], "repeat": 1, "trigger": "cli"}, items)
        for item in items:
            audit.start_run(RunRecord(item.run_id, "default", item.model, f"the {item.case_name} chore", "bypass"))
            audit.finish_run(item.run_id, status="done", iterations=2, tokens_in=100 + 50 * (item.model == "b"))
            failed = item.model == "b"
            checks = [{"check": FAILS[item.case_name], "passed": not failed, "detail": "as scripted"}]
            facts = {"iterations": 2, "tokens": 120, "model_ms": 300, "wall_ms": 900, "approvals": 0}
            record_score(audit, item.run_id, not failed, checks, facts)
        audit.conn.execute("update eval_runs set status = 'done', pass_rate = 0.5 where id = ?", [eval_id])
    return eval_id


def test_the_evals_page_shows_who_won_each_case_and_links_every_cell_to_its_run(
    center: Center, browser: Browser, state_dir: Path
) -> None:
    eval_id = _seed(state_dir)
    page = browser.page(1280, 900)
    page.goto(center.url + "/evals")
    matrix = page.locator("table.eval-matrix")
    for case in CASES:
        row = matrix.locator(f'tbody tr:has(th:text-is("{case}"))')
        assert row.locator("td").nth(0).inner_text().startswith("pass")
        assert row.locator("td").nth(1).inner_text().startswith(f"fail 0/1 fail: {FAILS[case]}")
        assert row.locator("td").nth(2).inner_text() == "a"
    assert page.locator('figure.chart ul[aria-label="Pass rate by model (%)"]').count() == 1
    assert page.locator(f'a[href="/evals?id={eval_id}"]').count() == 1
    assert browser.axe(page) == []
    browser.shot(page, "evals-desktop")

    page.click('a[aria-label="run 1 of count on b (done)"]')
    page.wait_for_url(f"**/runs/{eval_id}-004")
    assert "the count chore" in page.content()

    phone = browser.page(390, 844)
    phone.goto(center.url + f"/evals?id={eval_id}")
    assert phone.locator("table.eval-matrix tbody tr").count() == 3
    assert browser.axe(phone) == []
    browser.shot(phone, "evals-phone")

    answer = center.client().get("/api/evals", params={"id": eval_id}).json()
    assert answer["matrix"]["winners"] == {"hello": "a", "count": "a", "tidy": "a"}
    assert [s["pass_rate"] for s in answer["matrix"]["models_standing"]] == [1.0, 0.0]
    assert center.client().get("/api/evals", params={"id": "ev-nope"}).status_code == 404


def test_the_evals_page_says_how_to_start_when_there_is_no_eval(center: Center, browser: Browser) -> None:
    page = browser.page(390, 844)
    page.goto(center.url + "/evals")
    assert "hearth eval add RUN --suite S" in page.inner_text("main")
    assert browser.axe(page) == []
    browser.shot(page, "evals-empty")
