"""Model calls with no tools that must answer JSON: the marathon's judge and the swarm's planner.

`ask_json(model, system, user, read)` sends one chat turn with no tools, reads the first JSON
value in the reply (leniently: agent/parsing/json_repair.py, the one JSON repair in hearth) and
validates it with `read` (pydantic). With `schema`, the server is asked to hold the reply to that
JSON schema (Ollama's `format`, OpenAI's `response_format`); the reply is validated all the same. A reply that does not hold a valid value gets one repair:
the question asked again, one user message still, with the unusable answer and what was wrong
(hearth writes no user turn of its own into a conversation); a second bad reply, or a model error, is an `Answer` with no
value and the reason, never an exception: the caller decides what unusable means (a judge: not
done; a planner: the swarm fails with the reason).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from agent.model.reply import ChatModel, ModelError
from agent.parsing.json_repair import loads_lenient

T = TypeVar("T")
MAX_TEXT = 2_000
REPAIR = (
    "{question}\n\nAn earlier answer to this was:\n{reply}\nIt could not be used: {problem}. "
    "Reply again with only the JSON value asked for, nothing before or after it."
)


@dataclass
class Answer(Generic[T]):
    value: T | None
    problem: str = ""  # why there is no value
    tokens_in: int = 0
    tokens_out: int = 0
    replies: list[str] = field(default_factory=list)


class Verdict(BaseModel):
    """The judge's answer between two legs of a marathon."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    done: StrictBool
    reason: str = Field(min_length=1, max_length=MAX_TEXT)
    next: str = Field(max_length=MAX_TEXT)


def ask_json(
    model: ChatModel, system: str, user: str, read: Callable[[Any], T], *, schema: dict[str, Any] | None = None
) -> Answer[T]:
    """One question, at most one repair: the validated value, or why there is none."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    answer: Answer[T] = Answer(None)
    for _attempt in range(2):
        try:
            reply = model.chat(messages, [], schema) if schema is not None else model.chat(messages, [])
        except ModelError as exc:
            answer.problem = f"the model call failed: {exc}"
            return answer
        answer.tokens_in += reply.tokens_in
        answer.tokens_out += reply.tokens_out
        answer.replies.append(reply.content)
        answer.value, answer.problem = _read(reply.content, read)
        if answer.value is not None:
            return answer
        repair = REPAIR.format(question=user, reply=reply.content[:MAX_TEXT], problem=answer.problem)
        messages = [messages[0], {"role": "user", "content": repair}]
    return answer


def _read(text: str, read: Callable[[Any], T]) -> tuple[T | None, str]:
    found = first_json(text)
    if found is None:
        return None, "it holds no JSON value"
    try:
        return read(found), ""
    except ValidationError as exc:
        return None, describe(exc)
    except ValueError as exc:
        return None, str(exc)


def first_json(text: str) -> Any | None:
    """The JSON object or array a reply holds, fences and prose around it ignored; None if none."""
    for start in sorted(i for i in (text.find("{"), text.find("[")) if i >= 0):
        end = text.rfind("}" if text[start] == "{" else "]")
        found = loads_lenient(text[start : end + 1] if end > start else text[start:])
        if found is not None:
            return found
    return None


def describe(error: ValidationError) -> str:
    """The first problem pydantic found, in one line (`done: input should be a valid boolean`)."""
    first = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "the value"
    return f"{where}: {first['msg'][:1].lower()}{first['msg'][1:]}"


def read_verdict(value: Any) -> Verdict:
    return Verdict.model_validate(value)
