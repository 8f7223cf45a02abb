"""Gathering: the approved plan's searches, then rounds of decide, search, read and extract, until
the gate (hearth/research/gate.py) says stop.

    round 0   the plan's searches, in its order, as many as `max_searches` allows
    round n   decide (a model call: sources to read, searches to make), filtered by the run:
                  a read names a source this run found and has not read, whose host the run's
                  egress list allows, within the pages left; anything else (a URL, an id it made
                  up) is refused and recorded
                  a search is new (not the same words as one made) and within the searches left
              the searches, the reads (at most `fetches_at_once` at a time), then the extraction
              of each page read (a model call that sees the page enveloped; only excerpts found
              word for word in the page's snapshot become evidence), then the gate

Every action is a step of hearth/research/journal.py: recorded before it runs, and on a restart
not done again once it is closed. A round's decision is recorded with what the run accepted of
it, so a restarted round does exactly what the first process meant to, and nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agent.model.reply import ChatModel
from agent.net.guard import NetRefused, run_guard
from agent.safety.workspace import Workspace
from agent.tools.registry import ToolFailed
from hearth.audit.store import Rows
from hearth.research import gather, shown
from hearth.research.gate import Limits, Used, finished, spent, tokens_spent
from hearth.research.journal import Journal
from hearth.research.phases import PHASES, Extracted, Next, Plan, ask
from hearth.research.record import Record
from hearth.research.text import query_key
from hearth.run.state import StateFile


@dataclass
class Run:
    """What every phase of a research run needs: its question and limits, its record and journal,
    its workspace (with the run's guard), its model, and `daily()`: why the daily budgets allow no
    more model calls ('' when they do)."""

    question: str
    limits: Limits
    record: Record
    journal: Journal
    ws: Workspace
    model: ChatModel
    db: Rows
    daily: Callable[[], str]
    state: StateFile
    heard: gather.Heard

    def refused(self, gathering: bool) -> str:
        """Why no model call may be made now ('' when one may): a daily budget spent, the run's
        own token cap, or (while gathering) the share of it kept for the synthesis."""
        return self.daily() or tokens_spent(self.limits, self.used(), gathering=gathering)

    def used(self) -> Used:
        keys = self.journal.attempts
        searches = sum(1 for k in keys if k.startswith("search:"))
        pages = sum(1 for k in keys if k.startswith("fetch:"))
        tokens_in, tokens_out = self.journal.tokens()
        return Used(searches, pages, tokens_in + tokens_out, self.journal.recorder.worked_ms() / 1000)


@dataclass
class Gathering(Run):
    """A research run once its plan is approved: the plan in force (an operator's last edit)."""

    plan: Plan

    def counts(self) -> list[int]:
        return self.record.counts(len(self.plan.sub_questions))


def gather_all(run: Gathering) -> str:
    """The plan's searches, then rounds until the gate stops them; why they stopped."""
    _plan_searches(run)
    for round_no in range(1, run.limits.rounds + 1):
        kept = run.journal.done(f"gate:{round_no}")
        if kept is not None:  # a round an earlier process of the run finished
            if kept.get("stop"):
                return str(kept["stop"])
            continue
        why = spent(run.limits, run.used()) or run.refused(True)
        if why:
            return why
        stop = _round(run, round_no)
        if stop:
            return stop
    return f"{run.limits.rounds} rounds ran (max_rounds)"


def _round(run: Gathering, round_no: int) -> str:
    evidence, sources = len(run.record.evidence), len(run.record.sources)
    run.state.update("research", f"round {round_no}: deciding what to read", round_no)
    accepted = _decide(run, round_no)
    if accepted is None:
        problem = (run.journal.done(f"decide:{round_no}") or {}).get("problem") or "no usable answer"
        return f"the decide phase of round {round_no} failed: {problem}"
    for sub_question, query in accepted["searches"]:
        _search(run, query, sub_question)
    _read(run, accepted["reads"])
    _extract_read(run)
    added, found = len(run.record.evidence) - evidence, len(run.record.sources) - sources
    stop = finished(run.limits, run.used(), run.counts(), round_no, added, found)
    data = {"stop": stop, "added": added, "found": found, "counts": run.counts(), **_usage(run)}
    detail = f"round {round_no}: {added} pieces of evidence kept, {found} new sources; " + (stop or "going on")
    run.journal.once("gate", f"gate:{round_no}", data, detail=detail, iteration=round_no)
    return stop


def _usage(run: Gathering) -> dict[str, Any]:
    used = run.used()
    return {"searches": used.searches, "pages": used.pages, "tokens": used.tokens}


def _plan_searches(run: Gathering) -> None:
    """Round 0: the plan's searches, in order, while searches are left (the rest skipped, recorded)."""
    if run.journal.done("gate:0") is not None:
        return
    skipped = []
    for n, sub in enumerate(run.plan.sub_questions, 1):
        for query in sub.queries:
            if run.journal.done(f"search:{query_key(query)}") is not None:
                continue
            if not run.used().searches_left(run.limits):
                skipped.append(query)
                continue
            _search(run, query, n)
    line = f"the plan's searches made; {len(skipped)} skipped (max_searches {run.limits.searches})"
    run.journal.once("gate", "gate:0", {"skipped": skipped, **_usage(run)}, detail=line, iteration=0)


def _search(run: Gathering, asked: str, sub_question: int) -> None:
    query = " ".join(asked.split())
    key = f"search:{query_key(query)}"
    if run.journal.done(key) is not None:
        return
    run.state.update("research", f"searching: {query}", sub_question)
    opened = run.journal.open("search", key, tool="web_search", arguments={"query": query}, detail=query)
    try:
        results = gather.search(run.ws, query)
    except ToolFailed as exc:
        run.heard.flush()
        run.journal.close(opened, "failed", {"query": query}, output=str(exc))
        return
    run.heard.flush()
    new = [sid for sid in (run.record.add_source(found, query) for found in results) if sid]
    output = "\n".join(f"{f.title or '(no title)'} <{f.url}>" for f in results) or "(no results)"
    detail = f"{query}: {len(results)} results, {len(new)} new sources"
    run.journal.close(opened, "done", {"query": query, "new": new}, output=output, detail=detail)


def _read(run: Gathering, source_ids: list[str]) -> None:
    """The pages read, at most `fetches_at_once` at a time; each a step recorded before it starts."""
    todo = [(sid, run.record.sources[sid]["url"]) for sid in source_ids if run.journal.done(f"fetch:{sid}") is None]
    if not todo:
        return
    run.state.update("research", f"reading {len(todo)} pages", len(todo))
    opened = {}

    def start(sid: str) -> None:
        url = run.record.sources[sid]["url"]
        opened[sid] = run.journal.open("fetch", f"fetch:{sid}", tool="web_fetch", arguments={"url": url}, detail=url)

    for sid, outcome in gather.read_all(run.ws, todo, run.limits.at_once, start):
        run.heard.flush()
        if isinstance(outcome, str):
            run.journal.close(opened[sid], "failed", {"source": sid}, output=outcome)
            continue
        run.record.add_snapshot(sid, outcome)
        data = {"source": sid, "sha256": outcome.sha256, "chars": len(outcome.text)}
        detail = f"{sid} read: {len(outcome.text):,} characters, sha256 {outcome.sha256[:12]}"
        run.journal.close(opened[sid], "done", data, detail=detail)


def _extract_read(run: Gathering) -> None:
    """Evidence from each page read whose extraction has not been done (this round's, or one a
    stopped process read and never got to)."""
    for sid in [sid for sid in run.record.sources if sid in run.record.snapshots]:
        if run.journal.done(f"extract:{sid}") is not None:
            continue
        if run.refused(True):
            return  # the gate after the round says why
        _extract(run, sid)


def _extract(run: Gathering, sid: str) -> None:
    snapshot = run.record.snapshots[sid]
    text = run.record.flat_text(run.db, sid)
    run.state.update("research", f"taking evidence from {sid}", len(run.record.evidence))
    opened = run.journal.open("phase", f"extract:{sid}", detail=f"extract: evidence from {sid} {snapshot['url']}")
    asked = shown.extract_question(run.question, run.plan, snapshot["url"], text, run.ws.services.envelope)
    answer = ask(run.model, PHASES["extract"], asked)
    value: Extracted | None = answer.value
    kept: list[str] = []
    refused: list[dict[str, str]] = []
    for excerpt in value.excerpts if value else []:
        why = _why_not(run, sid, excerpt.sub_question, excerpt.quote, excerpt.note, kept)
        if why:
            refused.append({"quote": excerpt.quote[:300], "why": why})
    data = phase_data("extract", answer) | {"source": sid, "kept": kept, "refused": refused}
    line = f"extract from {sid}: {len(kept)} kept as evidence, {len(refused)} refused"
    if value is None:
        line = f"extract from {sid} failed: {answer.answer.problem}"
    close_phase(run.journal, opened, answer, data, line)


def _why_not(run: Gathering, sid: str, sub_question: int, quote: str, note: str, kept: list[str]) -> str:
    """'' when the excerpt became evidence (its id added to `kept`), else why it did not."""
    if not 1 <= sub_question <= len(run.plan.sub_questions):
        return f"sub-question {sub_question} is not one of the plan's"
    evidence_id = run.record.add_evidence(run.db, sid, sub_question, quote, note)
    if evidence_id is None:
        return "not found word for word in the page's snapshot (or kept already, or too short to prove anything)"
    kept.append(evidence_id)
    return ""


def _decide(run: Gathering, round_no: int) -> dict[str, Any] | None:
    """The round's actions as the run accepted them (recorded with the decision), or None: the
    decide phase gave no usable answer."""
    key = f"decide:{round_no}"
    kept = run.journal.done(key)
    if kept is None:
        searched = [str(d["query"]) for k, d in run.journal.closed.items() if k.startswith("search:") and "query" in d]
        asked = shown.decide_question(
            run.question, run.plan, run.record, run.limits, run.used(), searched, run.ws.services.envelope
        )
        opened = run.journal.open("phase", key, detail=f"decide: round {round_no}", iteration=round_no)
        answer = ask(run.model, PHASES["decide"], asked)
        accepted = _accepted(run, answer.value) if answer.value is not None else None
        data = phase_data("decide", answer) | {"accepted": accepted}
        line = _decided_line(round_no, accepted, answer.answer.problem)
        close_phase(run.journal, opened, answer, data, line, iteration=round_no)
        kept = run.journal.done(key) or {}
    accepted = kept.get("accepted")
    if not isinstance(accepted, dict):
        return None
    return {"reads": list(accepted["reads"]), "searches": [tuple(s) for s in accepted["searches"]]}


def _decided_line(round_no: int, accepted: dict[str, Any] | None, problem: str) -> str:
    if accepted is None:
        return f"decide: round {round_no} failed: {problem}"
    reads, searches, refused = accepted["reads"], accepted["searches"], accepted["refused"]
    return f"decide: round {round_no}: read {', '.join(reads) or 'nothing'}; {len(searches)} searches; {len(refused)} refused"


def _accepted(run: Gathering, wanted: Next) -> dict[str, Any]:
    """What the run allows of a decision: reads of its own sources, new searches, within what is left."""
    used, refused = run.used(), []
    reads: list[str] = []
    for asked in wanted.reads:
        why = _unreadable(run, asked.strip(), reads, used.pages_left(run.limits))
        if why:
            refused.append(f"read {asked[:120]}: {why}")
        else:
            reads.append(asked.strip())
    searches: list[tuple[int, str]] = []
    made = {k.removeprefix("search:") for k in run.journal.attempts if k.startswith("search:")}
    for search in wanted.searches:
        key = query_key(search.query)
        if key in made or any(query_key(q) == key for _, q in searches):
            refused.append(f"search {search.query[:120]!r}: made already")
        elif not 1 <= search.sub_question <= len(run.plan.sub_questions):
            refused.append(
                f"search {search.query[:120]!r}: sub-question {search.sub_question} is not one of the plan's"
            )
        elif len(searches) >= used.searches_left(run.limits):
            refused.append(f"search {search.query[:120]!r}: no searches left (max_searches {run.limits.searches})")
        else:
            searches.append((search.sub_question, search.query))
    return {"reads": reads, "searches": searches, "refused": refused}


def _unreadable(run: Gathering, asked: str, reads: list[str], pages_left: int) -> str:
    """Why the run will not read `asked` ('' when it will)."""
    source = run.record.sources.get(asked)
    if source is None:
        return "not a source this run's searches found (a read names a source id, like S1)"
    if asked in reads or run.journal.attempts.get(f"fetch:{asked}"):
        return "read already"
    if len(reads) >= pages_left:
        return f"no page reads left (max_pages {run.limits.pages})"
    try:
        run_guard(run.ws.services).check_host(urlsplit(source["url"]).hostname or "")
    except NetRefused as exc:
        return str(exc)
    return ""


def phase_data(phase: str, answer: Any) -> dict[str, Any]:
    a = answer.answer
    return {"phase": phase, "tokens_in": a.tokens_in, "tokens_out": a.tokens_out, "problem": a.problem or None}


def close_phase(journal: Journal, opened: Any, answer: Any, data: dict[str, Any], line: str, **columns: Any) -> None:
    """A phase's step closed: done with its value, or failed with the reason; its replies as its output."""
    a = answer.answer
    verdict = "done" if a.value is not None else "failed"
    output = "\n---\n".join(a.replies)
    journal.close(
        opened, verdict, data, detail=line, output=output, tokens_in=a.tokens_in, tokens_out=a.tokens_out, **columns
    )
