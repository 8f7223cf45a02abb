"""A research run on the command center: its plan shown and edited while it waits (the form and
/api), its report rendered from the record with caveats never cited and sources only from what the
run read, and the launch form's research choice. A real server over a real audit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hearth.audit import research
from hearth.leash.decisions import By, decide
from hearth.settings import Settings
from tests.browser_support import Browser
from tests.research_support import (
    OWNER,
    LoopWeb,
    PhaseModel,
    Script,
    go_on,
    plan_approval,
    rows,
    settings_for,
    start,
)
from tests.web_support import Center

EXTRACT = {
    "http://docs.test/gc": {
        "excerpts": [{"sub_question": 1, "quote": "The cycle garbage collector is now incremental", "note": "new"}]
    }
}
CLAIMS = {
    "claims": [
        {"sub_question": 1, "text": "The collector is now incremental.", "evidence": ["E1"]},
        {"sub_question": 1, "text": "It was rewritten, see https://invented.test/gc.", "evidence": ["E1"]},
        {"sub_question": 2, "text": "It has <b>three</b> generations.", "evidence": ["E5"]},
    ]
}
EDITED = {
    "sub_questions": [{"question": "Is the 3.13 collector incremental?", "queries": ["python 3.13 gc incremental"]}]
}


@pytest.fixture
def settings(state_dir: Path) -> Settings:
    return settings_for(state_dir, HEARTH_CONFIG_DIR=str(state_dir.parent / "config"))


def test_the_plan_is_shown_and_edited_on_the_run_page_while_it_waits_and_not_after(
    center: Center, settings: Settings, loop_web: LoopWeb
) -> None:
    model = PhaseModel(Script(decide=[{"reads": ["S1"], "searches": []}], extract=EXTRACT, synthesise=CLAIMS))
    assert start(settings, loop_web, model).status == "waiting"
    client = center.client()
    page = client.get("/runs/r1").text
    assert 'id="research-plan"' in page and "Revision 1, by model" in page
    assert "How does the 3.13 collector collect cycles?" in page and 'id="plan-edit"' in page
    assert "research_plan" in page.split('id="run-approvals"')[1]  # approved or denied where any approval is

    edited = client.post_form("/runs/r1/plan", {"plan": json.dumps(EDITED), "note": "narrower"})
    assert edited.status_code == 303 and edited.headers["location"] == "/runs/r1?edited=2#research-plan"
    [_, second] = rows(settings, research.plans)
    assert json.loads(second["plan"]) == EDITED and second["by"].startswith("web:") and second["note"] == "narrower"
    shown = client.get("/runs/r1?edited=2").text
    assert 'id="plan-edited"' in shown and "Is the 3.13 collector incremental?" in shown
    assert "How does the 3.13 collector collect cycles?" not in shown.split('id="plan-questions"')[1].split("</ol>")[0]

    bad = client.post_json("/api/runs/r1/plan", {"plan": {"sub_questions": [{"question": "q"}]}})
    assert bad.status_code == 422 and "sub_questions.0.queries: field required" in bad.text
    assert client.post_json("/api/runs/nobody/plan", {"plan": EDITED}).status_code == 404
    third = client.post_json("/api/runs/r1/plan", {"plan": EDITED, "note": "again"})
    assert third.status_code == 200 and third.json()["revision"] == 3

    decide(settings, plan_approval(settings)["id"], "approve", By("web", "alice"), user=OWNER)
    late = client.post_json("/api/runs/r1/plan", {"plan": EDITED})
    assert late.status_code == 409 and "not waiting for approval" in late.text
    assert 'id="plan-edit"' not in client.get("/runs/r1").text
    assert len(rows(settings, research.plans)) == 3


def test_the_report_on_the_run_page_cites_only_kept_evidence_and_lists_only_pages_read(
    center: Center, settings: Settings, loop_web: LoopWeb
) -> None:
    model = PhaseModel(Script(decide=[{"reads": ["S1"], "searches": []}], extract=EXTRACT, synthesise=CLAIMS))
    assert start(settings, loop_web, model).status == "waiting"
    decide(settings, plan_approval(settings)["id"], "approve", By("cli", "alice"), user=OWNER)
    assert go_on(settings, loop_web, model).status == "done"

    page = center.client().get("/runs/r1").text
    report = page.split('id="research-report"')[1].split("</section>")[0]
    body, caveats = report.split('id="caveats"')
    assert 'The collector is now incremental. <a class="cite mono" href="#evidence-E1">[E1]</a>' in body
    assert "invented.test" not in body and "E5" not in body  # neither cited nor listed as a source
    caveats = caveats.split("</div>")[0]
    assert "It was rewritten, see https://invented.test/gc." in caveats and "href" not in caveats
    assert "It has &lt;b&gt;three&lt;/b&gt; generations." in caveats  # what a model wrote is text
    assert 'id="evidence-E1"' in report and 'id="source-S1"' in report
    assert report.count('rel="noopener noreferrer nofollow"') == 1 and 'href="http://docs.test/gc"' in report
    assert 'id="summary"' not in page  # the report stands for the Markdown summary
    api = center.client().get("/api/runs/r1/research").json()
    assert [c["verdict"] for c in api["report"]["claims"]] == ["cited"]
    assert [s["id"] for s in api["report"]["sources"]] == ["S1"] and api["pending"] is None


def test_the_launch_form_queues_a_research_run_with_its_pages(center: Center, state_dir: Path) -> None:
    client = center.client()
    assert 'name="long" value="research"' in client.get("/launch").text
    form = {"goal": "What changed in 3.13?", "long": "research", "pages": "4", "id": "q-1"}
    assert client.post_form("/launch", form).status_code == 303
    assert json.loads((state_dir / "queue" / "q-1.json").read_text())["research"]["max_pages"] == 4
    refused = client.post_form("/launch", {**form, "pages": "101", "id": "q-2"})
    assert refused.status_code == 422 and "Pages must be at most 100, got 101" in refused.text
    assert 'id="error-research"' in refused.text


@pytest.mark.parametrize("width", [1280, 390])
def test_a_research_run_page_waiting_and_reported_passes_axe_at_a_desktops_and_a_phones_width(
    center: Center, settings: Settings, loop_web: LoopWeb, browser: Browser, width: int
) -> None:
    from tests.hearth.web.test_accessibility import looked_at

    model = PhaseModel(Script(decide=[{"reads": ["S1"], "searches": []}], extract=EXTRACT, synthesise=CLAIMS))
    assert start(settings, loop_web, model).status == "waiting"
    page = browser.page(width, 900)
    page.goto(f"{center.url}/runs/r1")
    page.click("#plan-edit summary")
    assert page.is_visible("#plan-text")
    assert looked_at(browser, page, f"research-waiting-{width}") == []
    decide(settings, plan_approval(settings)["id"], "approve", By("cli", "alice"), user=OWNER)
    assert go_on(settings, loop_web, model).status == "done"
    page.reload()  # the run ended while the page was open
    assert page.is_visible("#caveats")
    assert looked_at(browser, page, f"research-report-{width}") == []
    browser.shot(page, f"research-report-panel-{width}", selector="#research-report")


def test_a_plan_being_edited_stays_open_with_its_text_when_the_run_page_refreshes_itself(
    center: Center, settings: Settings, loop_web: LoopWeb, browser: Browser
) -> None:
    model = PhaseModel(Script(decide=[{"reads": ["S1"], "searches": []}], extract=EXTRACT, synthesise=CLAIMS))
    assert start(settings, loop_web, model).status == "waiting"
    page = browser.page()
    page.goto(f"{center.url}/runs/r1")
    page.click("#plan-edit summary")
    page.fill("#plan-text", json.dumps(EDITED))
    page.fill("#plan-note", "half written")
    # a state event arrives (another run, an approval elsewhere): the live run page swaps itself
    swapped = page.evaluate(
        """() => new Promise(done => {
             document.body.addEventListener("htmx:afterSettle", () => done(true), { once: true });
             document.body.dispatchEvent(new CustomEvent("hearth:state", { detail: {} }));
           })"""
    )
    assert swapped is True
    assert page.is_visible("#plan-text")
    assert json.loads(page.input_value("#plan-text")) == EDITED
    assert page.input_value("#plan-note") == "half written"
