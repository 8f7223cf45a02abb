"""A whole conversation by e-mail, end to end: hearth's channel reads its mailbox in a real dovecot
over IMAP and sends through a real SMTP server (aiosmtpd) that delivers into dovecot, a real
`hearth watch` runs each run against the fake Ollama, and a real command center takes the
approval's signed link. A new mail is a run whose answer comes as one mail in its thread; a reply
in the thread is a follow-up in the same workspace; an approval arrives as a mail with links, and
the link decides as the user it was sent to; /stop in a thread stops its run. Every mail hearth
sent is a delivery the SMTP server acknowledged with its queue id, and arrived in IMAP."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from hearth.channels.service import ChannelService
from hearth.settings import Settings
from tests.channels_support import check_conversation, until, with_email
from tests.cli_support import start_watch, stop_watch
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.mail_servers import MailPair, compose
from tests.queue_support import rows
from tests.web_support import Center

ADA = "ada@hearth.test"
PEOPLE = ("hearth", "ada", "bob", "vic", "off", "own", "eve")


def mails_with(pair: MailPair, part: str) -> list[Any]:
    return [m for m in pair.inbox("ada") if part in m.get_body(preferencelist=("plain",)).get_content()]


@pytest.mark.parametrize("who", ["root", "user"])
def test_a_goal_a_follow_up_in_the_thread_an_approval_by_link_and_a_stop(
    who: str, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEARTH_LAUNCHER", "local")
    script = [
        tool_call("write_file", {"path": "notes.txt", "content": "three points"}),
        final_answer("wrote notes.txt with three points"),
        tool_call("run_command", {"command": "cat notes.txt"}),
        final_answer("notes.txt says: three points"),
        tool_call("run_command", {"command": "sleep 600"}),
    ]
    with MailPair(who, PEOPLE) as pair, FakeOllama(script, repeat_last=True) as model:
        pair.passes(*(pair.address(p) for p in PEOPLE))
        with Center(Settings.from_env()) as center:
            box, service = with_email(state_dir, pair, web_url=center.url)
            watch = start_watch({"OLLAMA_HOST": model.url, "HEARTH_LAUNCHER": "local"})
            try:
                asyncio.run(_conversation(pair, service, center))
            finally:
                stop_watch(watch)
        accepted = {r["queue_id"] for r in pair.received() if r["mail_from"] == pair.address("hearth")}
    check_conversation(state_dir, "email")
    sent = rows(state_dir, "select status, message_id from deliveries where chat like ?", f"{ADA}%")
    assert sent and all(d["status"] == "delivered" for d in sent)
    assert {re.search(r"queued as (\w+)", d["message_id"]).group(1) for d in sent} <= accepted  # type: ignore[union-attr]


async def _conversation(pair: MailPair, service: ChannelService, center: Center) -> None:
    goal = compose(ADA, "write three points into notes.txt", subject="notes")
    pair.send(goal, ADA)
    [answer] = await until(service, lambda: mails_with(pair, "wrote notes.txt"), "the first answer")
    assert answer["In-Reply-To"] == goal["Message-ID"] and goal["Message-ID"] in answer["References"]
    assert answer["Subject"] == "Re: notes" and answer["Auto-Submitted"] == "auto-replied"
    assert not mails_with(pair, "On it"), "mail says the answer once, at the end"

    pair.send(compose(ADA, "what does notes.txt say?", reply_to=answer), ADA)
    [approval] = await until(service, lambda: mails_with(pair, "asks to run run_command"), "the approval")
    body = approval.get_body(preferencelist=("plain",)).get_content()
    assert "cat notes.txt" in body and "/approve " in body
    link = re.search(r"Approve: (\S+)", body).group(1)  # type: ignore[union-attr]
    assert link.startswith(center.url + "/act/")
    assert httpx.post(link, headers={"Origin": center.url}, timeout=30).status_code == 200
    [said] = await until(service, lambda: mails_with(pair, "notes.txt says: three points"), "the follow-up's answer")
    assert goal["Message-ID"] in said["References"], "the follow-up's answer is in the same thread"

    long = compose(ADA, "run something long", subject="long")
    pair.send(long, ADA)
    await until(service, lambda: len(mails_with(pair, "asks to run run_command")) == 2, "the wait")
    pair.send(compose(ADA, "/stop", reply_to=long), ADA)
    [stopped] = await until(service, lambda: mails_with(pair, "ended interrupted"), "the stop")
    assert long["Message-ID"] in stopped["References"]
