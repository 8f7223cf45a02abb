"""Auto-recall: what the knowledge base and memory hold about a goal, as the first message's preface.

The lessons and chunks that best match the goal (global ones and the agent's own) are listed with
their sources, within a character budget, lessons first: they are short and were written to be
reused. The result goes in front of the goal in the first user message, never into the system
prompt, which stays byte-stable so Ollama can reuse its cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.knowledge.store import Hit, KnowledgeStore, Lesson, scopes_for

RECALL_CHARS = 2000
ITEM_CHARS = 700
HEADER = (
    "## Recalled from earlier runs\n"
    "From hearth's knowledge base and memory, matched to this goal; it may be out of date, so check "
    "before relying on it."
)


@dataclass
class Recalled:
    """The preface ("" when nothing relevant is stored) and what it holds, for the audit."""

    text: str = ""
    items: list[dict[str, Any]] = field(default_factory=list)


def recall_context(store: KnowledgeStore, goal: str, agent_name: str, budget: int = RECALL_CHARS) -> str:
    """The preface for the first user message, or "" when nothing relevant is stored."""
    return recall_for(store, goal, agent_name, budget).text


def recall_for(
    store: KnowledgeStore,
    goal: str,
    agent_name: str,
    budget: int = RECALL_CHARS,
    wrap: Callable[[str, str], str] | None = None,
) -> Recalled:
    """The preface and, for each line of it, the lesson or chunk id, its score and how it was found.
    `wrap(text, source)` envelopes a chunk of a page that came from the web (agent/context/envelope.py):
    such a line is kept whole or left out, never cut, so its envelope always closes."""
    if budget <= 0:
        return Recalled()
    scopes = scopes_for(agent_name)
    lessons = store.recall(goal, scopes=scopes, k=5)
    chunks = store.search(goal, scopes=scopes, k=8)
    lines = _fit([*map(_lesson_line, lessons), *(_chunk_line(h, wrap) for h in chunks)], budget - len(HEADER))
    if not lines:
        return Recalled()
    items = [{"lesson": x.id, "score": round(x.score, 5), "way": x.way} for x in lessons]
    items += [{"chunk": h.chunk_id, "score": round(h.score, 5), "way": h.way} for h in chunks]
    return Recalled("\n".join([HEADER, *lines]), items[: len(lines)])


def _lesson_line(lesson: Lesson) -> str:
    tags = f" [tags: {lesson.tags}]" if lesson.tags else ""
    return f"- Lesson #{lesson.id} ({lesson.created_at[:10]}){tags}: {_one_line(lesson.lesson)}"


def _chunk_line(hit: Hit, wrap: Callable[[str, str], str] | None = None) -> str:
    line = f'From "{hit.title}" (source: {hit.source}): {_one_line(hit.text)}'
    from_web = str(hit.source).startswith(("http://", "https://"))
    return "- " + (wrap(line, hit.source) if wrap is not None and from_web else line)


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= ITEM_CHARS else flat[: ITEM_CHARS - 1] + "…"


def _fit(lines: list[str], budget: int) -> list[str]:
    """Whole lines while they fit; the first that does not is cut if a useful part fits."""
    kept, used = [], 0
    for line in lines:
        room = budget - used - 1
        if len(line) <= room:
            kept.append(line)
            used += len(line) + 1
        elif room >= 120 and "\n" not in line:  # an enveloped line (several lines) is never cut
            kept.append(line[: room - 1] + "…")
            break
        else:
            break
    return kept
