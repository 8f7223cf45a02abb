"""Making and changing users: `hearth users add|list|grant|revoke|disable|enable|rm|token|link|unlink`,
the Users page and `services.hearth.users` all change the rows through these functions.

A sign-in token is `hu-` and 43 random characters, printed once; the audit keeps its SHA-256. The
built-in `operator` and `viewer` are the command center's two configured tokens (their secrets
live in files, not here): they cannot be removed, and `operator` stays an owner.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any

from hearth.audit import users as rows
from hearth.audit.store import AuditStore, Rows
from hearth.errors import NotFound, UsageError
from hearth.users.access import EVERY, RIGHTS, ROLES, User, digest, user_named

TOKEN_PREFIX = "hu-"
NAME = re.compile(r"[a-z][a-z0-9._-]{0,31}")
PROFILE = re.compile(r"\*|[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
CHANNELS = ("telegram", "email")
ADDRESS = {"telegram": re.compile(r"[1-9][0-9]{0,19}"), "email": re.compile(r"[^@\s<>]{1,64}@[A-Za-z0-9.-]{1,253}")}


@dataclass(frozen=True)
class Listed:
    user: User
    created_at: str
    created_by: str
    tokens: int
    identities: list[str]


def add(audit: AuditStore, name: str, role: str, *, by: str, default_profile: str = "default") -> str:
    """Make a user and their first sign-in token; the token (shown once). UsageError for a bad or
    taken name or an unknown role."""
    if not NAME.fullmatch(name):
        raise UsageError(f"user name {name!r} is not valid; use 1-32 of a-z 0-9 . _ - starting with a letter")
    _role(role)
    _profile(default_profile)
    row = {
        "name": name,
        "role": role,
        "created_at": audit.clock(),
        "created_by": by,
        "disabled": 0,
        "default_profile": default_profile,
        "built_in": 0,
    }
    with audit.transaction():
        if not rows.add_user(audit, row):
            raise UsageError(f"a user named {name!r} exists; see: hearth users list")
        return new_token(audit, name, by=by)


def new_token(audit: AuditStore, name: str, *, by: str) -> str:
    """Another sign-in token for a user (the earlier ones keep working until `rm` or `disable`)."""
    user = existing(audit, name)
    if user.built_in:
        raise UsageError(f"{name!r} is built in: its token is the file hearth serve reads (--token-file)")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = {"id": f"tok-{secrets.token_hex(6)}", "user": name, "digest": digest(secret)}
    rows.add_token(audit, {**row, "created_at": audit.clock(), "created_by": by})
    return secret


def existing(db: Rows, name: str) -> User:
    user = user_named(db, name)
    if user is None:
        raise NotFound(f"no user named {name!r}; see: hearth users list")
    return user


def listing(db: Rows) -> list[Listed]:
    found = []
    for row in rows.all_users(db):
        user = user_named(db, row["name"])
        assert user is not None
        addresses = [f"{i['channel']}:{i['address']}" for i in rows.identities(db, user=user.name)]
        count = len(rows.tokens_of(db, user.name))
        found.append(Listed(user, row["created_at"] or "", row["created_by"] or "", count, addresses))
    return found


def grant(audit: AuditStore, name: str, profile: str, right: str, *, by: str) -> bool:
    """Give an operator a right in a profile (`*`: every one); False when they had it."""
    user = existing(audit, name)
    _right(right)
    _profile(profile)
    if user.role != "operator":
        raise UsageError(
            f"{name!r} is a {user.role}: memberships are an operator's ("
            + ("an owner may do everything already)" if user.role == "owner" else "a viewer only reads)")
        )
    row = {"user": name, "profile": profile, "right": right, "granted_by": by, "granted_at": audit.clock()}
    return rows.grant(audit, row)


def revoke(audit: AuditStore, name: str, profile: str, right: str) -> None:
    existing(audit, name)
    _right(right)
    if not rows.revoke(audit, name, profile, right):
        raise NotFound(f"{name!r} has no {right} in profile {profile!r}; see: hearth users list")


def set_disabled(audit: AuditStore, name: str, disabled: bool) -> None:
    """A disabled user may do nothing, their tokens, keys and chats included, until enabled."""
    user = existing(audit, name)
    if disabled and user.role == "owner":
        _last_owner_stays(audit, name)
    rows.set_user(audit, name, {"disabled": int(disabled)})


def set_role(audit: AuditStore, name: str, role: str) -> None:
    user = existing(audit, name)
    _role(role)
    if user.built_in:
        raise UsageError(f"{name!r} is built in and keeps its role ({user.role})")
    if user.role == "owner" and role != "owner":
        _last_owner_stays(audit, name)
    rows.set_user(audit, name, {"role": role})


def set_default_profile(audit: AuditStore, name: str, profile: str) -> None:
    existing(audit, name)
    _profile(profile)
    rows.set_user(audit, name, {"default_profile": profile})


def remove(audit: AuditStore, name: str) -> None:
    """Remove a user, their memberships, tokens and identities; what they did stays recorded."""
    user = existing(audit, name)
    if user.built_in:
        raise UsageError(f"{name!r} is built in (the command center's configured token); disable it instead")
    if user.role == "owner":
        _last_owner_stays(audit, name)
    rows.remove_user(audit, name)


def link(audit: AuditStore, name: str, channel: str, address: str, *, by: str) -> str:
    """Map a platform's sender id to a user: the address as kept (e-mail addresses in lower case)."""
    existing(audit, name)
    address = checked_address(channel, address)
    row = {"channel": channel, "address": address, "user": name, "created_at": audit.clock(), "created_by": by}
    taken = rows.add_identity(audit, row)
    if taken is not None and taken != name:
        raise UsageError(f"{channel}:{address} is {taken}'s already; unlink it first: hearth users unlink {taken}")
    return address


def unlink(audit: AuditStore, name: str, channel: str, address: str) -> None:
    existing(audit, name)
    address = checked_address(channel, address)
    mapped = rows.identity_user(audit, channel, address)
    if mapped != name or not rows.remove_identity(audit, channel, address):
        raise NotFound(f"{channel}:{address} is not {name}'s; see: hearth users list")


def identities(db: Rows, channel: str) -> list[dict[str, Any]]:
    return rows.identities(db, channel=channel)


def checked_address(channel: str, address: str) -> str:
    """The address as kept (e-mail in lower case); UsageError for an unknown channel or a bad address."""
    if channel not in CHANNELS:
        raise UsageError(f"{channel!r} is not a channel; one of: {', '.join(CHANNELS)}")
    address = address.strip().lower() if channel == "email" else address.strip()
    if not ADDRESS[channel].fullmatch(address):
        what = "a Telegram user id (digits)" if channel == "telegram" else "an e-mail address"
        raise UsageError(f"{address[:80]!r} is not {what}")
    return address


def _last_owner_stays(audit: AuditStore, name: str) -> None:
    owners = [u for u in listing(audit) if u.user.role == "owner" and not u.user.disabled and u.user.name != name]
    if not owners:
        raise UsageError(f"{name!r} is the last enabled owner; make another owner first (hearth users add NAME owner)")


def _role(role: str) -> None:
    if role not in ROLES:
        raise UsageError(f"{role!r} is not a role; one of: {', '.join(ROLES)}")


def _right(right: str) -> None:
    if right not in RIGHTS:
        raise UsageError(f"{right!r} is not a right; one of: {', '.join(RIGHTS)}")


def _profile(profile: str) -> None:
    if not PROFILE.fullmatch(profile):
        raise UsageError(f"{profile[:80]!r} is not a profile name (or {EVERY} for every profile)")
