"""Who a mail's Authentication-Results vouch for: only the topmost header, only when it is the
receiving server's own (its authserv-id), only for a pass aligned with the From domain."""

from __future__ import annotations

import pytest

from hearth.channels.mailtext import parse, thread_root, vouched_sender

OURS = "mx.hearth.test"


def mail(*results: str, sender: str = "ada@hearth.test") -> bytes:
    headers = "".join(f"Authentication-Results: {r}\r\n" for r in results)
    return f"{headers}From: {sender}\r\nTo: hearth@hearth.test\r\nSubject: s\r\n\r\nbody\r\n".encode()


@pytest.mark.parametrize(
    ("results", "sender", "vouched"),
    [
        ((f"{OURS}; dmarc=pass header.from=hearth.test",), "ada@hearth.test", "ada@hearth.test"),
        ((f"{OURS}; dkim=pass header.d=hearth.test",), "Ada <ADA@hearth.test>", "ada@hearth.test"),
        ((f"{OURS}; spf=pass smtp.mailfrom=bounce@hearth.test",), "ada@hearth.test", "ada@hearth.test"),
        ((f"{OURS}; dkim=pass header.d=evil.test",), "ada@hearth.test", ""),
        ((f"{OURS}; spf=pass smtp.mailfrom=m@evil.test",), "ada@hearth.test", ""),
        ((f"{OURS}; spf=fail smtp.mailfrom=ada@hearth.test",), "ada@hearth.test", ""),
        (("relay.evil.test; dmarc=pass", f"{OURS}; dmarc=pass"), "ada@hearth.test", ""),
        ((f"{OURS}; spf=fail", f"{OURS}; dmarc=pass"), "ada@hearth.test", ""),
        ((), "ada@hearth.test", ""),
        ((f"{OURS}; dmarc=pass",), "ada@hearth.test, own@hearth.test", ""),
    ],
)
def test_only_the_receiving_servers_topmost_results_vouch_for_the_from_address(
    results: tuple[str, ...], sender: str, vouched: str
) -> None:
    found, why = vouched_sender(parse(mail(*results, sender=sender)), OURS)
    assert found == vouched and bool(why) != bool(vouched)


def test_a_thread_is_named_by_the_first_message_id_of_its_references() -> None:
    raw = b"Message-ID: <c@x>\r\nIn-Reply-To: <b@x>\r\nReferences: <a@x> <b@x>\r\n\r\nbody\r\n"
    assert thread_root(parse(raw)) == "<a@x>"
    assert thread_root(parse(b"Message-ID: <c@x>\r\n\r\nbody\r\n")) == "<c@x>"
