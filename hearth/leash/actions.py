"""Signed alert links: Approve and Deny straight from an alert, once, until the approval expires.

    token = APPROVAL . a|d . EXPIRY . TO . MAC    MAC = HMAC-SHA256(key, "hearth-act-v2", id, decision, expiry, to)

A token names one approval, one decision, when it stops working (the approval's own deadline) and
the destination it was sent to: TO is the destination's name in alerts.toml (base64url, its first
45 bytes), and the decision is recorded as `alert:NAME`, so two phones on ntfy are told apart in
the audit. The MAC binds all four, so a link for approval A never decides approval B, an approve
link cannot be edited into a deny, and one phone's link cannot be made to say it was another's. A
link signed before destinations were named (`hearth-act-v1`, TO the destination's kind) still
decides until its approval expires, recorded as `alert:KIND` as it was then. The key is 32 random bytes only hearth holds: `alert-actions.key`
in the state directory, made at first use with mode 0600 (written to a private temporary file, then
linked into place: never readable by others, never seen half-written); `hearth approvals
rotate-key` replaces it, which voids every link still out. A link decides once: the SHA-256 of each
used token is a row of `alert_actions` (with when and by whom), and a replay is refused even when it
asks for the same decision. Every refusal is an ActionRefused with a one-line reason and changes
nothing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from agent.clock import stamp
from hearth.audit import alerts as alert_rows
from hearth.audit import approvals
from hearth.audit.approvals import Approval, parse_stamp, utc_clock
from hearth.audit.store import AuditStore
from hearth.errors import HearthError

KEY_FILE = "alert-actions.key"
DECISIONS = {"a": "approve", "d": "deny"}
MAX_TOKEN = 200  # characters; anything longer is refused before it is parsed
TOKEN = re.compile(r"([A-Za-z0-9_-]{1,64})\.([ad])\.([0-9]{1,12})\.([A-Za-z0-9_-]{1,60})\.([A-Za-z0-9_-]{43})")
KIND = re.compile(r"[a-z0-9]{1,16}")  # TO in a link signed before destinations were named (v1)
NAME_BYTES = 45  # of a destination's name a link carries: 60 characters of base64url
CHANNEL_VIA = "channel:"  # a link a chat channel sent: `channel:NAME:USER` (hearth/channels/follow.py)


class ActionRefused(HearthError):
    """A link that decides nothing: forged, expired, used, or for an approval closed already."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Action:
    approval_id: str
    decision: str  # approve | deny
    expires: int  # seconds since the epoch
    via: str  # the name of the destination it was sent to (a v1 link's: its kind)
    token: str

    @property
    def by(self) -> str:
        """Who decided through this link, as the audit records it (hearth/leash/decisions.py's By): a
        link a chat channel sent to one of its users (`channel:email:ada`) decides as that user."""
        return self.via if self.via.startswith(CHANNEL_VIA) else f"alert:{self.via}"

    @property
    def granted(self) -> bool:
        return self.decision == "approve"

    @property
    def digest(self) -> str:
        return digest(self.token)


# -- the key ----------------------------------------------------------------------------------------
def key_path(state_dir: Path) -> Path:
    return state_dir / KEY_FILE


def key(state_dir: Path) -> bytes:
    """The signing key, made at first use (two processes racing to make it agree on one)."""
    path = key_path(state_dir)
    if not path.exists():
        state_dir.mkdir(parents=True, exist_ok=True)
        made = _private_key_file(state_dir)
        try:
            os.link(made, path)  # fails if another process linked its key first: then that one is the key
        except FileExistsError:
            pass
        finally:
            made.unlink()
    return bytes.fromhex(path.read_text().strip())


def rotate_key(state_dir: Path) -> Path:
    """A new key in place of the old one: every link signed before is void from now on."""
    state_dir.mkdir(parents=True, exist_ok=True)
    os.replace(_private_key_file(state_dir), key_path(state_dir))
    return key_path(state_dir)


def _private_key_file(state_dir: Path) -> Path:
    """32 random bytes (hex) in a new file that was 0600 from its creation (os.open's mode, not a chmod)."""
    path = state_dir / f".{KEY_FILE}.{secrets.token_hex(6)}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_hex(32) + "\n")
        out.flush()
        os.fsync(out.fileno())
    return path


# -- tokens -----------------------------------------------------------------------------------------
def _mac(secret: bytes, approval_id: str, letter: str, expires: int, to: str, version: str = "v2") -> str:
    message = f"hearth-act-{version}\0{approval_id}\0{letter}\0{expires}\0{to}".encode()
    return base64.urlsafe_b64encode(hmac.new(secret, message, hashlib.sha256).digest()).decode().rstrip("=")


def sign(state_dir: Path, approval_id: str, decision: str, expires: int, destination: str) -> str:
    """The token that makes `decision` (approve | deny) on this approval until `expires` (epoch s),
    recorded as decided by `alert:DESTINATION` (the destination's name)."""
    letter = next(k for k, v in DECISIONS.items() if v == decision)
    to = name_field(destination)
    return f"{approval_id}.{letter}.{expires}.{to}.{_mac(key(state_dir), approval_id, letter, expires, to)}"


def name_field(name: str) -> str:
    """A destination's name as a token carries it: base64url of its first NAME_BYTES bytes (cut
    between characters), no padding."""
    data = name.encode()[:NAME_BYTES].decode(errors="ignore").encode() or b"?"
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _name_of(field: str) -> str:
    return base64.urlsafe_b64decode(field + "=" * (-len(field) % 4)).decode(errors="replace")


def for_approval(state_dir: Path, approval: Approval, destination: str) -> dict[str, str]:
    """The approve and deny tokens of a pending approval sent to `destination` (its name), valid
    until it expires."""
    expires = int(parse_stamp(approval.expires_at).timestamp())
    return {decision: sign(state_dir, approval.id, decision, expires, destination) for decision in ("approve", "deny")}


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def verify(state_dir: Path, token: str, now: datetime | None = None) -> Action:
    """The action a token carries; ActionRefused when it is not one hearth signed, or has expired."""
    if len(token) > MAX_TOKEN:
        raise ActionRefused(400, "this is not a hearth link (too long); nothing changed")
    found = TOKEN.fullmatch(token)
    if found is None:
        raise ActionRefused(400, "this is not a hearth link (malformed or cut short); nothing changed")
    approval_id, letter, expiry, to, mac = found.groups()
    if not key_path(state_dir).exists():
        raise ActionRefused(403, "this link was not signed by this hearth (it has no link key yet); nothing changed")
    secret = key(state_dir)
    if hmac.compare_digest(mac, _mac(secret, approval_id, letter, int(expiry), to)):
        via = _name_of(to)
    elif KIND.fullmatch(to) and hmac.compare_digest(mac, _mac(secret, approval_id, letter, int(expiry), to, "v1")):
        via = to  # signed before destinations were named: its kind
    else:
        raise ActionRefused(
            403, "this link's signature is wrong: forged, altered, or signed with a key since rotated; nothing changed"
        )
    action = Action(approval_id, DECISIONS[letter], int(expiry), via, token)
    moment = now or utc_clock()
    if moment.timestamp() >= action.expires:
        raise ActionRefused(410, f"this link expired at {stamp(_at(action.expires))}; nothing changed")
    return action


def _at(epoch: int) -> datetime:
    from datetime import UTC

    return datetime.fromtimestamp(epoch, UTC)


def used(audit: AuditStore, action: Action) -> dict[str, str] | None:
    """When and by whom this token was used, if it was."""
    return alert_rows.link_used(audit, action.digest)


def check(audit: AuditStore, state_dir: Path, token: str, now: datetime | None = None) -> tuple[Action, Approval]:
    """A token that could decide now, and its approval; ActionRefused otherwise (nothing changes)."""
    action = verify(state_dir, token, now)
    if (use := used(audit, action)) is not None:
        raise ActionRefused(
            409, f"this link was used already, at {use['used_at']} by {use['used_by']}; nothing changed"
        )
    approval = approvals.find(audit, action.approval_id)
    if approval is None or approval.id != action.approval_id:
        raise ActionRefused(404, f"no approval with id {action.approval_id!r}; nothing changed")
    status = approval.status_at(stamp(now or utc_clock()))
    if status != "pending":
        by = f" by {approval.decided_by}" if approval.decided_by else ""
        raise ActionRefused(409, f"approval {approval.id} is {status} already{by}; nothing changed")
    return action, approval


def mark_used(audit: AuditStore, action: Action) -> None:
    """The token has decided: a second use of it is refused (only its SHA-256 is kept)."""
    alert_rows.use_link(audit, action.digest, action.approval_id, action.decision, stamp(utc_clock()), action.by)
