"""A real IMAP/SMTP pair on loopback for the e-mail channel's tests: Debian's dovecot (IMAP, a
generated configuration, Maildirs, passwords from a file) and Debian's aiosmtpd (tests/mail_smtpd.py,
the receiving server that writes Authentication-Results and delivers into dovecot's Maildirs), each
a subprocess of the test, as root or as an ordinary user (`who`: dovecot drops to nobody through
setpriv with everything in a directory nobody owns). Mail hearth sends through the SMTP server
arrives in the recipient's IMAP mailbox for real; a test reads it there with imaplib.

Skipped, with the reason, when dovecot or python3-aiosmtpd is not installed.
"""

from __future__ import annotations

import imaplib
import json
import os
import shutil
import smtplib
import socket
import subprocess
import tempfile
import time
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import Any

import pytest

DOVECOT = "/usr/sbin/dovecot"
SYSTEM_PYTHON = "/usr/bin/python3"
AUTHSERV = "mx.hearth.test"
DOMAIN = "hearth.test"
PASSWORD = "mail-secret"
NOBODY = 65534
CONFIG = """\
protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = {user}
default_internal_group = {group}
default_login_user = {login}
first_valid_uid = 0
mail_location = maildir:{root}/mail/%n
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%n {root}/passwd
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={root}/home/%n
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
}}
service stats {{
  unix_listener stats-reader {{
    mode = 0600
  }}
  unix_listener stats-writer {{
    mode = 0600
  }}
}}
"""


def compose(
    sender: str, text: str, subject: str = "a goal", reply_to: Any = None, html: str = "", **headers: str
) -> EmailMessage:
    """A person's mail to hearth@: a new thread, or a reply in `reply_to`'s (In-Reply-To and
    References as a mail client writes them); `html` makes it multipart/alternative, or HTML
    alone when `text` is empty."""
    mail = EmailMessage()
    mail["From"], mail["To"] = sender, f"hearth@{DOMAIN}"
    mail["Subject"] = f"Re: {reply_to['Subject']}" if reply_to is not None else subject
    mail["Message-ID"] = make_msgid("person", domain=DOMAIN)
    if reply_to is not None:
        earlier = str(reply_to.get("References") or "").split()
        mail["In-Reply-To"] = str(reply_to["Message-ID"])
        mail["References"] = " ".join([*earlier, str(reply_to["Message-ID"])])
    for name, value in headers.items():
        mail[name.replace("_", "-")] = value
    if text:
        mail.set_content(text)
        if html:
            mail.add_alternative(html, subtype="html")
    else:
        mail.set_content(html, subtype="html")
    return mail


def available() -> None:
    if not os.access(DOVECOT, os.X_OK):
        pytest.skip("dovecot is not installed (apt-get install dovecot-imapd)")
    found = subprocess.run([SYSTEM_PYTHON, "-c", "import aiosmtpd"], capture_output=True)
    if found.returncode != 0:
        pytest.skip("aiosmtpd is not installed for /usr/bin/python3 (apt-get install python3-aiosmtpd)")


class MailPair:
    """dovecot and aiosmtpd sharing one directory of Maildirs; mailboxes are local parts of
    DOMAIN (hearth@, ada@, ...), each with PASSWORD."""

    def __init__(self, who: str = "root", users: tuple[str, ...] = ("hearth",)) -> None:
        available()
        self.who = who if os.geteuid() == 0 else "user"
        self.root = Path(tempfile.mkdtemp(prefix="hm-", dir="/tmp"))  # short: dovecot's socket paths
        self.users = users
        self.imap_port, self.smtp_port = _free_port(), _free_port()
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> MailPair:
        self._lay_out()
        try:
            self._start_dovecot()
            self._start_smtpd()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if not os.environ.get("KEEP_MAIL"):
            shutil.rmtree(self.root, ignore_errors=True)

    # -- what a test does with it -------------------------------------------------------------------
    def address(self, user: str) -> str:
        return f"{user}@{DOMAIN}"

    def passes(self, *addresses: str) -> None:
        """The envelope senders whose SPF check passes at the receiving server."""
        (self.root / "smtp" / "passes").write_text("\n".join(a.lower() for a in addresses) + "\n")

    def send(self, mail: EmailMessage | bytes, mail_from: str, to: str = "") -> None:
        """Hand a mail to the receiving server, as another server on the Internet would."""
        raw = mail if isinstance(mail, bytes) else mail.as_bytes()
        with smtplib.SMTP("127.0.0.1", self.smtp_port, timeout=60) as smtp:
            smtp.sendmail(mail_from, [to or self.address("hearth")], raw)

    def received(self) -> list[dict[str, Any]]:
        """Every message the SMTP server accepted, in order (envelope, verdict, queue id, raw)."""
        path = self.root / "smtp" / "record.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def inbox(self, user: str) -> list[Any]:
        """The messages in that user's INBOX, read over IMAP."""
        with imaplib.IMAP4("127.0.0.1", self.imap_port, timeout=60) as imap:
            imap.login(user, PASSWORD)
            imap.select("INBOX", readonly=True)
            _, found = imap.uid("SEARCH", "ALL")
            mails = []
            for uid in (found[0] or b"").split():
                _, data = imap.uid("FETCH", uid.decode(), "(BODY.PEEK[])")
                raw = next(part[1] for part in data if isinstance(part, tuple))
                mails.append(message_from_bytes(raw, policy=policy.default))
            return mails

    def log(self) -> str:
        path = self.root / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # -- starting ------------------------------------------------------------------------------------
    def _lay_out(self) -> None:
        for part in ("run", "state", "mail", "home", "smtp"):
            (self.root / part).mkdir()
        (self.root / "passwd").write_text("".join(f"{u}:{PASSWORD}\n" for u in self.users))
        mail_uid, mail_gid = self._mail_ids()
        # as root, dovecot's own helpers must be unprivileged: Debian's dovecot and dovenull users
        root = self.who == "root" and os.geteuid() == 0
        internal, login = ("dovecot", "dovenull") if root else (_name_of(mail_uid), _name_of(mail_uid))
        values = {"root": self.root, "user": internal, "login": login, "group": _group_of(mail_gid)}
        values |= {"uid": mail_uid, "gid": mail_gid}
        (self.root / "dovecot.conf").write_text(CONFIG.format(port=self.imap_port, **values))
        shutil.copy(Path(__file__).with_name("mail_smtpd.py"), self.root / "mail_smtpd.py")
        self.root.chmod(0o711)  # dovecot's unprivileged auth process reads the password file
        (self.root / "passwd").chmod(0o644)
        owned = (
            [self.root, *self.root.rglob("*")]
            if not root
            else [self.root / "mail", self.root / "home", self.root / "smtp"]
        )
        if mail_uid != os.geteuid():
            for path in owned:
                os.chown(path, mail_uid, mail_gid)

    def _mail_ids(self) -> tuple[int, int]:
        """Who owns the mail: dovecot refuses uid 0, so as root it is Debian's dovecot user; as an
        ordinary user (nobody, when the test runs as root) that user."""
        if os.geteuid() != 0:
            return os.getuid(), os.getgid()
        if self.who == "root":
            import pwd

            found = pwd.getpwnam("dovecot")
            return found.pw_uid, found.pw_gid
        return NOBODY, NOBODY

    def _as(self, uid: int) -> list[str]:
        if uid == os.geteuid():
            return []
        return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]

    def _start_dovecot(self) -> None:
        who = os.geteuid() if self.who == "root" else self._mail_ids()[0]
        argv = [*self._as(who), DOVECOT, "-F", "-c", str(self.root / "dovecot.conf")]
        self.procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        self._until(lambda: _greets(self.imap_port, b"* OK"), "dovecot to answer on IMAP")

    def _start_smtpd(self) -> None:
        r = self.root / "smtp"
        argv = [*self._as(self._mail_ids()[0]), SYSTEM_PYTHON, str(self.root / "mail_smtpd.py")]
        argv += [str(self.smtp_port), str(self.root / "mail")]
        argv += [AUTHSERV, str(r / "passes"), str(r / "record.jsonl"), str(r / "smtpd-ready")]
        self.procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        self._until(lambda: (r / "smtpd-ready").exists(), "aiosmtpd to listen")

    def _until(self, ready: Any, what: str) -> None:
        """Wait on the condition; a server that exits first fails with its own words."""
        deadline = time.monotonic() + 60
        while not ready():
            dead = [p for p in self.procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                said = dead[0].stderr.read().decode(errors="replace") if dead and dead[0].stderr else ""
                raise AssertionError(f"gave up waiting for {what}: {said[-2000:]}{self.log()[-2000:]}")
            time.sleep(0.05)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _greets(port: int, greeting: bytes) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            return sock.recv(64).startswith(greeting)
    except OSError:
        return False


def _name_of(uid: int) -> str:
    import pwd

    return pwd.getpwuid(uid).pw_name


def _group_of(gid: int) -> str:
    import grp

    return grp.getgrgid(gid).gr_name
