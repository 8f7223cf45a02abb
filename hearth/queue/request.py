"""The queue's request: the pydantic model (version 1) and the legacy command-center shape, and the
JSON Schema generated from them (committed under queue-spec/).

Two shapes are accepted (queue-spec/README.md):

- version 1: the fields of `Request`; unknown fields are refused; `id` equals the file name;
- legacy: what the command center drops today, `{"name", "model", "prompt", ...}` (`LegacyRequest`),
  with the id as the file name, mapped onto `Request` field by field (hearth/queue/intake.py).

This module is the shape a request must take and nothing else; reading one (its untrusted bytes,
either shape, the one-line refusal) is hearth/queue/intake.py.

`python -m hearth.queue.directory --schema` prints the JSON Schema generated from `Request`.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)

from hearth.ids import ID_PATTERN
from hearth.limits import MAX_ITERATIONS, MAX_RUN_TOKENS
from hearth.queue.longspec import Marathon, Research, Swarm

MAX_GOAL_CHARS = 100_000
SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"

MODEL_PATTERN = r"^([A-Za-z0-9][A-Za-z0-9._:/-]{0,199})?$"  # empty (like `auto`): the router picks
TOOL_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
HOST_PATTERN = r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$"
CREDENTIAL_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"  # the credential store's names
PRINTABLE_PATTERN = r"^[^\x00-\x1f\x7f]*$"
EXCLUSIVE = ("continues", "marathon", "swarm", "research", "evolve", "heartbeat")  # one way to run a request, at most

# What a pattern allows, in words, for the error a sender reads.
RULES = {
    "id": "use 1-64 characters from A-Z a-z 0-9 . _ - starting with a letter or digit",
    "agent_name": "use 1-64 characters from A-Z a-z 0-9 . _ - starting with a letter or digit",
    "model": "use a model name such as qwen2.5-coder:7b (letters, digits and . _ : / -), or auto",
    "allowed_tools": "tool names are lowercase letters, digits and _",
    "credentials": "use 1-64 characters from A-Z a-z 0-9 . _ - starting with a letter",
    "egress": "use a host name or *.domain (its subdomains), such as api.github.com; no scheme, port or path",
    "requested_by": "control characters are not allowed",
    "continues": "name a run id (1-64 characters from A-Z a-z 0-9 . _ - starting with a letter or digit)",
    "child_of": "name a run id (1-64 characters from A-Z a-z 0-9 . _ - starting with a letter or digit)",
    "marathon": "control characters are not allowed",
    "label": "control characters are not allowed",
}

DURATION_PATTERN = r"^[0-9]{1,7}(\.[0-9]{1,3})?[smhd]?$"
Name = Annotated[str, Field(pattern=ID_PATTERN, max_length=64)]
ToolName = Annotated[str, Field(pattern=TOOL_PATTERN, max_length=64)]
Host = Annotated[str, Field(pattern=HOST_PATTERN, max_length=253)]
CredentialName = Annotated[str, Field(pattern=CREDENTIAL_PATTERN, max_length=64)]
ApiSource = Annotated[str, Field(pattern=r"^api:[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", max_length=68)]  # a /v1 key
ChannelSource = Annotated[str, Field(pattern=r"^channel:(telegram|email)$", max_length=16)]  # a chat channel


def _source(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """One refusal for a source that is neither a word of the list, api:NAME nor channel:NAME (not one per part)."""
    try:
        return handler(value)
    except ValidationError:
        words = get_args(get_args(Request.model_fields["source"].annotation)[0])
        shown = json.dumps(value, ensure_ascii=False, default=str)[:80]
        raise ValueError(
            f"should be {', '.join(repr(w) for w in words)}, 'api:NAME' or 'channel:telegram|email', got {shown}"
        ) from None


class Request(BaseModel):
    """A request to run one goal, version 1 (the `version` field)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, title="hearth queue request")

    version: Literal[1] = Field(1, description="The request format version; this is version 1.")
    id: Name = Field(description="Names the request and its run; equals the file name without .json.")
    goal: str = Field(min_length=1, max_length=MAX_GOAL_CHARS, description="What the agent should do.")
    model: Annotated[str, Field(pattern=MODEL_PATTERN, max_length=200)] | None = Field(
        None,
        description="The Ollama model, or `auto` (also: empty or absent) for the agent profile's, else the "
        "router's choice ($HEARTH_CONFIG_DIR/router.toml), else the host's default (HEARTH_MODEL).",
    )
    agent_name: Name = Field("default", description="The agent profile that runs the goal.")
    label: Annotated[str, Field(max_length=128, pattern=PRINTABLE_PATTERN)] | None = Field(
        None,
        description="The operator's name for the run, kept in the audit and shown with it. When agent_name is "
        "`default` and a profile of this name exists, that profile runs the goal.",
    )
    mode: Literal["plan", "auto", "bypass"] | None = Field(
        None,
        description="plan: read-only tools; auto: edits run, dangerous tools need approval; "
        "bypass: every allowed tool runs (still sandboxed). Absent means the agent "
        "profile's mode, else the host's (HEARTH_MODE, else auto).",
    )
    allowed_tools: list[ToolName] | None = Field(
        None,
        max_length=64,
        description="The only tools the run may use; absent means the tool set of the agent profile (its "
        "`tool_set`: the common chores, or `all`), else the host's (HEARTH_TOOL_SET, else common).",
    )
    max_iterations: Annotated[int, Field(ge=1, le=MAX_ITERATIONS)] | None = Field(
        None,
        description="Model turns before the run stops. Absent means the agent profile's cap, "
        "else the host's (HEARTH_MAX_ITERATIONS, else 12).",
    )
    timeout_s: int = Field(
        3600,
        ge=1,
        le=86_400,
        description="Seconds the run may work before it stops (time it waits for a person is not counted).",
    )
    approval_wait: Annotated[str, Field(pattern=DURATION_PATTERN, max_length=16)] | None = Field(
        None,
        description="How long an approval may wait for a person before it is a deny: seconds, or a number "
        "with s, m, h or d (at most 7 days). Absent means the agent profile's, else the host's "
        "(HEARTH_APPROVAL_WAIT, else 12h).",
    )
    max_tokens: Annotated[int, Field(ge=1, le=MAX_RUN_TOKENS)] | None = Field(
        None,
        description="Tokens (prompt and reply, as Ollama counts them) the run may spend before it stops as "
        "budget_exceeded. Absent means the agent profile's cap, else none (the daily budgets still apply).",
    )
    credentials: list[CredentialName] | None = Field(
        None, max_length=32, description="Credential names the run may use (cred:NAME); never values."
    )
    egress: list[Host] | None = Field(
        None, max_length=64, description="Hosts the run's network tools may reach; absent means any public host."
    )
    network: bool | None = Field(
        None,
        description="Give the run's commands network, only through hearth's guarded proxy (public "
        "addresses, the egress list); absent means the agent profile's setting, else none.",
    )
    think: bool | Literal["low", "medium", "high"] | None = Field(
        None,
        description="A thinking model's effort (Ollama's `think`): true, false, or low, medium, high for the "
        "models that take levels. Absent means the agent profile's, else not sent (the model's default).",
    )
    web_extract: bool | None = Field(
        None,
        description="web_fetch answers from the page through a separate model call with no tools, so the agent "
        "never reads the raw page. Absent means the agent profile's, else on.",
    )
    source: Annotated[
        Literal["command-center", "cli", "timer", "self-test", "eval"] | ApiSource | ChannelSource,
        WrapValidator(_source),
    ] = Field(
        "cli",
        description="Who dropped the request (api:NAME: a call with the `/v1` key NAME; channel:NAME: a chat).",
    )
    requested_by: Annotated[str, Field(max_length=128, pattern=PRINTABLE_PATTERN)] = Field(
        "", description="The person or job that asked, for the audit."
    )
    created_at: AwareDatetime | None = Field(None, description="When it was asked, with a time zone.")
    evolve: bool = Field(False, description="Run the self-evolution flow instead of a plain goal.")
    continues: Name | None = Field(
        None,
        description="A follow-up of this earlier run: in its workspace, with its goal, summary and last "
        "messages before the goal.",
    )
    marathon: Marathon | None = Field(None, description="Run the goal in legs until it is really done.")
    swarm: Swarm | None = Field(None, description="Split the goal into sub-goals run side by side, then merge.")
    research: Research | None = Field(
        None,
        description="Research the goal as a question: a plan a person approves, recorded searches and page reads, "
        "evidence checked word for word, a report whose citations are validated (docs/research.md).",
    )
    heartbeat: Literal["upkeep", "strategic-review"] | None = Field(
        None,
        description="A role's heartbeat: one turn that continues the role's heartbeat conversation in its "
        "home, the goal its upkeep or strategic-review prompt (docs/roles.md); agent_name names the role.",
    )
    child_of: Name | None = Field(
        None, description="The swarm this request is a sub-goal of (hearth sets it when a swarm queues its children)."
    )
    worker: Name | None = Field(
        None,
        description="On a hub of several boxes (HEARTH_LAUNCHER=celery): the label or name of the worker that "
        "must run it; absent means any worker that has its model. A single box ignores it.",
    )

    @model_validator(mode="after")
    def _one_way_to_run(self) -> Request:
        given = [name for name in EXCLUSIVE if getattr(self, name) not in (None, False)]
        if len(given) > 1:
            raise ValueError(
                f"{' and '.join(given)} cannot be combined: a request is at most one of {', '.join(EXCLUSIVE)}"
            )
        return self

    @field_validator("created_at", mode="before")
    @classmethod
    def _parse_iso_text(cls, value: Any) -> Any:
        """Strict, yet `model_validate(json.loads(file))` works: ISO text is the JSON form of a time."""
        if not isinstance(value, str):
            return value
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError("is not an ISO 8601 date-time such as 2026-01-31T09:30:00Z") from None
        if moment.tzinfo is None:
            raise ValueError("has no time zone; add one, such as Z or +01:00")
        return moment

    @field_validator("goal")
    @classmethod
    def _goal_says_something(cls, goal: str) -> str:
        if not goal.strip():
            raise ValueError("is blank; say what the agent should do")
        if "\x00" in goal:  # refused here, not discovered by a tool or the audit at run time
            raise ValueError(f"contains a NUL character (at position {goal.index(chr(0))})")
        return goal


class LegacyRequest(BaseModel):
    """The shape the command center drops today; the id is the file name."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, title="hearth legacy command-center request")

    prompt: str = Field(description="The goal.")
    name: str = Field("", description="A label; a profile of that name runs the goal, else the default profile.")
    model: str = Field("", description="The model; empty means the host's default.")
    mode: str = Field("", description="plan, auto or bypass; empty means auto.")
    creds: str = Field("", description="Comma-separated credential names; empty means none.")
    tools: str = Field("", description="Comma-separated tool names; empty means every tool.")
    allowed_hosts: str = Field("", description="Comma-separated hosts; empty means any public host.")
    swarm: bool = Field(False, description="true: a swarm with the defaults (max_workers 4).")
    marathon: bool = Field(False, description="true: a marathon with the defaults (max_legs 5, no check).")
    checkin: bool = Field(False, description="Not supported in this version: true is refused.")
    evolve: bool = Field(False, description="Run the self-evolution flow.")
    grow: bool = Field(False, description="Not supported in this version: true is refused.")


def request_schema(model: type[BaseModel] = Request) -> dict[str, Any]:
    """The JSON Schema (2020-12) of a request shape, as committed under queue-spec/."""
    name = "request" if model is Request else "legacy-request"
    return {"$schema": SCHEMA_DRAFT, "$id": f"urn:hearth:queue:{name}:1", **model.model_json_schema()}


def schema_text(model: type[BaseModel] = Request) -> str:
    return json.dumps(request_schema(model), indent=2, ensure_ascii=False) + "\n"
