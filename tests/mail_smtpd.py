"""The SMTP half of the tests' mail pair: Debian's aiosmtpd (python3-aiosmtpd), run by /usr/bin/python3
as a subprocess (the venv does not have it), delivering into the Maildirs dovecot serves.

    /usr/bin/python3 tests/mail_smtpd.py PORT MAILDIRS AUTHSERV PASSES RECORD READY

It acts as the receiving server of the tests' mail domain: each message it accepts gets, on top, the
`Authentication-Results` header of AUTHSERV that a real server writes after its checks (here:
`spf=pass` when the envelope sender is listed in the file PASSES, one address a line, else
`spf=fail`), and goes into MAILDIRS/<local part of each recipient>/new, where dovecot reads it.
Every message is recorded as one JSON line in RECORD (envelope and the raw text), and the DATA
reply names a queue id, as a real server's does. READY is written once it listens.
"""

from __future__ import annotations

import json
import mailbox
import secrets
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP


class Server(SMTP):
    # Debian's aiosmtpd 1.4.3 reads DATA through a stream limited to one line's length and refuses
    # a mail of a few kilobytes as "Line too long"; a roomier stream keeps the 1,000-octet rule for
    # what a line may be in practice and lets the tests' large mails through
    line_length_limit = 1 << 20


class Receiver(Controller):
    def factory(self) -> Server:
        return Server(self.handler, data_size_limit=50_000_000, hostname="hearth.test")


class Receiving:
    def __init__(self, maildirs: Path, authserv: str, passes: Path, record: Path) -> None:
        self.maildirs, self.authserv, self.passes, self.record = maildirs, authserv, passes, record

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        sender = envelope.mail_from or ""
        passed = sender.lower() in self.passes.read_text().split() if self.passes.exists() else False
        verdict = "pass" if passed else "fail"
        header = f"Authentication-Results: {self.authserv}; spf={verdict} smtp.mailfrom={sender}\r\n"
        raw = header.encode() + envelope.original_content
        queue_id = secrets.token_hex(5).upper()
        for rcpt in envelope.rcpt_tos:
            box = mailbox.Maildir(self.maildirs / rcpt.split("@", 1)[0].lower(), create=True)
            box.add(raw)
        line = {"queue_id": queue_id, "mail_from": sender, "rcpt_tos": envelope.rcpt_tos, "spf": verdict}
        with self.record.open("a") as out:
            out.write(json.dumps(line | {"raw": raw.decode("utf-8", "replace")}) + "\n")
        return f"250 2.0.0 Ok: queued as {queue_id}"


def main(argv: list[str]) -> None:
    port, maildirs, authserv, passes, record, ready = argv
    handler = Receiving(Path(maildirs), authserv, Path(passes), Path(record))
    controller = Receiver(handler, hostname="127.0.0.1", port=int(port))
    controller.start()
    Path(ready).write_text(str(port))
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait()
    controller.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
