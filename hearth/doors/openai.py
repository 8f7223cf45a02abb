"""A chat completion as a hearth run: the OpenAI request mapped onto a queued request, and the
run's progress and answer shaped as OpenAI's responses (hearth/web/routes/v1.py serves them).

    model               a profile name, or `auto` (the default profile, the router picks the model)
    messages            the last user message is the goal; the earlier ones are the conversation
    conversation        the id hearth returns in X-Hearth-Conversation; a client sends it back in
                        that header, or as Open WebUI does (X-OpenWebUI-Chat-Id, sent with
                        ENABLE_FORWARD_USER_INFO_HEADERS) or as a LibreChat endpoint can be told
                        to (`headers: X-Conversation-Id: "{{LIBRECHAT_BODY_CONVERSATIONID}}"`), or
                        in `metadata.conversation_id`; with none, an earlier assistant message
                        that carries a run's answer names the conversation. Its latest run is
                        continued (`continues`): the same workspace and prompt. While that run
                        still works (queued, running, waiting for a person), the turn is a steer
                        of it instead (hearth/dispatch/steer.py, from `api:KEY[/user]`, if the
                        key's user may approve in its profile), and the call follows that run
    user                who asked, kept in the run's requested_by after the key (LibreChat sends it)
    tools               refused: the tools are hearth's, the profile's

Every run is queued through hearth.queue.submit with source `api:KEY`, under its profile's tools,
mode, walls and approvals; a key with a budget caps the run's own tokens to what it reserved of
what is left today. A conversation is the key's: found by the key's id, never its name, and
continued only under a profile that key may use.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hearth.audit import keys as key_rows
from hearth.audit.store import AuditStore, new_run_id
from hearth.doors import keys
from hearth.doors.keys import Key, KeyRefused
from hearth.errors import UsageError
from hearth.settings import Settings
from hearth.users.access import Forbidden, User

AUTO = "auto"
CONVERSATION_HEADERS = ("x-hearth-conversation", "x-openwebui-chat-id", "x-conversation-id")
CONVERSATION_CHARS = 128
BUSY = "run {} of this conversation is still working and this turn was not given to it as a steer"


class Refused(KeyRefused):
    """Any `/v1` refusal: status, OpenAI code and type, one-line message."""

    def __init__(self, status: int, code: str, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(status, code, message)
        self.kind = kind


def error_body(exc: KeyRefused) -> dict[str, Any]:
    """OpenAI's error shape; the type follows the status as OpenAI's does."""
    kind = getattr(exc, "kind", None) or {401: "authentication_error", 403: "permission_error"}.get(
        exc.status, "rate_limit_error" if exc.status == 429 else "invalid_request_error"
    )
    if exc.code == "insufficient_quota":
        kind = "insufficient_quota"
    return {"error": {"message": str(exc), "type": kind, "code": exc.code, "param": None}}


class ChatBody(BaseModel):
    """What hearth reads of a chat completion request; the sampling fields a client sends are ignored
    (the profile decides how the model is asked)."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=200)
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool = False
    tools: list[Any] | None = None
    functions: list[Any] | None = None
    user: str | None = Field(None, max_length=128)
    metadata: dict[str, Any] | None = None
    stream_options: dict[str, Any] | None = None


def parse(raw: Any) -> ChatBody:
    try:
        body = ChatBody.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "body"
        raise Refused(400, "invalid_request", f"{where}: {first.get('msg', 'is not valid')}") from None
    if body.tools or body.functions:
        raise Refused(
            400,
            "tools_not_supported",
            "tools are refused: hearth runs its profile's own tools (sandboxed, audited); send only messages",
        )
    return body


def text_of(message: dict[str, Any]) -> str:
    """A message's text: a string, or the text parts of a list (images are not read)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def goal_of(body: ChatBody) -> str:
    users = [m for m in body.messages if m.get("role") == "user" and text_of(m).strip()]
    if not users:
        raise Refused(400, "invalid_request", "messages: no user message with text; the last one is the goal")
    return text_of(users[-1])


def profile_of(model: str, settings: Settings) -> str:
    """The profile a `model` names (`auto`: the default one)."""
    from hearth.run.profiles import profile_names

    if model == AUTO:
        return "default"
    names = profile_names(settings.config_dir)
    if model not in names:
        raise Refused(
            404,
            "model_not_found",
            f"no model {model!r}: hearth's models are its profiles ({', '.join(names)}) and auto",
        )
    return model


def models(settings: Settings, key: Key) -> list[dict[str, Any]]:
    """GET /v1/models: each profile this key may use, and `auto`, with the model each resolves to."""
    from hearth.run.profiles import load_profile, profile_names
    from hearth.run.router import load_router

    router_default = load_router(settings.config_dir).default or settings.model
    listed = []
    for name in [AUTO, *profile_names(settings.config_dir)]:
        agent = profile_of(name, settings)
        if not key.may_use(agent):
            continue
        profile = load_profile(settings.config_dir, agent)
        resolves = (profile.model or "") if name != AUTO else ""
        listed.append(
            {
                "id": name,
                "object": "model",
                "created": 0,
                "owned_by": "hearth",
                "hearth": {
                    "agent": agent,
                    "model": resolves or router_default,
                    "by": "profile" if resolves else "router rules, else the default",
                },
            }
        )
    return listed


@dataclass(frozen=True)
class Started:
    run_id: str
    conversation: str
    continues: str | None
    key: Key
    model: str
    created: int
    steered: bool = False  # the turn was a steer of the conversation's working run, `run_id`


def identify(settings: Settings, authorization: str) -> Key:
    """The caller's key (KeyRefused 401 without a right one), before its body is read."""
    settings.writable_state_dir()
    with AuditStore(settings.audit_path) as audit:
        return keys.identify(audit, authorization)


def start(settings: Settings, key: Key, body: ChatBody, headers: dict[str, str]) -> Started:
    """Check the key may, then steer the conversation's run while it works, else queue a run (a
    follow-up when the conversation has one) and count the call."""
    with AuditStore(settings.audit_path) as audit:
        agent = profile_of(body.model, settings)
        keys.admit(key, agent)
        user = keys.user_of(audit, key, agent)
        conversation, earlier = _conversation(audit, key, body, headers)
        if earlier is not None:
            _may_continue(audit, key, earlier)
            if _working(settings, audit, earlier) and _steered(settings, user, earlier, body, key):
                return Started(earlier, conversation, None, key, body.model, int(time.time()), steered=True)
        run_id = new_run_id()
        conversation = conversation or f"conv-{run_id}"
        own = _own_cap(settings, agent)
        cap = keys.record(audit, key, run_id, conversation, own)
        _queue(settings, audit, user, _request(run_id, body, key, agent, cap, earlier))
    return Started(run_id, conversation, earlier, key, body.model, int(time.time()))


def _own_cap(settings: Settings, agent: str) -> int:
    from hearth.run.profiles import load_profile

    return load_profile(settings.config_dir, agent).max_tokens or 0


def _queue(settings: Settings, audit: AuditStore, user: User, obj: dict[str, Any]) -> None:
    """Queue the run as its key's user; a refusal forgets the call (no run: no turn to continue)."""
    from hearth.dispatch.launchers import heal
    from hearth.queue.intake import RequestRefused, build_request
    from hearth.queue.submit import SubmitRefused
    from hearth.users.launch import submit_as

    try:
        request = build_request(obj, file_id=None).request
        submit_as(request, settings, user, requested_by=obj["requested_by"], heal=heal)
    except Forbidden as exc:
        key_rows.forget_call(audit, obj["id"])
        raise Refused(403, "permission_denied", str(exc), "permission_error") from None
    except (RequestRefused, SubmitRefused) as exc:
        key_rows.forget_call(audit, obj["id"])
        status = 503 if getattr(exc, "kind", "") == "queue" else 400
        raise Refused(
            status,
            "not_queued",
            f"the run was not queued: {exc}",
            "server_error" if status == 503 else "invalid_request_error",
        ) from None


def _working(settings: Settings, audit: AuditStore, run_id: str) -> bool:
    """Whether the conversation's run has not ended: its row says so, or it waits in the queue."""
    from hearth.queue.directory import Queue
    from hearth.run.state import FINAL_STATES

    run = audit.run(run_id)
    if run is not None:
        return run["status"] not in FINAL_STATES
    queue = Queue(settings.queue_dir)
    return (queue.root / f"{run_id}.json").exists() or queue.known(run_id) == "claimed"


def _steered(settings: Settings, user: User, run_id: str, body: ChatBody, key: Key) -> bool:
    """The turn given to the working run as a steer (hearth/dispatch/steer.py); False when the run
    ended meanwhile (the turn is then its follow-up). Refused: no right, too long, too many."""
    from hearth.dispatch.steer import SteerRefused, give_as

    try:
        give_as(settings, run_id, user, goal_of(body), by=_asker(key, body))
    except SteerRefused as exc:
        if exc.status != "full":
            return False
        raise Refused(429, "steers_waiting", str(exc), "rate_limit_error") from None
    except Forbidden as exc:
        raise Refused(403, "permission_denied", f"{BUSY.format(run_id)}: {exc}", "permission_error") from None
    except UsageError as exc:
        raise Refused(400, "invalid_request", f"{BUSY.format(run_id)}: {exc}") from None
    return True


def _may_continue(audit: AuditStore, key: Key, earlier: str) -> None:
    """A conversation's turn runs under its first run's profile: KeyRefused 403 when this key may
    not use it (the key was made narrower than the conversation, or by another name's owner)."""
    run = audit.run(earlier)
    profile = (run or {}).get("agent_name") or "default"
    if not key.may_use(profile):
        raise Refused(
            403,
            "model_not_allowed",
            f"key {key.name!r} may not continue this conversation: its runs use profile {profile!r}, "
            f"which this key may not use (it may use: {', '.join(key.agents)})",
            "permission_error",
        )


def _asker(key: Key, body: ChatBody) -> str:
    return key.source + (f"/{body.user}" if body.user else "")


def _request(run_id: str, body: ChatBody, key: Key, agent: str, cap: int | None, earlier: str | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"id": run_id, "goal": goal_of(body), "source": key.source, "requested_by": _asker(key, body)}
    obj["agent_name"] = agent
    if body.model == AUTO:
        obj["model"] = AUTO
    if earlier:
        obj["continues"] = earlier
    if cap is not None:  # what the key's budget reserved for this run
        obj["max_tokens"] = cap
    return obj


def _conversation(audit: AuditStore, key: Key, body: ChatBody, headers: dict[str, str]) -> tuple[str, str | None]:
    """(the conversation id, its latest run) as the client names it, else by its earlier answer."""
    named = next((headers[h] for h in CONVERSATION_HEADERS if headers.get(h)), "")
    meta = body.metadata or {}
    named = named or str(meta.get("conversation_id") or meta.get("chat_id") or "")
    named = "".join(c for c in named if c.isprintable())[:CONVERSATION_CHARS]
    if named:
        return named, keys.latest_run(audit, key, named)
    answers = [text_of(m) for m in body.messages if m.get("role") == "assistant" and text_of(m).strip()]
    if not answers:
        return "", None
    for row in keys.answered(audit, key):
        if row["summary"].strip() in answers[-1]:
            return row["conversation"], keys.latest_run(audit, key, row["conversation"])
    return "", None


# -- the answers ------------------------------------------------------------------------------
def completion(started: Started, content: str, usage: dict[str, int]) -> dict[str, Any]:
    """The non-streaming answer: one choice, the run's answer, its tokens."""
    return {
        "id": completion_id(started),
        "object": "chat.completion",
        "created": started.created,
        "model": started.model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": usage,
        "hearth": {"run_id": started.run_id, "conversation": started.conversation, "steered": started.steered},
    }


def steered_line(started: Started) -> str:
    return (
        f"(given to run {started.run_id}, which is still working on this conversation: its model reads it "
        "after its next tool result; its answer follows)"
    )


def chunk(started: Started, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": completion_id(started),
        "object": "chat.completion.chunk",
        "created": started.created,
        "model": started.model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def completion_id(started: Started) -> str:
    return f"chatcmpl-{started.run_id}"
