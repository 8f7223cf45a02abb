"""What a received mail says, and who may be said to have sent it: a leaf of pure functions over
the standard library's `email` package (and lxml for HTML, already installed with trafilatura).

Who sent it (`vouched_sender`): the From address only when the receiving server vouched for it.
hearth reads ONE header, the topmost `Authentication-Results` (RFC 8601): a receiving server adds
its own on top as it accepts the mail, so the topmost is the last one written, by the last server,
which is ours when `authserv_id` is our server's name. Any lower one, or one with another name,
may have been written by the sender and is never read. It vouches when it says `dmarc=pass`, or
`dkim=pass` with `header.d` the From domain, or `spf=pass` with `smtp.mailfrom` in the From
domain; anything else (no such header, another server's on top, `fail`, a From with two
addresses, a pass for another domain) vouches for no one.

What it says (`readable`): the text/plain part when there is one; else the text/html part as a
reader would see it: scripts, styles, comments and every element a browser would not show are
dropped (`hidden`, `aria-hidden="true"`, inline `display:none`, `visibility:hidden`, a zero font
size or opacity, and classes a `<style>` block hides that way), hidden text being how a mail
smuggles instructions past the person who forwards it. Quoted lines (`>`, and everything from an
"On ... wrote:" line) are left out: a reply's new text is what is meant. The Subject stands in
for an empty body.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import getaddresses
from typing import Any

HIDING = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d]*[1-9])|opacity\s*:\s*0(?![.\d]*[1-9])", re.I
)
HIDDEN_CLASS = re.compile(r"\.([A-Za-z_][\w-]*)\s*\{([^}]*)\}")
QUOTE_START = re.compile(r"^On .{0,300} wrote:\s*$")
INVISIBLE_TAGS = ("script", "style", "head", "template", "noscript", "title")


@dataclass(frozen=True)
class Part:
    """One attachment as the mail carried it: its name as the sender wrote it, never trusted."""

    name: str
    content_type: str
    data: bytes


def parse(raw: bytes) -> EmailMessage:
    mail: EmailMessage = message_from_bytes(raw, policy=policy.default)
    return mail


def from_address(mail: EmailMessage) -> str:
    """The one address in From, lowercased; '' when there is none or more than one."""
    found = getaddresses([str(v) for v in mail.get_all("From") or []])
    addresses = {a.strip().lower() for _, a in found if "@" in a}
    return addresses.pop() if len(addresses) == 1 else ""


def vouched_sender(mail: EmailMessage, authserv: str) -> tuple[str, str]:
    """(the From address the receiving server vouched for, or ''; why not, or '')."""
    address = from_address(mail)
    if not address:
        return "", "no single From address"
    results = [str(v) for v in mail.get_all("Authentication-Results") or []]
    if not results:
        return "", f"no Authentication-Results: {authserv} did not check the sender"
    top = results[0]
    if _authserv(top) != authserv.lower():
        return "", f"the topmost Authentication-Results is not {authserv}'s: the sender is not vouched for"
    if _passes(top.lower(), address.rpartition("@")[2]):
        return address, ""
    return "", f"From {address} failed {authserv}'s checks (no dmarc, aligned dkim or aligned spf pass)"


def _authserv(header: str) -> str:
    words = header.split(";", 1)[0].split()
    return words[0].lower() if words else ""


def _passes(results: str, domain: str) -> bool:
    if re.search(r"\bdmarc=pass\b", results):
        return True
    for dkim in re.finditer(r"\bdkim=pass\b[^;]*?header\.d=([^\s;]+)", results):
        if dkim.group(1) == domain:
            return True
    for spf in re.finditer(r"\bspf=pass\b[^;]*?smtp\.mailfrom=([^\s;]+)", results):
        if spf.group(1).rpartition("@")[2].strip("<>") == domain:
            return True
    return False


def thread_root(mail: EmailMessage) -> str:
    """The Message-ID that starts the thread this mail is in: the first of References, else
    In-Reply-To, else its own (a new thread)."""
    for header in ("References", "In-Reply-To", "Message-ID"):
        found = re.findall(r"<[^<>\s]{1,250}>", str(mail.get(header) or ""))
        if found:
            return found[0]
    return ""


def message_id(mail: EmailMessage) -> str:
    found = re.findall(r"<[^<>\s]{1,250}>", str(mail.get("Message-ID") or ""))
    return found[0] if found else ""


def readable(mail: EmailMessage) -> tuple[str, str]:
    """The text a person would read, and what was dropped for being hidden ('' when nothing)."""
    text, hidden = "", ""
    plain = mail.get_body(preferencelist=("plain",))
    if plain is not None:
        text = _content(plain)
    else:
        html = mail.get_body(preferencelist=("html",))
        if html is not None:
            text, dropped = visible_text(_content(html))
            hidden = f"hidden HTML dropped ({dropped} elements)" if dropped else ""
    text = unquoted(text)
    return text or str(mail.get("Subject") or "").strip(), hidden


def _content(part: Any) -> str:
    try:
        return str(part.get_content())
    except (LookupError, ValueError):  # an unknown charset: read what can be read
        return bytes(part.get_payload(decode=True) or b"").decode("utf-8", "replace")


def visible_text(html: str) -> tuple[str, int]:
    """An HTML body's text without what a reader would not see; how many elements were dropped for
    being hidden (scripts, styles and the head are never text, and not counted)."""
    import lxml.html  # type: ignore[import-untyped]  # lxml comes with trafilatura
    from lxml import etree

    if not html.strip():
        return "", 0
    try:
        root = lxml.html.fromstring(html)
    except (etree.ParserError, ValueError):
        return "", 0
    hidden_classes = _hidden_classes(root)
    unseen = [e for e in root.iter() if isinstance(e.tag, str) and e.tag in INVISIBLE_TAGS]
    doomed = [e for e in root.iter() if isinstance(e.tag, str) and _hidden(e, hidden_classes)]
    for element in [*unseen, *doomed]:
        if element.getparent() is not None:
            element.drop_tree()
    text = "\n".join(" ".join(line.split()) for line in root.text_content().splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip(), len(doomed)


def _hidden_classes(root: Any) -> set[str]:
    css = " ".join(style.text_content() for style in root.iter("style"))
    return {name for name, body in HIDDEN_CLASS.findall(css) if HIDING.search(body)}


def _hidden(element: Any, hidden_classes: set[str]) -> bool:
    if element.get("hidden") is not None or element.get("aria-hidden") == "true":
        return True
    if HIDING.search(element.get("style") or ""):
        return True
    return bool(hidden_classes & set((element.get("class") or "").split()))


def unquoted(text: str) -> str:
    kept = []
    for line in text.splitlines():
        if QUOTE_START.match(line.strip()):
            break
        if not line.lstrip().startswith(">"):
            kept.append(line.rstrip())
    return "\n".join(kept).strip()


def parts(mail: EmailMessage) -> list[Part]:
    """The mail's attachments (parts with a filename or marked as attachments), decoded."""
    found = []
    for index, part in enumerate(mail.iter_attachments()):
        data = part.get_payload(decode=True)
        payload = data if isinstance(data, bytes) else b""
        found.append(Part(str(part.get_filename() or f"attachment-{index + 1}"), part.get_content_type(), payload))
    return found
