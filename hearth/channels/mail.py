"""E-mail: IMAP for what arrives (polled), SMTP for what goes, through the standard library's
clients (imaplib, smtplib: well kept, and no new dependency), each call in a thread.

    receive   logs in, flags the mails handed out by the previous poll \\Seen (so a crash between
              fetching and handling fetches them again, and the desk's record of each update id
              acts on them once), then takes up to FETCH_AT_ONCE unseen mails of the mailbox. A
              mail over `max_mail_bytes` is fetched as its header only and refused whole.
    who       hearth/channels/mailtext.py: the From address the receiving server's own
              Authentication-Results vouch for (`authserv_id`), else no one. A mail no one is
              vouched for is not answered at all: a reply would go to whoever the From names,
              who may never have written (a forged From); it is recorded.
    threads   a thread is a conversation: a mail's chat is "ADDRESS <ROOT>", ROOT the Message-ID
              that started its thread (hearth/channels/mailtext.py), so every reply in it is a
              follow-up of the same run, and a new mail (no References) starts a new one
    loops     a mail marked automatic (Auto-Submitted other than `no`, Precedence bulk, list or
              junk: an out-of-office, a bounce, a list) is ignored, so two robots never answer
              each other; hearth's own mail says Auto-Submitted: auto-replied (RFC 3834)
    send      one mail per message: To the chat's address, threaded (In-Reply-To and References
              the thread's latest mail, Subject "Re: " its subject); the delivery's proof is the
              SMTP server's reply to DATA (its queue id) beside the Message-ID hearth gave it

Mail has no buttons and no edits: an approval's mail carries the signed approve/deny links and
the `/approve ID` replies (hearth/channels/follow.py), and a run's answer is one mail at its end.
IDLE is not used: the standard library's imaplib has no IDLE before Python 3.14, so the mailbox
is polled every `poll_s` (30 s).

The servers' errors become the seam's: no connection, a refused login or a timeout is
ChannelDown (the service backs off); a recipient or a message the SMTP server refuses is
Undeliverable (tried again later, then missing and alerted).
"""

from __future__ import annotations

import asyncio
import imaplib
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from hearth.channels.config import ChannelConfig
from hearth.channels.mailtext import Part, from_address, message_id, parse, parts, readable, thread_root, vouched_sender
from hearth.channels.message import Attachment, Inbound
from hearth.channels.seam import ChannelDown, Undeliverable
from hearth.errors import ConfigError

FETCH_AT_ONCE = 20
MAX_MAIL_BYTES = 10_000_000
REQUIRED = ("address", "authserv_id", "imap_host", "smtp_host")
TLS = ("ssl", "starttls", "none")
AUTOMATIC_PRECEDENCE = ("bulk", "list", "junk")
THREADS_KEPT = 2000


class EmailChannel:
    name = "email"
    edits = False
    buttons = False

    def __init__(self, config: ChannelConfig) -> None:
        missing = [key for key in REQUIRED if not config.get(key)]
        if missing:
            raise ConfigError(f"channels.toml: [email] needs {', '.join(missing)} (docs/channels.md, E-mail)")
        for key in ("imap_tls", "smtp_tls"):
            if config.get(key, "ssl") not in TLS:
                raise ConfigError(f"channels.toml: [email].{key} must be one of {', '.join(TLS)}")
        self.config = config
        self.address = str(config.get("address")).lower()
        self.authserv = str(config.get("authserv_id"))
        self.max_bytes = int(config.get("max_mail_bytes", MAX_MAIL_BYTES))
        self.handed: list[bytes] = []  # UIDs handed out by the last poll: flagged \Seen at the next
        self.threads: dict[str, tuple[str, str]] = {}  # thread root -> (its subject, its latest Message-ID)
        self.parts: dict[str, Part] = {}  # the last poll's attachments, by ref

    async def receive(self, timeout_s: float) -> list[Inbound]:
        mails = await asyncio.to_thread(self._fetch)
        if not mails and timeout_s > 0:
            await asyncio.sleep(min(timeout_s, float(self.config.get("poll_s", 30))))
        self.parts = {}
        return [self.inbound(*mail) for mail in mails]

    async def send(self, chat: str, text: str, buttons: list[tuple[str, str]]) -> str:
        return await asyncio.to_thread(self._send, chat, text)

    async def edit(self, chat: str, message_id: str, text: str) -> None:
        return None  # a mail cannot be changed once sent (the desk sends no progress to edit)

    async def answer(self, callback_id: str, text: str) -> None:
        return None  # no buttons: a verdict arrives as a reply, and is answered by one

    async def download(self, ref: str, limit: int) -> bytes:
        part = self.parts.get(ref)
        if part is None:
            raise Undeliverable(f"attachment {ref} is no longer at hand; send the mail again")
        return part.data[:limit]

    async def close(self) -> None:
        if self.handed:
            await asyncio.to_thread(self._flag_handed)

    # -- IMAP ------------------------------------------------------------------------------------------
    def _fetch(self) -> list[tuple[str, str, bytes, int]]:
        """(uidvalidity, uid, raw, size) of unseen mail; a mail too large comes as its header only."""
        try:
            with self._imap() as imap:
                self._flag(imap)
                uids = self._unseen(imap)
                validity = _validity(imap)
                found = [(validity, uid.decode(), *self._one(imap, uid)) for uid in uids]
                self.handed = uids
                return found
        except (OSError, imaplib.IMAP4.error) as exc:
            raise ChannelDown(f"cannot read mail at {self.config.get('imap_host')}: {exc}") from None

    def _flag_handed(self) -> None:
        try:
            with self._imap() as imap:
                self._flag(imap)
        except (OSError, imaplib.IMAP4.error):
            pass  # the next start fetches them again, and each is acted on once

    def _flag(self, imap: imaplib.IMAP4) -> None:
        if self.handed:
            imap.uid("STORE", b",".join(self.handed).decode(), "+FLAGS", "(\\Seen)")
            self.handed = []

    def _unseen(self, imap: imaplib.IMAP4) -> list[bytes]:
        kind, found = imap.uid("SEARCH", "UNSEEN")
        if kind != "OK":
            raise imaplib.IMAP4.error(f"SEARCH failed: {found}")
        return (found[0] or b"").split()[:FETCH_AT_ONCE]

    def _one(self, imap: imaplib.IMAP4, uid: bytes) -> tuple[bytes, int]:
        _, sized = imap.uid("FETCH", uid.decode(), "(RFC822.SIZE)")
        head = sized[0] if sized and isinstance(sized[0], bytes) else b""
        size = int(head.split(b"RFC822.SIZE", 1)[1].strip(b" ()").split()[0]) if b"RFC822.SIZE" in head else 0
        what = "BODY.PEEK[]" if size <= self.max_bytes else "BODY.PEEK[HEADER]"
        _, data = imap.uid("FETCH", uid.decode(), f"({what})")
        raw = next((bytes(part[1]) for part in data if isinstance(part, tuple)), b"")
        return raw, size

    def _imap(self) -> imaplib.IMAP4:
        host, tls = str(self.config.get("imap_host")), str(self.config.get("imap_tls", "ssl"))
        port = int(self.config.get("imap_port", 993 if tls == "ssl" else 143))
        if tls == "ssl":
            imap: imaplib.IMAP4 = imaplib.IMAP4_SSL(host, port, ssl_context=ssl.create_default_context(), timeout=60)
        else:
            imap = imaplib.IMAP4(host, port, timeout=60)
        if tls == "starttls":
            imap.starttls(ssl.create_default_context())
        imap.login(str(self.config.get("username") or self.address), self.config.secret)
        kind, said = imap.select(str(self.config.get("mailbox", "INBOX")))
        if kind != "OK":
            raise imaplib.IMAP4.error(f"cannot open mailbox {self.config.get('mailbox', 'INBOX')}: {said}")
        return imap

    # -- a mail as the desk reads it -------------------------------------------------------------------
    def inbound(self, validity: str, uid: str, raw: bytes, size: int) -> Inbound:
        mail = parse(raw)
        sender, why = vouched_sender(mail, self.authserv)
        own = message_id(mail) or f"<uid-{validity}-{uid}@imap>"
        root = thread_root(mail) or own
        claimed = sender or from_address(mail) or "?"
        ident = f"{sender or '?'} {own}"[:300]  # a stranger cannot spend a known sender's Message-ID
        self._remember(root, str(mail.get("Subject") or ""), own)
        if _automatic(mail):
            return Inbound(ident, "other", sender, f"{claimed} {root}", detail="automatic mail (a robot's): ignored")
        refusal, text, hidden = "", "", ""
        if size > self.max_bytes:
            refusal = f"That mail is {size} bytes; at most {self.max_bytes} are read. Nothing was run."
        else:
            text, hidden = readable(mail)
        found = parts(mail) if not refusal else []
        attachments = tuple(self._keep(f"{uid}:{i}", part) for i, part in enumerate(found))
        detail = "; ".join(p for p in ("" if sender else f"From {claimed}: {why}", hidden) if p)
        return Inbound(
            ident, "message", sender, f"{claimed} {root}", True, text,
            attachments=attachments, detail=detail, answerable=bool(sender), refusal=refusal,
        )  # fmt: skip

    def _keep(self, ref: str, part: Part) -> Attachment:
        self.parts[ref] = part
        return Attachment(part.name, len(part.data), ref, part.content_type)

    def _remember(self, root: str, subject: str, latest: str) -> None:
        known = self.threads.get(root)
        self.threads[root] = (known[0] if known else " ".join(subject.split())[:200], latest)
        if len(self.threads) > THREADS_KEPT:
            del self.threads[next(iter(self.threads))]

    # -- SMTP ------------------------------------------------------------------------------------------
    def _send(self, chat: str, text: str) -> str:
        to, _, root = chat.partition(" ")
        mail = self._mail(to, root, text)
        try:
            with self._smtp() as smtp:
                _accepted(smtp.mail(self.address), f"the sender {self.address}")
                _accepted(smtp.rcpt(to), to)
                code, said = smtp.data(mail.as_bytes())
        except smtplib.SMTPDataError as exc:
            raise Undeliverable(
                f"the mail server refused the mail to {to}: {exc.smtp_code} {_text(exc.smtp_error)}"
            ) from None
        except smtplib.SMTPAuthenticationError as exc:
            raise ChannelDown(
                f"{self.config.get('smtp_host')} refuses hearth's login: {_text(exc.smtp_error)}"
            ) from None
        except (OSError, smtplib.SMTPException) as exc:
            raise ChannelDown(f"cannot send mail through {self.config.get('smtp_host')}: {exc}") from None
        if root:
            self._remember(root, "", str(mail["Message-ID"]))
        return f"{mail['Message-ID']} {code} {_text(said)}"[:300]

    def _mail(self, to: str, root: str, text: str) -> EmailMessage:
        subject, latest = self.threads.get(root, ("", root)) if root else ("", "")
        mail = EmailMessage()
        mail["From"], mail["To"], mail["Date"] = self.address, to, formatdate(usegmt=True)
        first = text.strip().splitlines()[0][:70] if text.strip() else "hearth"
        mail["Subject"] = (
            subject if subject.lower().startswith("re:") else f"Re: {subject}" if subject else f"hearth: {first}"
        )
        mail["Message-ID"] = make_msgid("hearth", domain=self.address.rpartition("@")[2] or None)
        mail["Auto-Submitted"] = "auto-replied"
        if root:
            mail["In-Reply-To"] = latest or root
            mail["References"] = " ".join(dict.fromkeys([root, latest or root]))
        mail.set_content(text)
        return mail

    def _smtp(self) -> smtplib.SMTP:
        host, tls = str(self.config.get("smtp_host")), str(self.config.get("smtp_tls", "ssl"))
        port = int(self.config.get("smtp_port", {"ssl": 465, "starttls": 587}.get(tls, 25)))
        context = ssl.create_default_context()
        if tls == "ssl":
            smtp: smtplib.SMTP = smtplib.SMTP_SSL(host, port, context=context, timeout=60)
        else:
            smtp = smtplib.SMTP(host, port, timeout=60)
        smtp.ehlo()
        if tls == "starttls":
            smtp.starttls(context=context)
            smtp.ehlo()
        if smtp.has_extn("auth"):  # a server that asks for a login gets hearth's; a relay that does not, none
            smtp.login(str(self.config.get("username") or self.address), self.config.secret)
        return smtp


def _accepted(reply: tuple[int, bytes], what: str) -> None:
    code, said = reply
    if not 200 <= code < 300:
        raise Undeliverable(f"the mail server refused {what}: {code} {_text(said)}")


def _text(said: Any) -> str:
    return said.decode(errors="replace") if isinstance(said, bytes) else str(said)


def _validity(imap: imaplib.IMAP4) -> str:
    _, found = imap.response("UIDVALIDITY")
    return found[0].decode() if found and isinstance(found[0], bytes) else "0"


def _automatic(mail: EmailMessage) -> bool:
    auto = str(mail.get("Auto-Submitted") or "no").strip().lower()
    precedence = str(mail.get("Precedence") or "").strip().lower()
    return auto != "no" or precedence in AUTOMATIC_PRECEDENCE
