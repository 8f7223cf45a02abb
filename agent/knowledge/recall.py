"""Auto-recall: what the knowledge base and memory hold about a goal, as the first message's preface.

The lessons and chunks that best match the goal (global ones and the agent's own) are listed with
their sources, within a character budget, lessons first: they are short and were written to be
reused. The result goes in front of the goal in the first user message, never into the system
prompt, which stays byte-stable so Ollama can reuse its cache.
"""

from __future__ import annotations

from agent.knowledge.store import Hit, KnowledgeStore, Lesson, scopes_for

RECALL_CHARS = 2000
ITEM_CHARS = 700
HEADER = (
    "## Recalled from earlier runs\n"
    "From hearth's knowledge base and memory, matched to this goal; it may be out of date, so check "
    "before relying on it."
)


def recall_context(store: KnowledgeStore, goal: str, agent_name: str, budget: int = RECALL_CHARS) -> str:
    """The preface for the first user message, or "" when nothing relevant is stored."""
    if budget <= 0:
        return ""
    scopes = scopes_for(agent_name)
    lessons = [_lesson_line(item) for item in store.recall(goal, scopes=scopes, k=5)]
    chunks = [_chunk_line(hit) for hit in store.search(goal, scopes=scopes, k=8)]
    lines = _fit([*lessons, *chunks], budget - len(HEADER))
    return "\n".join([HEADER, *lines]) if lines else ""


def _lesson_line(lesson: Lesson) -> str:
    tags = f" [tags: {lesson.tags}]" if lesson.tags else ""
    return f"- Lesson #{lesson.id} ({lesson.created_at[:10]}){tags}: {_one_line(lesson.lesson)}"


def _chunk_line(hit: Hit) -> str:
    return f'- From "{hit.title}" (source: {hit.source}): {_one_line(hit.text)}'


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
        elif room >= 120:
            kept.append(line[: room - 1] + "…")
            break
        else:
            break
    return kept
