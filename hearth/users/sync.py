"""Making the audit's users match a declaration (hearth/users/declared.py): `hearth users apply FILE`,
run by hearth-users.service on NixOS and after `hearth install --systemd`.

The declaration is the roster: a user it names is added or changed to match (role, default
profile, disabled, memberships, chat identities, and the tokens and /v1 keys it declares); a user
it does not name is disabled, never removed (what they did stays theirs). The built-in `operator`
and `viewer` are left as they are unless declared. Tokens and keys made by hand (`hearth users
token`, `hearth keys add`) are left alone; those the declaration made and no longer names go.

The whole plan is made first and checked (a built-in's role, a secret that is someone else's, no
enabled owner left): a refusal is one ConfigError and nothing is written. Then every change is
written in one transaction with its row in `operator_actions` (by `config`, area `users`), so a
second apply finds nothing to change and records nothing.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hearth.audit import keys as key_rows
from hearth.audit import operator
from hearth.audit import users as rows
from hearth.audit.store import AuditStore
from hearth.errors import ConfigError
from hearth.users.access import User, user_named
from hearth.users.declared import Declared, DeclaredKey

BY = "config"
# a change's phase: what frees an identity or a key's name goes before what takes it
FREE, MAKE, CHANGE, TAKE = range(4)


@dataclass(frozen=True)
class Change:
    phase: int
    action: str
    user: str
    detail: str
    do: Callable[[AuditStore], Any]

    @property
    def line(self) -> str:
        return f"{self.user}: {self.action} {self.detail}".rstrip()


def plan(audit: AuditStore, declared: list[Declared], source: Path) -> list[Change]:
    """What applying `declared` would change, in the order it is done; ConfigError when it must not be."""
    changes: list[Change] = []
    named = {d.name for d in declared}
    for wanted in declared:
        changes += _user_changes(audit, wanted, user_named(audit, wanted.name), source)
    for row in rows.all_users(audit):
        if row["name"] not in named and not row["built_in"] and not row["disabled"]:
            changes.append(_set(CHANGE, row["name"], "disable", "not declared", {"disabled": 1}))
    changes += _key_removals(audit, declared)
    _owner_left(audit, declared, source)
    return sorted(changes, key=lambda c: c.phase)


def apply(audit: AuditStore, changes: list[Change], source: Path) -> None:
    """Every change and its record, in one transaction."""
    with audit.transaction():
        for change in changes:
            change.do(audit)
            row = {"at": audit.clock(), "by": BY, "area": "users", "action": change.action, "subject": change.user}
            operator.record(audit, {**row, "ok": 1, "detail": f"{change.detail} ({source})".lstrip()})


def _user_changes(audit: AuditStore, wanted: Declared, now: User | None, source: Path) -> list[Change]:
    if now is None:
        row: dict[str, Any] = {"name": wanted.name, "role": wanted.role, "created_at": audit.clock(), "created_by": BY}
        row |= {"disabled": int(wanted.disabled), "default_profile": wanted.default_profile, "built_in": 0}
        made = Change(MAKE, "add", wanted.name, wanted.role, lambda a: rows.add_user(a, row))
        return [
            made,
            *_grants(wanted, frozenset()),
            *_tokens(audit, wanted, source),
            *_identities(audit, wanted),
            *_keys(audit, wanted, source),
        ]
    if now.built_in and (wanted.role != now.role or wanted.tokens):
        what = f"keeps its role ({now.role})" if wanted.role != now.role else "has its token in hearth serve's file"
        raise ConfigError(f"{source}: [users.{wanted.name}] is built in and {what}; leave role and token_files out")
    return [
        *_fields(wanted, now),
        *_revokes(wanted, now.rights),
        *_grants(wanted, now.rights),
        *_tokens(audit, wanted, source),
        *_identities(audit, wanted),
        *_keys(audit, wanted, source),
    ]


def _set(phase: int, name: str, action: str, detail: str, fields: dict[str, Any]) -> Change:
    return Change(phase, action, name, detail, lambda a: rows.set_user(a, name, fields))


def _fields(wanted: Declared, now: User) -> list[Change]:
    found = []
    if wanted.role != now.role:
        found.append(_set(CHANGE, now.name, "role", f"{now.role} -> {wanted.role}", {"role": wanted.role}))
    if wanted.default_profile != now.default_profile:
        detail = f"{now.default_profile} -> {wanted.default_profile}"
        found.append(_set(CHANGE, now.name, "default_profile", detail, {"default_profile": wanted.default_profile}))
    if wanted.disabled != now.disabled:
        verb = "disable" if wanted.disabled else "enable"
        found.append(_set(CHANGE, now.name, verb, "", {"disabled": int(wanted.disabled)}))
    return found


def _grants(wanted: Declared, had: frozenset[tuple[str, str]]) -> list[Change]:
    def grant(profile: str, right: str) -> Callable[[AuditStore], Any]:
        row = {"user": wanted.name, "profile": profile, "right": right, "granted_by": BY}
        return lambda a: rows.grant(a, {**row, "granted_at": a.clock()})

    return [
        Change(TAKE, "grant", wanted.name, f"{right} in {profile}", grant(profile, right))
        for profile, right in sorted(wanted.rights - had)
    ]


def _revokes(wanted: Declared, had: frozenset[tuple[str, str]]) -> list[Change]:
    def revoke(profile: str, right: str) -> Callable[[AuditStore], Any]:
        return lambda a: rows.revoke(a, wanted.name, profile, right)

    return [
        Change(FREE, "revoke", wanted.name, f"{right} in {profile}", revoke(profile, right))
        for profile, right in sorted(had - wanted.rights)
    ]


def _tokens(audit: AuditStore, wanted: Declared, source: Path) -> list[Change]:
    made = rows.token_digests(audit, wanted.name, BY)
    found = []
    for token_id in sorted(made[d] for d in set(made) - wanted.tokens):
        found.append(_drop_token(wanted.name, token_id))
    for digest in sorted(wanted.tokens - set(made)):
        holder = rows.user_with_digest(audit, digest)
        if holder == wanted.name:
            continue  # the same token made by hand: it works already
        if holder is not None:
            raise ConfigError(
                f"{source}: [users.{wanted.name}] token_files: a file holds {holder}'s token; make a new one"
            )
        found.append(_add_token(wanted.name, digest))
    return found


def _drop_token(user: str, token_id: str) -> Change:
    return Change(FREE, "drop_token", user, token_id, lambda a: rows.drop_token(a, token_id))


def _add_token(user: str, digest: str) -> Change:
    row = {"id": f"tok-{secrets.token_hex(6)}", "user": user, "digest": digest, "created_by": BY}
    return Change(TAKE, "token", user, row["id"], lambda a: rows.add_token(a, {**row, "created_at": a.clock()}))


def _identities(audit: AuditStore, wanted: Declared) -> list[Change]:
    had = {(i["channel"], i["address"]) for i in rows.identities(audit, user=wanted.name)}
    found = []
    for channel, address in sorted(had - wanted.identities):
        found.append(_unlink(wanted.name, channel, address))
    for channel, address in sorted(wanted.identities - had):
        holder = rows.identity_user(audit, channel, address)
        if holder is not None:  # an undeclared user's (one declared with it would be a duplicate)
            found.append(_unlink(holder, channel, address))
        found.append(_link(wanted.name, channel, address))
    return found


def _link(user: str, channel: str, address: str) -> Change:
    row = {"channel": channel, "address": address, "user": user, "created_by": BY}
    return Change(
        TAKE, "link", user, f"{channel}:{address}", lambda a: rows.add_identity(a, {**row, "created_at": a.clock()})
    )


def _unlink(user: str, channel: str, address: str) -> Change:
    return Change(FREE, "unlink", user, f"{channel}:{address}", lambda a: rows.remove_identity(a, channel, address))


def _keys(audit: AuditStore, wanted: Declared, source: Path) -> list[Change]:
    stored = {row["name"]: row for row in key_rows.all_keys(audit)}
    found = []
    for key in wanted.keys:
        holder = key_rows.key_with_digest(audit, key.digest)
        if holder is not None and holder["name"] != key.name:
            raise ConfigError(
                f"{source}: [users.{wanted.name}] keys.{key.name}: its file holds key {holder['name']}'s secret"
            )
        found += _key_changes(wanted.name, key, stored.get(key.name))
    return found


def _key_changes(user: str, key: DeclaredKey, row: dict[str, Any] | None) -> list[Change]:
    fields = {
        "agents": json.dumps(list(key.agents)),
        "budget_tokens": key.budget,
        "rate_per_min": key.rate,
        "user": user,
    }
    if row is not None and row["digest"] == key.digest:
        differ = {k: v for k, v in fields.items() if row[k] != v}
        if not differ:
            return []
        detail = f"{key.name}: {', '.join(sorted(differ))}"
        return [Change(CHANGE, "key", user, detail, lambda a: key_rows.update_key(a, key.name, differ))]
    new = {"name": key.name, "digest": key.digest, "created_by": BY, **fields}

    def add(a: AuditStore) -> None:
        key_rows.add_key(a, {**new, "id": f"key-{secrets.token_hex(8)}", "created_at": a.clock()})

    found = [] if row is None else [_drop_key(row["user"] or user, key.name)]
    return [*found, Change(TAKE, "key", user, key.name, add)]


def _drop_key(user: str, name: str) -> Change:
    return Change(FREE, "drop_key", user, name, lambda a: key_rows.remove_key(a, name))


def _key_removals(audit: AuditStore, declared: list[Declared]) -> list[Change]:
    names = {k.name for d in declared for k in d.keys}
    return [
        _drop_key(row["user"] or "", row["name"])
        for row in key_rows.all_keys(audit)
        if row["created_by"] == BY and row["name"] not in names
    ]


def _owner_left(audit: AuditStore, declared: list[Declared], source: Path) -> None:
    """Refuses a declaration after which no enabled owner would be left (nobody could manage hearth)."""
    named = {d.name for d in declared}
    if any(d.role == "owner" and not d.disabled for d in declared):
        return
    for row in rows.all_users(audit):
        if row["name"] not in named and row["built_in"] and row["role"] == "owner" and not row["disabled"]:
            return
    raise ConfigError(f'{source}: no enabled owner would be left; declare one (role = "owner")')
