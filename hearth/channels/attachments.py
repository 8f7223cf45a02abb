"""Attachments: a file sent with a message goes into the run's workspace, under `attachments/`.

    fetch    the channel downloads each attachment whose declared size is within
             `attachment_bytes` (10 MB), at most `attachments_per_message` (5) of them, before the
             desk sees the message (hearth/channels/service.py); nothing is written then
    check    (`check`) the name: only its last part is kept (`../x` and `/etc/x` become `x`), a
             leading dot becomes `_`, characters other than letters, digits, `.`, `_`, `-` and
             space become `_`, a name past NAME_CHARS is cut (its extension kept); a name with a
             NUL or a control character, or nothing left, is refused. The type: the extension must
             be one of `attachment_types`, and the bytes must be what it says (UTF-8 text without
             NUL for text, the format's signature for images and PDF). The size: the bytes
             themselves, not what the platform declared
    receive  what passed is written to the run's inbox (hearth/channels/inbox.py) before the run
             is queued, and the goal names them; each attachment, taken, renamed or refused, is
             a row of `channel_attachments` with its SHA-256 and why (hearth/audit/channels.py).
             Admission moves the inbox into the workspace's `attachments/` before the run's first
             step and records a `restore` step naming them

A refused attachment gets a reply that names it and says why; the message's text still runs.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from hearth.audit import channels as rows
from hearth.audit.store import AuditStore
from hearth.channels.config import ChannelConfig
from hearth.channels.inbox import FOLDER, put
from hearth.channels.message import Fetched
from hearth.errors import ConfigError

NAME_CHARS = 100
TEXT = ("txt", "md", "csv", "tsv", "json", "jsonl", "yaml", "yml", "toml", "xml", "log", "html")
SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "pdf": (b"%PDF-",),
    "png": (b"\x89PNG\r\n\x1a\n",),
    "jpg": (b"\xff\xd8\xff",),
    "jpeg": (b"\xff\xd8\xff",),
    "gif": (b"GIF87a", b"GIF89a"),
    "webp": (b"RIFF",),
}
TYPES = (*TEXT, *SIGNATURES)
UNSAFE = re.compile(r"[^\w. -]", re.ASCII)


@dataclass(frozen=True)
class Checked:
    """One attachment as hearth judged it: the name it is kept under ('' when refused), and why."""

    sent_as: str
    name: str
    size: int
    sha256: str
    verdict: str  # taken | renamed | refused
    reason: str = ""
    data: bytes = b""


def allowed_types(config: ChannelConfig) -> tuple[str, ...]:
    """`attachment_types` of the channel's table (extensions), else TYPES; ConfigError if not a list of words."""
    given = config.get("attachment_types", list(TYPES))
    if not isinstance(given, list) or not all(isinstance(t, str) and t.isalnum() for t in given):
        raise ConfigError(
            f'channels.toml: [{config.name}].attachment_types must be a list of extensions such as ["txt", "pdf"]'
        )
    return tuple(t.lower() for t in given)


def check(fetched: Fetched, limit: int, types: tuple[str, ...]) -> Checked:
    """The attachment's name, type and size judged (module doc); its bytes kept when taken."""
    sent = fetched.attachment.name
    data = fetched.data
    digest = hashlib.sha256(data).hexdigest() if data is not None else ""
    size = len(data) if data is not None else fetched.attachment.size
    name, why = safe_name(sent)

    def refused(reason: str) -> Checked:
        return Checked(_shown(sent), "", size, digest, "refused", reason)

    if fetched.error:
        return refused(fetched.error)
    if data is None or size > limit:
        return refused(f"it is {size} bytes; at most {limit} are taken")
    if not name:
        return refused(why)
    kind = name.rpartition(".")[2].lower() if "." in name else ""
    if kind not in types:
        return refused(f"type .{kind or '(none)'} is not taken; these are: {', '.join(types)}")
    if not _is(kind, data):
        return refused(f"its bytes are not {'UTF-8 text' if kind in TEXT else kind.upper()}, as its name says")
    verdict = "renamed" if name != sent else "taken"
    return Checked(_shown(sent), name, size, digest, verdict, why if verdict == "renamed" else "", data)


def safe_name(sent: str) -> tuple[str, str]:
    """(the name to keep, why it differs from `sent`); ('', why) when none can be kept."""
    if any(unicodedata.category(c) == "Cc" for c in sent):
        return "", "its name holds a NUL or a control character"
    last = re.split(r"[/\\]", sent)[-1].strip()
    name = UNSAFE.sub("_", unicodedata.normalize("NFC", last))
    name = "_" + name[1:] if name.startswith(".") else name
    if len(name) > NAME_CHARS:
        stem, dot, ext = name.rpartition(".")
        ext = ext[:10] if dot else ""
        name = (stem if dot else name)[: NAME_CHARS - len(ext) - 1] + (f".{ext}" if ext else "")
    if not name.strip("._ "):
        return "", "its name has nothing that can name a file"
    if name == sent:
        return name, ""
    return name, f"renamed from {_shown(sent)!r}: " + (
        "a path is not kept, only its last part"
        if last != sent
        else "a name keeps letters, digits, '.', '_', '-' and spaces, at most 100"
    )


def _is(kind: str, data: bytes) -> bool:
    if kind in TEXT:
        if b"\x00" in data:
            return False
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True
    if kind == "webp":
        return data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    return data.startswith(SIGNATURES[kind])


def _shown(name: str) -> str:
    """A sent name as the record and a reply may show it: control characters visible, cut."""
    return "".join(c if unicodedata.category(c) != "Cc" else f"\\x{ord(c):02x}" for c in name)[:200]


# -- what a message's attachments become -------------------------------------------------------------
@dataclass(frozen=True)
class Received:
    note: str  # what the goal says of them ("" when none was taken)
    reply: str  # what the sender is told: each refused or renamed one, and why ("" when all were taken as sent)


def receive(
    audit: AuditStore, state_dir: Path, config: ChannelConfig, row: dict[str, str], fetched: tuple[Fetched, ...]
) -> Received:
    """Judge each attachment, put those taken into the run's inbox (hearth/channels/inbox.py) and
    record each (`row`: the channel, update id, run id and time it came with)."""
    types = allowed_types(config)
    said, taken = [], []
    for one in (check(f, config.limits["attachment_bytes"], types) for f in fetched):
        name = put(state_dir, row["run_id"], one.name, one.data) if one.verdict != "refused" else ""
        verdict, reason = _as_kept(one, name)
        record = {"sent_as": one.sent_as, "name": name, "size": one.size, "sha256": one.sha256}
        rows.add_attachment(audit, row | record | {"verdict": verdict, "reason": reason})
        if name:
            taken.append(f"{FOLDER}/{name}")
        if verdict != "taken":
            said.append(
                f"{'Not taken' if verdict == 'refused' else 'Kept as ' + FOLDER + '/' + name}: {one.sent_as!r}: {reason}."
            )
    note = f"\n\n(Sent with this message, in the workspace: {', '.join(taken)})" if taken else ""
    return Received(note, "\n".join(said))


def _as_kept(one: Checked, name: str) -> tuple[str, str]:
    if one.verdict == "refused" or name == one.name:
        return one.verdict, one.reason
    return "renamed", one.reason or f"renamed to {name!r}: a file of that name came with it"
