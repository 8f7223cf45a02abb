"""The synthesis: claims from the evidence, each claim's citations checked by the run, not the model.

A claim is kept `cited` only when all of these hold; otherwise it is kept as a `caveat`, with the
reason, and the report shows it without any citation:

    it cites at least one evidence id, and every id it cites is evidence this run kept
    (an id it made up, a URL or a source's name in place of an id, is none)
    every span it puts in quotation marks occurs word for word in what it cites: one of the cited
    excerpts, or the snapshot of a page a cited excerpt comes from
    every web address it writes is the address of a page a cited excerpt comes from

The sources a report lists are the pages its cited evidence comes from, from the record: never a
URL the model wrote.
"""

from __future__ import annotations

import json
from typing import Any

from hearth.audit.store import Rows
from hearth.research import shown
from hearth.research.gathering import Gathering, close_phase, phase_data
from hearth.research.phases import PHASES, Claim, Synthesis, ask
from hearth.research.record import Record
from hearth.research.text import canonical, flat, quotations, urls_in, verbatim


def synthesise(run: Gathering) -> str:
    """The claims, asked once, judged and kept; '' when they were, else why there are none."""
    kept = run.journal.done("synthesis")
    if kept is not None:
        return f"the synthesis failed: {kept['problem']}" if kept.get("problem") else ""
    refused = run.refused(False)
    if refused:
        return f"no synthesis: {refused}"
    run.state.update("research", f"writing the report from {len(run.record.evidence)} pieces of evidence")
    opened = run.journal.open("phase", "synthesis", detail="synthesise: claims from the evidence")
    asked = shown.synthesis_question(run.question, run.plan, run.record, run.ws.services.envelope)
    answer = ask(run.model, PHASES["synthesise"], asked)
    value: Synthesis | None = answer.value
    claims = [judged(c, run.record, run.db, len(run.plan.sub_questions)) for c in value.claims] if value else []
    for n, claim in enumerate(claims, 1):
        run.record.keep("claim", {"n": n, **claim})
    caveats = sum(1 for c in claims if c["verdict"] == "caveat")
    line = f"synthesise: {len(claims) - caveats} claims cited, {caveats} caveats"
    if value is None:
        line = f"synthesise failed: {answer.answer.problem}"
    close_phase(run.journal, opened, answer, phase_data("synthesise", answer), line)
    return "" if value is not None else f"the synthesis failed: {answer.answer.problem}"


def judged(claim: Claim, record: Record, db: Rows, sub_questions: int) -> dict[str, Any]:
    """The claim as the record keeps it: its citations checked (see the module docstring)."""
    cited = [c.strip() for c in claim.evidence]
    reason = _unsupported(claim.text, cited, record, db)
    sub_question = claim.sub_question if 1 <= claim.sub_question <= sub_questions else 0
    return {
        "sub_question": sub_question,
        "text": claim.text,
        "evidence": json.dumps(cited),
        "verdict": "caveat" if reason else "cited",
        "reason": reason,
    }


def _unsupported(text: str, cited: list[str], record: Record, db: Rows) -> str:
    """Why the claim may not be shown with its citations ('' when it may)."""
    if not cited:
        return "it cites no evidence"
    kept = {e["id"]: e for e in record.evidence}
    unknown = [c for c in cited if c not in kept]
    if unknown:
        shown = ", ".join(c[:80] for c in unknown[:3])
        return f"it cites {shown}, which {'is' if len(unknown) == 1 else 'are'} not evidence this run kept"
    pieces = [kept[c] for c in cited]
    for quoted in quotations(text):
        if not any(_holds(quoted, piece, record, db) for piece in pieces):
            return f'it quotes words that are in none of the pages it cites: "{quoted[:160]}"'
    pages = {canonical(record.sources[p["source_id"]]["url"]) for p in pieces if p["source_id"] in record.sources}
    pages |= {canonical(record.snapshots[p["source_id"]]["url"]) for p in pieces if p["source_id"] in record.snapshots}
    for url in urls_in(text):
        if canonical(url if "://" in url else f"https://{url}") not in pages:
            return f"it names a web address none of its evidence comes from: {url[:160]}"
    return ""


def _holds(quoted: str, piece: dict[str, Any], record: Record, db: Rows) -> bool:
    return verbatim(quoted, flat(piece["excerpt"])) is not None or (
        verbatim(quoted, record.flat_text(db, piece["source_id"])) is not None
    )
