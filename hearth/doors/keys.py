"""The keys of the OpenAI-compatible door: `hearth keys add|list|rm`, and the check of every `/v1` call.

A key is `hk-` and 43 random characters, printed once; the audit keeps only its SHA-256 (a leaked
audit leaks no key). Each key names the profiles it may use (none named: any), a daily token budget
(the tokens of today's runs it launched, UTC; 0: none) and a rate (calls per minute; 0: none). Each
call that queues a run is a row in `api_calls`, so the rate is counted across processes and the
conversation a later call continues is found there.

A key is its id (`key-` and 16 hex digits, made with it), never its name: a key removed and made
again under the same name is another key, which continues none of the first one's conversations
and spends from a budget of its own. Admission reserves: a call that queues a run holds what that
run may spend (what is left of the budget, at most its profile's cap) until the run ends, when
what it really spent counts instead; the rate, the budget and the reservation are one transaction,
so calls made at once cannot spend past the budget between them.

Refusals are `KeyRefused`, whose `status` and `code` are the OpenAI error's:

    401 missing_key       no `Authorization: Bearer` key
    401 invalid_api_key   a key no row has the digest of
    403 model_not_allowed a profile this key may not use
    403 permission_denied  the key's user may not launch in that profile, is disabled or is gone
    429 insufficient_quota the key's tokens for today are spent, or held by its runs still going
    429 rate_limit_exceeded more calls this minute than the key's rate
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hearth.audit import keys as key_rows
from hearth.audit.keys import NAME, RESERVED
from hearth.audit.store import AuditStore
from hearth.errors import HearthError, NotFound, UsageError
from hearth.users.access import Forbidden, User, require, user_named

PREFIX = "hk-"
WINDOW = timedelta(minutes=1)


class KeyRefused(HearthError):
    """A `/v1` call refused; str() is the reason a client reads."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


@dataclass(frozen=True)
class Key:
    name: str
    agents: tuple[str, ...]  # empty: any profile
    budget_tokens: int  # per UTC day; 0: no budget of its own
    rate_per_min: int  # 0: no rate of its own
    created_at: str = ""
    created_by: str = ""
    id: str = ""  # made with the key; its calls and conversations are found by it
    user: str = "operator"  # whose rights its calls have (hearth/users/access.py)

    @property
    def source(self) -> str:
        """How the run row names who launched it."""
        return f"api:{self.name}"

    def may_use(self, agent: str) -> bool:
        return not self.agents or agent in self.agents


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def add(audit: AuditStore, key: Key) -> str:
    """Store `key` and return its secret (shown once); UsageError for a bad or taken name."""
    if not NAME.fullmatch(key.name):
        raise UsageError(f"key name {key.name!r} is not valid; use 1-64 of A-Z a-z 0-9 . _ - starting with one")
    if key.name == RESERVED:
        raise UsageError(
            f"key name {RESERVED!r} is hearth's own (its MCP server's runs are api:{RESERVED}); pick another"
        )
    if key.budget_tokens < 0 or key.rate_per_min < 0:
        raise UsageError("--budget and --rate are counts: 0 (no limit) or more")
    secret = PREFIX + secrets.token_urlsafe(32)
    row = {
        "id": f"key-{secrets.token_hex(8)}",
        "name": key.name,
        "digest": digest(secret),
        "agents": json.dumps(list(key.agents)),
        "budget_tokens": key.budget_tokens,
        "rate_per_min": key.rate_per_min,
        "created_at": key.created_at or audit.clock(),
        "created_by": key.created_by,
        "user": key.user,
    }
    if not key_rows.add_key(audit, row):
        raise UsageError(f"a key named {key.name!r} exists; remove it first: hearth keys rm {key.name}")
    return secret


def listing(audit: AuditStore) -> list[Key]:
    return [_key(row) for row in key_rows.all_keys(audit)]


def remove(audit: AuditStore, name: str) -> None:
    if not key_rows.remove_key(audit, name):
        raise NotFound(f"no key named {name!r}; see: hearth keys list")


def _key(row: dict[str, Any]) -> Key:
    agents = tuple(json.loads(row["agents"] or "[]"))
    return Key(
        row["name"],
        agents,
        row["budget_tokens"] or 0,
        row["rate_per_min"] or 0,
        row["created_at"] or "",
        row["created_by"] or "",
        row["id"] or "",
        row["user"] or "operator",
    )


def identify(audit: AuditStore, authorization: str) -> Key:
    """The key an `Authorization` header carries, or KeyRefused 401."""
    if not authorization.lower().startswith("bearer ") or not authorization[7:].strip():
        raise KeyRefused(401, "missing_key", "no API key: send Authorization: Bearer hk-... (hearth keys add NAME)")
    row = key_rows.key_with_digest(audit, digest(authorization[7:].strip()))
    if row is None:
        raise KeyRefused(401, "invalid_api_key", "wrong API key: no key of this hearth has it (see: hearth keys list)")
    return _key(row)


def user_of(audit: AuditStore, key: Key, agent: str) -> User:
    """The key's user, who must be there, enabled, and may launch in `agent`: else KeyRefused 403."""
    user = user_named(audit, key.user)
    if user is None:
        raise KeyRefused(403, "permission_denied", f"key {key.name!r} belongs to {key.user!r}, who is no user here now")
    try:
        require(user, "launch", agent)
    except Forbidden as exc:
        raise KeyRefused(403, "permission_denied", f"key {key.name!r}: {exc}") from None
    return user


def spent_today(audit: AuditStore, key: Key, now: datetime | None = None) -> int:
    """Tokens of the runs this key launched today (UTC), as the run rows count them."""
    return key_rows.charged(audit, key.id, _midnight(now)).spent


def admit(key: Key, agent: str) -> None:
    """KeyRefused 403 unless `key` may start a run of `agent` (the rate and the budget are `record`'s)."""
    if not key.may_use(agent):
        raise KeyRefused(
            403,
            "model_not_allowed",
            f"key {key.name!r} may not use profile {agent!r}; it may use: {', '.join(key.agents)}",
        )


def record(
    audit: AuditStore, key: Key, run_id: str, conversation: str, own: int, now: datetime | None = None
) -> int | None:
    """Count the call and reserve its run's tokens, before the run is queued: the tokens the run may
    spend (what is left of the key's budget today, at most `own`, the profile's cap; None: the key
    has no budget). KeyRefused 429 past the key's rate, or with nothing left of its budget."""
    moment = now or datetime.now(UTC)
    call: dict[str, Any] = {
        "key": key.name,
        "key_id": key.id,
        "at": _stamp(moment),
        "run_id": run_id,
        "conversation": conversation,
        "user": key.user,
    }
    stopped = key_rows.record_call(
        audit,
        call,
        rate=key.rate_per_min,
        since=_stamp(moment - WINDOW),
        budget=key.budget_tokens,
        day=_midnight(moment),
        own=own,
    )
    if stopped == "rate":
        raise KeyRefused(
            429, "rate_limit_exceeded", f"key {key.name!r} may make {key.rate_per_min} calls a minute; wait and retry"
        )
    if stopped == "budget":
        raise KeyRefused(429, "insufficient_quota", _spent(key, key_rows.charged(audit, key.id, _midnight(moment))))
    reserved: int | None = call["reserved"]
    return reserved


def _spent(key: Key, charged: key_rows.Charged) -> str:
    if not charged.held:
        return f"key {key.name!r} has spent its {key.budget_tokens} tokens for today (UTC)"
    return (
        f"key {key.name!r} has no tokens left of its {key.budget_tokens} for today (UTC): {charged.spent} spent and "
        f"{charged.held} held by its runs still going; retry when they end"
    )


def latest_run(audit: AuditStore, key: Key, conversation: str) -> str | None:
    """The conversation's latest run this key launched, which the next turn continues."""
    return key_rows.latest_run(audit, key.id, conversation)


def answered(audit: AuditStore, key: Key) -> list[dict[str, Any]]:
    """This key's latest calls whose run answered: their conversation and the run's summary."""
    return key_rows.answered(audit, key.id)


def _midnight(now: datetime | None) -> str:
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT00:00:00")


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
