"""The queue's request: the pydantic model (version 1), the legacy command-center shape, parsing.

A request file is untrusted input. `parse_request(data, name)` turns its bytes into a `Parsed`
request or raises `RequestRefused`, whose text is the one line saying what was wrong; nothing
else in hearth interprets a request's bytes. Two shapes are accepted (queue-spec/README.md):

- version 1: the fields of `Request`; unknown fields are refused; `id` equals the file name;
- legacy: what the command center drops today, `{"name", "model", "prompt", ...}` with the id
  as the file name, mapped onto `Request` field by field (`LEGACY_NAMES`).

`python -m hearth.queue --schema` prints the JSON Schema generated from `Request`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from hearth.longwork import Marathon, Swarm
from hearth.run.goal import MAX_ITERATIONS, MAX_RUN_TOKENS

MAX_BYTES = 1 << 20  # a request is a few hundred bytes; a megabyte is a flood or a mistake
MAX_DEPTH = 8  # a request nests two levels (object -> list -> string)
MAX_GOAL_CHARS = 100_000
MAX_NUMBER_DIGITS = 20  # every number a request holds fits in 6 digits; 5,000 of them is an attack on int()
SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
MODEL_PATTERN = r"^([A-Za-z0-9][A-Za-z0-9._:/-]{0,199})?$"  # empty (like `auto`): the router picks
TOOL_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
HOST_PATTERN = r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$"
CREDENTIAL_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"  # the credential store's names
PRINTABLE_PATTERN = r"^[^\x00-\x1f\x7f]*$"
SOURCES = ("command-center", "cli", "timer", "self-test")
UNSUPPORTED_FLAGS = ("checkin", "grow")
EXCLUSIVE = ("continues", "marathon", "swarm", "evolve")  # one way to run a request, at most

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

Name = Annotated[str, Field(pattern=ID_PATTERN, max_length=64)]
ToolName = Annotated[str, Field(pattern=TOOL_PATTERN, max_length=64)]
Host = Annotated[str, Field(pattern=HOST_PATTERN, max_length=253)]
CredentialName = Annotated[str, Field(pattern=CREDENTIAL_PATTERN, max_length=64)]


class RequestRefused(Exception):
    """A request that must not run; str() is the one-line reason recorded beside it."""


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
        None, max_length=64, description="The only tools the run may use; absent means every tool."
    )
    max_iterations: Annotated[int, Field(ge=1, le=MAX_ITERATIONS)] | None = Field(
        None,
        description="Model turns before the run stops. Absent means the agent profile's cap, "
        "else the host's (HEARTH_MAX_ITERATIONS, else 12).",
    )
    timeout_s: int = Field(3600, ge=1, le=86_400, description="Seconds before the run stops.")
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
    source: Literal["command-center", "cli", "timer", "self-test"] = Field(
        "cli", description="Who dropped the request."
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
    child_of: Name | None = Field(
        None, description="The swarm this request is a sub-goal of (hearth sets it when a swarm queues its children)."
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


# Request field -> legacy field, for mapping and for errors in the sender's own words.
LEGACY_NAMES = {
    "goal": "prompt",
    "label": "name",
    "model": "model",
    "mode": "mode",
    "credentials": "creds",
    "allowed_tools": "tools",
    "egress": "allowed_hosts",
    "evolve": "evolve",
    "id": "file name",
}


@dataclass(frozen=True)
class Parsed:
    request: Request
    shape: str  # "v1" | "legacy"


def parse_request(data: bytes, name: str) -> Parsed:
    """A queue file's bytes and name -> the request; RequestRefused says why not."""
    name = printable(name)
    if not name.endswith(".json"):
        raise RequestRefused("not a .json file; requests are named <id>.json")
    return build_request(load_json(data), file_id=name[: -len(".json")])


def printable(name: str) -> str:
    """A file name as one line of text that JSON, SQLite and a terminal take as it is:
    undecodable bytes and control characters are shown escaped (\\xe9, \\n)."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def load_json(data: bytes) -> dict[str, Any]:
    """Bytes -> a JSON object, refusing floods, bad encodings, duplicate keys and deep nesting."""
    if len(data) > MAX_BYTES:
        raise RequestRefused(f"larger than 1 MiB ({len(data)} bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RequestRefused(f"not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}") from None
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_int=_integer, parse_constant=_no_constant)
    except RecursionError:
        raise RequestRefused(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise RequestRefused(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except ValueError as exc:  # whatever else the decoder trips on is the file's fault, never a crash
        raise RequestRefused(f"not valid JSON: {str(exc)[:120]}") from None
    if _depth(value) > MAX_DEPTH:
        raise RequestRefused(f"nested deeper than {MAX_DEPTH} levels")
    if not isinstance(value, dict):
        raise RequestRefused(f"not a JSON object but {_json_kind(value)}")
    _check_text(value)
    return value


def _integer(digits: str) -> int:
    count = len(digits.lstrip("-"))
    if count > MAX_NUMBER_DIGITS:
        raise RequestRefused(f"a number with {count} digits; no field takes more than {MAX_NUMBER_DIGITS}")
    return int(digits)


def _no_constant(name: str) -> Any:
    raise RequestRefused(f"not valid JSON: {name} is not a JSON number")


def _check_text(value: Any) -> None:
    """Every string (keys too) is text SQLite, a terminal and a tool can take: no NUL, no lone surrogate."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                _check_string(key, f"the key {_show(key)}")
                stack.append((child, key if not where else f"{where}.{key}"))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{n}]") for n, child in enumerate(item))
        elif isinstance(item, str):
            _check_string(item, where or "a string")


def _check_string(text: str, where: str) -> None:
    if "\x00" in text:
        raise RequestRefused(f"{where} contains a NUL character (at position {text.index(chr(0))})")
    bad = next((c for c in text if "\ud800" <= c <= "\udfff"), None)
    if bad is not None:
        raise RequestRefused(f"{where} contains a lone surrogate (\\u{ord(bad):04x}), which is not text")


def build_request(obj: dict[str, Any], *, file_id: str | None) -> Parsed:
    """A JSON object of either shape -> the request. `file_id` is the id the file name gives."""
    if is_legacy(obj):
        return Parsed(from_legacy(obj, file_id or ""), "legacy")
    try:
        request = Request.model_validate_json(json.dumps(obj))
    except ValidationError as exc:
        raise RequestRefused(describe(exc)) from None
    if file_id is not None and request.id != file_id:
        raise RequestRefused(f"id {_show(request.id)} does not match the file name {_show(file_id + '.json')}")
    return Parsed(request, "v1")


def is_legacy(obj: dict[str, Any]) -> bool:
    """The legacy shape is told apart by its `prompt` (version 1 says `goal` and has `version`)."""
    return "prompt" in obj and "goal" not in obj and "version" not in obj


def from_legacy(obj: dict[str, Any], request_id: str) -> Request:
    """Map the command center's shape onto Request; an empty string means the field was not given."""
    try:
        legacy = LegacyRequest.model_validate(obj)
    except ValidationError as exc:
        raise RequestRefused(describe(exc)) from None
    for flag in UNSUPPORTED_FLAGS:
        if getattr(legacy, flag):
            raise RequestRefused(f"{flag} is not supported by this version of hearth")
    mapped: dict[str, Any] = {
        "id": request_id,
        "goal": legacy.prompt,
        "source": "command-center",
        "evolve": legacy.evolve,
        **({"marathon": {}} if legacy.marathon else {}),
        **({"swarm": {}} if legacy.swarm else {}),
    }
    if legacy.name.strip():  # a free-text label; it picks a profile only when one of that name exists
        mapped["label"] = legacy.name.strip()
    for field, value in (("model", legacy.model), ("mode", legacy.mode)):
        if value != "":  # matched exactly: " bypass" and "bypass\n" are not bypass
            mapped[field] = value
    for field, value in (
        ("credentials", legacy.creds),
        ("allowed_tools", legacy.tools),
        ("egress", legacy.allowed_hosts),
    ):
        items = [item.strip() for item in value.split(",") if item.strip()]
        if items:
            mapped[field] = items
    try:
        return Request.model_validate(mapped)
    except ValidationError as exc:
        raise RequestRefused(describe(exc, names=LEGACY_NAMES)) from None


def check_runnable(request: Request, tools: Collection[str]) -> None:
    """What the schema cannot say: the tools it names exist on this host."""
    unknown = [name for name in request.allowed_tools or () if name not in tools]
    if unknown:
        raise RequestRefused(f"allowed_tools names a tool hearth does not have: {_show(unknown[0])}")


def describe(error: ValidationError, names: dict[str, str] | None = None) -> str:
    """The first problem pydantic found, as one line in the sender's field names."""
    # An unknown field explains the rest (a misspelt `goal` is also a missing one): name it first.
    problems = sorted(error.errors(include_url=False), key=lambda p: p["type"] != "extra_forbidden")
    first = problems[0]
    text = _problem(first, names or {})
    extra = len(problems) - 1
    return text + (f" (and {extra} more problem{'s' if extra > 1 else ''})" if extra else "")


def _problem(problem: ErrorDetails, names: dict[str, str]) -> str:
    loc = [str(part) for part in problem["loc"]]
    kind, value = problem["type"], problem.get("input")
    if not loc:  # the request as a whole (fields that exclude each other)
        return problem["msg"].removeprefix("Value error, ")
    field = _field(loc, names)
    if kind == "extra_forbidden":
        return f"unknown field {_show(field if len(loc) > 1 else loc[0])}"
    if kind == "missing":
        return f"missing required field {_show(field)}"
    if kind == "string_pattern_mismatch":
        rule = RULES.get(loc[0], "it has characters outside the allowed set")
        return f"{field} {_show(value)} is not allowed: {rule}"
    message = problem["msg"].removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    if kind == "value_error":
        return f"{field} {message}"
    return f"{field}: {message}, got {_show(value)}"


def _field(loc: list[str], names: dict[str, str]) -> str:
    if names:
        return names.get(loc[0], loc[0])  # legacy lists were one comma-separated string
    return loc[0] + "".join(f"[{part}]" for part in loc[1:])


def _show(value: Any, limit: int = 60) -> str:
    """A value as the sender wrote it (JSON), cut to `limit` characters, quotes kept; a cut one
    says how long it was."""
    original = value
    if isinstance(value, str) and len(value) > limit:
        value = value[: limit - 1] + "…"
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > limit + 2:
        text = text[: limit - 1] + "…"
    elif value is original:
        return text
    if isinstance(original, str | list | dict):
        text += f" ({len(original)} {'characters' if isinstance(original, str) else 'items'})"
    return text


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise RequestRefused(f"duplicate key {_show(key)}")
        seen[key] = value
    return seen


def _depth(value: Any) -> int:
    """Nesting depth without recursion (a hostile file must not exhaust the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def _json_kind(value: Any) -> str:
    kinds = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def request_schema(model: type[BaseModel] = Request) -> dict[str, Any]:
    """The JSON Schema (2020-12) of a request shape, as committed under queue-spec/."""
    name = "request" if model is Request else "legacy-request"
    return {"$schema": SCHEMA_DRAFT, "$id": f"urn:hearth:queue:{name}:1", **model.model_json_schema()}


def schema_text(model: type[BaseModel] = Request) -> str:
    return json.dumps(request_schema(model), indent=2, ensure_ascii=False) + "\n"


def check(request: Request) -> None:
    """RequestRefused unless this host can run the request (the tools it names exist)."""
    from agent.tools.builtin import TOOLS  # the whole tool table, only once a request is read

    check_runnable(request, TOOLS)
