"""The extractor alone (agent/context/extractor.py): what it is asked, what it gives back, what it records."""

from __future__ import annotations

from typing import Any

from agent.context.envelope import Envelope, opened
from agent.context.extractor import MAX_PAGE_CHARS, PROMPT, Extractor
from agent.model.scripted import ScriptedModel


def extractor(replies: list[Any]) -> tuple[Extractor, ScriptedModel, list[dict[str, Any]], list[tuple[int, int]]]:
    model = ScriptedModel(replies, tokens=(40, 9))
    steps: list[dict[str, Any]] = []
    spent: list[tuple[int, int]] = []
    made = Extractor(model, Envelope("0123456789abcdef"), steps.append, lambda i, o: spent.append((i, o)))
    return made, model, steps, spent


def test_a_long_page_is_cut_enveloped_and_asked_without_tools_and_only_the_words_come_back() -> None:
    made, model, steps, spent = extractor([{"content": " Maps. ", "tool_calls": [{"function": {"name": "x"}}]}])
    page = "word " * (MAX_PAGE_CHARS // 2)
    assert made("http://a.test/", "what is new?", page) == "Maps."
    [messages] = model.requests
    assert messages[0] == {"role": "system", "content": PROMPT}
    question, envelope = messages[1]["content"].split("\n\n", 1)
    inside = opened(envelope)
    assert question == "Question: what is new?" and inside is not None
    assert inside.endswith(f"(the page is cut at {MAX_PAGE_CHARS} of {len(page)} characters)")
    assert spent == [(40, 9)] and steps[0]["output"] == "Maps." and steps[0]["tokens_in"] == 40


def test_a_failed_extractor_call_is_the_answer_and_a_recorded_step_not_an_error() -> None:
    made, _, steps, spent = extractor([])  # the scripted model has nothing to say: a ModelError
    answer = made("http://a.test/", "q", "page")
    assert answer.startswith("(the extractor could not read the page:") and spent == []
    assert steps[0]["detail"].startswith("the extractor failed:") and steps[0]["data"]["url"] == "http://a.test/"


def test_a_spent_budget_stops_the_extractor_before_its_call() -> None:
    model = ScriptedModel([{"content": "never asked"}], tokens=(40, 9))
    steps: list[dict[str, Any]] = []
    gone = "stopped at the run's token cap of 100 (120 used)"
    made = Extractor(model, Envelope("0123456789abcdef"), steps.append, lambda i, o: None, lambda: gone)
    assert made("http://a.test/", "q", "page") == f"(the page was not read: {gone})"
    assert model.requests == [] and steps[0]["detail"] == f"the extractor did not read http://a.test/: {gone}"
