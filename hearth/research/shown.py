"""What the model is shown in each phase of a research run: the user message of each call.

What came from outside (search results' titles and snippets, a page's text, the excerpts taken
from pages) is shown inside the run's envelope (agent/context/envelope.py), marked as data; the
question, the plan and the counts are the run's own and shown plainly.
"""

from __future__ import annotations

from typing import Any

from agent.context.envelope import Envelope
from hearth.research.gate import Limits, Used
from hearth.research.phases import Plan
from hearth.research.record import Record

MAX_PAGE_CHARS = 24_000  # of a page's snapshot the extractor reads: a 6k-token slice of a small window


def sub_questions(plan: Plan, counts: list[int] | None = None) -> str:
    lines = []
    for n, sub in enumerate(plan.sub_questions, 1):
        have = f" ({counts[n - 1]} pieces of evidence so far)" if counts is not None else ""
        lines.append(f"{n}. {sub.question}{have}")
    return "\n".join(lines)


def plan_question(question: str) -> str:
    return f"## Question\n{question}"


def decide_question(
    question: str, plan: Plan, record: Record, limits: Limits, used: Used, searched: list[str], envelope: Envelope
) -> str:
    counts = record.counts(len(plan.sub_questions))
    unread = [s for sid, s in record.sources.items() if sid not in record.snapshots]
    listing = "\n".join(_source_line(s) for s in unread) or "(none)"
    made = "\n".join(f"- {q}" for q in searched) or "(none)"
    return (
        f"## Question\n{question}\n\n## Sub-questions\n{sub_questions(plan, counts)}\n\n"
        f"## Searches made\n{made}\n\n## Sources found and not read yet\n{envelope.wrap(listing, 'web search results')}\n\n"
        f"## What is left\n{used.searches_left(limits)} searches and {used.pages_left(limits)} page reads; "
        f"a sub-question needs {limits.per_question} pieces of evidence."
    )


def _source_line(source: dict[str, Any]) -> str:
    snippet = f": {source['snippet']}" if source.get("snippet") else ""
    return f"{source['id']} {source.get('title') or '(no title)'} <{source['url']}>{snippet}"


def extract_question(question: str, plan: Plan, url: str, text: str, envelope: Envelope) -> str:
    cut = f"\n(the page is cut at {MAX_PAGE_CHARS} of {len(text)} characters)" if len(text) > MAX_PAGE_CHARS else ""
    return (
        f"## Question\n{question}\n\n## Sub-questions\n{sub_questions(plan)}\n\n"
        f"## The page\n{envelope.wrap(text[:MAX_PAGE_CHARS] + cut, url)}"
    )


def synthesis_question(question: str, plan: Plan, record: Record, envelope: Envelope) -> str:
    items = []
    for e in record.evidence:
        source = record.sources.get(e["source_id"], {})
        items.append(
            f"{e['id']} (sub-question {e['sub_question']}, from {source.get('title') or e['source_id']}): {e['excerpt']}"
        )
    listing = "\n".join(items) or "(no evidence was found)"
    return (
        f"## Question\n{question}\n\n## Sub-questions\n{sub_questions(plan)}\n\n"
        f"## Evidence\n{envelope.wrap(listing, 'excerpts of the pages read')}"
    )
