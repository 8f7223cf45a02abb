"""The orchestrator, not the model, decides what a research run may do and afford: its searches and
pages, the same search or page twice, pages read at once, its tokens with the synthesis's reserve,
and when gathering stops (enough evidence, nothing new)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from hearth.audit import research
from hearth.audit.store import AuditStore
from hearth.queue.longspec import Research
from hearth.settings import Settings
from tests.netfixtures import Answer, Seen
from tests.research_support import (
    GC_PAGE,
    PLAIN,
    LoopWeb,
    PhaseModel,
    Script,
    approved_run,
    plan,
    rows,
    settings_for,
)

INCREMENTAL = {"sub_question": 1, "quote": "The cycle garbage collector is now incremental", "note": ""}
TWO = {"sub_question": 2, "quote": "There are now only two generations: young and old.", "note": ""}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return settings_for(tmp_path / "state")


def gate_steps(settings: Settings) -> list[dict[str, object]]:
    with AuditStore(settings.audit_path) as audit:
        return [json.loads(s["data"]) for s in audit.steps("r1") if s["kind"] == "gate" and s["verdict"] == "done"]


def decision(settings: Settings, round_no: int) -> dict[str, object]:
    with AuditStore(settings.audit_path) as audit:
        [step] = [s for s in audit.steps("r1") if s["opens"] == f"r1/decide:{round_no}#1"]
    return dict(json.loads(step["data"])["accepted"])


def test_the_run_keeps_to_its_searches_and_pages_and_never_repeats_a_search_or_a_page(
    settings: Settings, loop_web: LoopWeb
) -> None:
    queries = ["Python 3.13  GC incremental", "python 3.13 gc incremental", "python 3.13 gc generations"]
    script = Script(
        plan=plan(queries[:2], queries[2:]),
        decide=[
            {"reads": ["S1", "S2", "http://blog.test/free", "S7"], "searches": [{"sub_question": 2, "query": "more"}]}
        ],
        extract={"http://docs.test/gc": {"excerpts": [INCREMENTAL]}},
    )
    spec = Research(max_searches=2, max_pages=1)
    assert approved_run(settings, loop_web, PhaseModel(script), spec).status == "done"

    assert loop_web.searched() == ["Python 3.13 GC incremental", "python 3.13 gc generations"]  # one search per wording
    assert loop_web.read("docs.test") == ["/gc"] and loop_web.read("blog.test") == []  # max_pages 1
    assert [s["canonical"] for s in rows(settings, research.sources)] == [
        "https://docs.test/gc",
        "https://blog.test/free",
    ]
    accepted = decision(settings, 1)
    assert accepted["reads"] == ["S1"] and accepted["searches"] == []
    refused = accepted["refused"]
    assert refused[0] == "read S2: no page reads left (max_pages 1)"
    assert "read http://blog.test/free: not a source this run's searches found" in refused[1]
    assert "read S7: not a source this run's searches found" in refused[2]
    assert refused[3] == "search 'more': no searches left (max_searches 2)"


def test_a_read_whose_host_the_egress_list_does_not_allow_is_refused_before_anything_is_sent(
    settings: Settings, loop_web: LoopWeb
) -> None:
    script = Script(
        decide=[{"reads": ["S1", "S2"], "searches": []}], extract={"http://docs.test/gc": {"excerpts": [INCREMENTAL]}}
    )
    assert approved_run(settings, loop_web, PhaseModel(script), egress=["search.test", "docs.test"]).status == "done"
    assert loop_web.read("docs.test") == ["/gc"] and loop_web.read("blog.test") == []
    assert decision(settings, 1)["refused"] == [
        "read S2: refused host blog.test: not in this run's egress allow list (search.test, docs.test)"
    ]


def test_pages_are_read_at_most_fetches_at_once_at_a_time(tmp_path: Path) -> None:
    both_in = threading.Barrier(2, timeout=30)  # the first two reads are in flight together, or it breaks
    going, most = [0], [0]
    lock = threading.Lock()

    def page(seen: Seen) -> Answer:
        with lock:
            going[0] += 1
            most[0] = max(most[0], going[0])
        if seen.path in ("/1", "/2"):
            both_in.wait()
        with lock:
            going[0] -= 1
        return Answer(200, GC_PAGE, PLAIN)

    urls = [f"http://docs.test/{n}" for n in range(1, 5)]
    loop_web = LoopWeb(
        dict.fromkeys(urls, page), {"python 3.13 gc incremental": urls, "python 3.13 gc generations": []}
    )
    settings = settings_for(tmp_path / "state")
    script = Script(decide=[{"reads": ["S1", "S2", "S3", "S4"], "searches": []}])
    try:
        assert approved_run(settings, loop_web, PhaseModel(script), Research(fetches_at_once=2)).status == "done"
    finally:
        loop_web.close()
    assert sorted(loop_web.read("docs.test")) == ["/1", "/2", "/3", "/4"]
    assert most[0] == 2


def test_gathering_stops_once_every_sub_question_has_enough_evidence(settings: Settings, loop_web: LoopWeb) -> None:
    script = Script(
        decide=[{"reads": ["S1"], "searches": []}, {"reads": ["S2"], "searches": []}],
        extract={"http://docs.test/gc": {"excerpts": [INCREMENTAL, TWO]}},
    )
    model = PhaseModel(script)
    assert approved_run(settings, loop_web, model, Research(per_question=1)).status == "done"
    assert [c[0] for c in model.calls] == ["plan", "decide", "extract", "synthesise"]  # no second round
    assert gate_steps(settings)[-1]["stopped"] == "enough evidence: at least 1 for every sub-question"
    assert loop_web.read("blog.test") == []


def test_gathering_stops_when_a_round_adds_no_evidence_and_finds_nothing_new(
    settings: Settings, loop_web: LoopWeb
) -> None:
    script = Script(decide=[{"reads": ["S2"], "searches": []}, {"reads": ["S1"], "searches": []}])
    model = PhaseModel(script)
    assert approved_run(settings, loop_web, model).status == "done"
    assert [c[0] for c in model.calls].count("decide") == 1
    assert gate_steps(settings)[-1]["stopped"] == "round 1 added no evidence and found no new source"


def test_a_fifth_of_the_run_tokens_is_kept_for_the_synthesis(settings: Settings, loop_web: LoopWeb) -> None:
    script = Script(
        decide=[{"reads": ["S1", "S2"], "searches": []}], extract={"http://docs.test/gc": {"excerpts": [INCREMENTAL]}}
    )
    model = PhaseModel(script, tokens=(300, 100))  # 400 a call: plan and decide use 800 of 1,000
    outcome = approved_run(settings, loop_web, model, max_tokens=1000)
    assert outcome.status == "done"
    assert [c[0] for c in model.calls] == ["plan", "decide", "synthesise"]  # no extraction past the reserve
    stopped = gate_steps(settings)[-1]["stopped"]
    assert stopped == "800 of the run's 1,000 tokens are used; the rest is kept for the synthesis"
    with AuditStore(settings.audit_path) as audit:
        row = audit.run("r1") or {}
    assert (row["tokens_in"], row["tokens_out"]) == (900, 300)


def test_a_daily_budget_spent_before_the_synthesis_ends_the_run_budget_exceeded_listing_what_it_kept(
    tmp_path: Path, loop_web: LoopWeb
) -> None:
    settings = settings_for(tmp_path / "state", HEARTH_DAILY_TOKENS="400")
    reads = [{"reads": ["S1", "S2"], "searches": []}]
    script = Script(decide=reads, extract={"http://docs.test/gc": {"excerpts": [INCREMENTAL]}})
    model = PhaseModel(script, tokens=(100, 20))  # 120 a call: plan, decide, two extractions reach 480
    outcome = approved_run(settings, loop_web, model)
    assert outcome.status == "budget_exceeded" and outcome.error.startswith("no synthesis: ")
    assert [c[0] for c in model.calls] == ["plan", "decide", "extract", "extract"]  # no synthesis asked
    assert "## Evidence kept" in outcome.summary and "The cycle garbage collector is now incremental" in outcome.summary
    assert "**S1** [Page /gc](http://docs.test/gc)" in outcome.summary  # the page the kept evidence is from
    assert "blog.test" not in outcome.summary.split("## Sources")[1]  # read, but no evidence came from it
