"""The one check of who may do what, asked by every door: the CLI, the command center, `/v1`, the
MCP server, an alert's signed link and the chat channels.

    role       may
    owner      everything: every profile, and managing hearth (users, keys, missions, budgets, ...)
    operator   read; in a profile they are a member of with `launch`: launch, continue and stop its
               runs; with `approve`: decide its runs' approvals; pause every run only with `launch`
               in `*` (every profile)
    viewer     read
    disabled   nothing, whatever the role

A door finds its user once (a token, a key's owner, a login, a platform's sender id) and asks
`require(user, act, profile)` before it acts; a refusal is `Forbidden`, whose line names the user,
the act, the profile and who can grant it. Who someone is comes from what authenticated them,
never from what they wrote.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import sqlite3
from collections.abc import Mapping
from contextlib import closing
from dataclasses import dataclass, field

from hearth.audit import users as rows
from hearth.audit.store import AuditStore, Rows
from hearth.errors import HearthError, UsageError
from hearth.settings import Settings

ROLES = ("owner", "operator", "viewer")
RIGHTS = ("launch", "approve")
EVERY = "*"
# act -> the membership right it needs ("" : reading, which every enabled user may; None: owners only)
ACTS: dict[str, str | None] = {
    "read": "",
    "launch": "launch",
    "stop": "launch",
    "pause": "launch",
    "approve": "approve",
    "manage": None,
}
# the user the CLI acts as (else the login, when a user has its name; else the owner at the shell)
USER_ENV = "HEARTH_USER"


class Forbidden(HearthError):
    """A user's act that their role and memberships do not allow; nothing changed (exit 1)."""


@dataclass(frozen=True)
class User:
    name: str
    role: str
    disabled: bool = False
    default_profile: str = "default"
    rights: frozenset[tuple[str, str]] = field(default_factory=frozenset)  # (profile, right)
    built_in: bool = False

    def may(self, act: str, profile: str = EVERY) -> bool:
        if act not in ACTS:
            raise UsageError(f"{act!r} is not an act; one of: {', '.join(ACTS)}")
        if self.disabled:
            return False
        if self.role == "owner" or act == "read":
            return True
        right = ACTS[act]
        if right is None or self.role != "operator":
            return False
        return (EVERY, right) in self.rights or (profile != EVERY and (profile, right) in self.rights)

    @property
    def operates(self) -> bool:
        """Whether the command center shows this user its buttons (what each does is checked)."""
        return not self.disabled and self.role in ("owner", "operator")


def require(user: User, act: str, profile: str = EVERY) -> None:
    """Forbidden unless `user` may do `act` in `profile` (`*`: beyond any one profile)."""
    if user.may(act, profile):
        return
    if user.disabled:
        raise Forbidden(f"refused: user {user.name!r} is disabled; an owner can enable them: hearth users enable")
    where = "" if profile == EVERY else f" in profile {profile!r}"
    if ACTS[act] is None or user.role == "viewer":
        need = "an owner" if ACTS[act] is None else "an operator or owner"
        raise Forbidden(f"refused: {act}{where} needs {need}, and {user.name!r} is a {user.role}")
    raise Forbidden(
        f"refused: {user.name!r} may not {act}{where}; an owner can grant it: "
        f"hearth users grant {user.name} {profile if profile != EVERY else EVERY} {ACTS[act]}"
    )


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def user_named(db: Rows, name: str) -> User | None:
    row = rows.user_row(db, name)
    if row is None:
        return None
    rights = frozenset((m["profile"], m["right"]) for m in rows.memberships(db, name))
    return User(
        row["name"],
        row["role"],
        bool(row["disabled"]),
        row["default_profile"] or "default",
        rights,
        bool(row["built_in"]),
    )


def user_with_token(db: Rows, token: str) -> User | None:
    """The user whose sign-in token this is (compared by its SHA-256, as the audit keeps it)."""
    name = rows.user_with_digest(db, digest(token)) if token else None
    return user_named(db, name) if name else None


def user_of_sender(db: Rows, channel: str, address: str) -> User | None:
    """The user a platform's sender id (a Telegram user id, a checked e-mail address) maps to."""
    name = rows.identity_user(db, channel, address)
    return user_named(db, name) if name else None


def shell_owner(name: str) -> User:
    """Whoever holds hearth's state at a shell or on a server without tokens: they can write the
    audit and the queue themselves, so they are an owner (recorded under their own name)."""
    return User(name, "owner")


def cli_user(db: Rows | None, login: str, env: Mapping[str, str] = os.environ) -> User:
    """Who the CLI acts as: the user HEARTH_USER names (it must exist), else the user named as the
    login when there is one, else the owner at the shell."""
    wanted = env.get(USER_ENV, "").strip()
    found = user_named(db, wanted or login) if db is not None else None
    if wanted and found is None:
        raise UsageError(f"{USER_ENV}={wanted!r} names no user of this hearth; see: hearth users list")
    return found or shell_owner(login)


def login_user(settings: Settings) -> User:
    """The CLI's user (cli_user), read from the audit without writing it (a submitter may only read)."""
    try:
        login = os.environ.get("SUDO_USER") or pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        login = f"uid {os.getuid()}"
    if not settings.audit_path.exists():
        return cli_user(None, login)
    try:
        with closing(AuditStore.read_only(settings.audit_path)) as audit:
            return cli_user(audit, login)
    except sqlite3.DatabaseError:
        return cli_user(None, login)  # an audit this submitter cannot read: as at a shell that writes the queue
