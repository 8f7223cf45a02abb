"""What a channel hands the desk, and what the desk hands back: plain records, a leaf."""

from __future__ import annotations

from dataclasses import dataclass, field

KINDS = ("message", "edited", "callback", "other")


@dataclass(frozen=True)
class Attachment:
    name: str  # as the sender named it: never a path hearth trusts
    size: int
    ref: str  # the platform's handle to fetch it by
    content_type: str = ""  # as the sender declared it (hearth checks the name's own type too)


@dataclass(frozen=True)
class Fetched:
    """An attachment as the channel fetched it: its bytes, or why they were not fetched."""

    attachment: Attachment
    data: bytes | None
    error: str = ""


@dataclass(frozen=True)
class Inbound:
    """One update from a platform. `sender` is who the platform says sent it (a Telegram user id, an
    e-mail address the receiving server vouched for); '' when it vouches for no one. `chat` is where
    a reply goes: a recipient, then optionally a space and a thread (`recipient`)."""

    update_id: str
    kind: str  # message | edited | callback | other
    sender: str
    chat: str
    private: bool = True
    text: str = ""
    addressed: bool = True  # in a group: hearth was commanded, named or replied to
    callback_id: str = ""
    data: str = ""  # a pressed button's data
    message_id: str = ""  # the message a button was on
    attachments: tuple[Attachment, ...] = ()
    detail: str = ""  # what the channel itself noticed (a failed check, hidden text dropped)
    answerable: bool = True  # False: nothing vouches the chat is the sender's (a forged From): never answered
    refusal: str = ""  # what the channel refuses in it already (a mail too large to read), said to a known user


@dataclass(frozen=True)
class Edit:
    chat: str
    message_id: str
    text: str


@dataclass(frozen=True)
class Handled:
    """What the desk made of an update: the answer to a pressed button (shown to the presser only),
    and messages to change now (an approval's buttons, once decided)."""

    verdict: str
    answer: str = ""
    edits: list[Edit] = field(default_factory=list)


def recipient(chat: str) -> str:
    """Who a chat's messages go to: the chat itself, or its part before a thread (`ADDRESS <ROOT>`,
    an e-mail conversation)."""
    return chat.split(" ", 1)[0]


def buttons_for(approval_id: str) -> list[tuple[str, str]]:
    """An approval's two buttons: (label, data); the data names the verdict and the approval."""
    return [("Approve", f"a:{approval_id}"), ("Deny", f"d:{approval_id}")]


def parse_button(data: str) -> tuple[str, str] | None:
    """(verdict, approval id) from a button's data; None for anything else."""
    verdict = {"a": "approve", "d": "deny"}.get(data[:1])
    ident = data[2:]
    if verdict is None or data[1:2] != ":" or not ident or len(ident) > 64 or not ident.replace("-", "").isalnum():
        return None
    return verdict, ident
