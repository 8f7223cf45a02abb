"""Attachments from both channels: a Telegram document (fetched with getFile from the fake Bot
API) and an e-mail attachment (from a real dovecot) go into the run's workspace under
attachments/, recorded with their SHA-256; a name that is a path is cut to its last part, a
name with a NUL, a type not taken, bytes that are not what the name says and a file past the
size limit are refused, recorded, and answered with why; nothing is written outside the inbox."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from hearth.channels.attachments import check, safe_name
from hearth.channels.inbox import inbox
from hearth.channels.message import Attachment, Fetched
from tests.channels_support import IDS, scenario, turn, until, with_email, with_telegram
from tests.cli_support import start_watch, stop_watch
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.fake_telegram import FakeTelegram
from tests.mail_servers import MailPair, compose
from tests.queue_support import rows

ADA = IDS["ada"]
NOTES = b"one\ntwo\nthree\n"


@pytest.fixture(autouse=True)
def _local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_LAUNCHER", "local")


def kept(state_dir: Path) -> list[dict[str, object]]:
    return rows(state_dir, "select sent_as, name, size, sha256, verdict, reason from channel_attachments order by id")


@pytest.mark.parametrize(
    ("sent", "kept_as"),
    [
        ("notes.txt", "notes.txt"),
        ("../x.txt", "x.txt"),
        ("/etc/passwd.txt", "passwd.txt"),
        ("..\\..\\win.txt", "win.txt"),
        (".bashrc.txt", "_bashrc.txt"),
        ("a b;rm -rf.txt", "a b_rm -rf.txt"),
        ("y" * 300 + ".txt", "y" * 96 + ".txt"),
        ("a\x00b.txt", ""),
        ("bell\x07.txt", ""),
        ("../", ""),
        ("..", ""),
    ],
)
def test_a_name_keeps_only_its_last_part_in_safe_characters_or_is_refused(sent: str, kept_as: str) -> None:
    name, why = safe_name(sent)
    assert name == kept_as
    assert bool(why) == (kept_as != sent)


@pytest.mark.parametrize(
    ("name", "data", "verdict"),
    [
        ("notes.txt", NOTES, "taken"),
        ("pic.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 10, "taken"),
        ("pic.png", b"MZ\x90\x00 a program", "refused"),
        ("notes.txt", b"\xff\xfe\x00binary", "refused"),
        ("tool.exe", b"MZ", "refused"),
        ("README", b"text", "refused"),
        ("big.txt", b"x" * 101, "refused"),
    ],
)
def test_a_type_must_be_taken_and_the_bytes_must_be_what_the_name_says(name: str, data: bytes, verdict: str) -> None:
    found = check(Fetched(Attachment(name, len(data), "ref"), data), 100, ("txt", "png"))
    assert found.verdict == verdict
    assert found.sha256 == hashlib.sha256(data).hexdigest()


def test_a_telegram_document_is_in_the_runs_workspace_before_its_first_step(state_dir: Path) -> None:
    script = [tool_call("read_file", {"path": "attachments/notes.txt"}), final_answer("three lines")]
    with FakeTelegram() as fake, FakeOllama(script) as model:
        box, service = with_telegram(state_dir, fake)
        watch = start_watch({"OLLAMA_HOST": model.url, "HEARTH_LAUNCHER": "local"})
        try:
            fake.document(ADA, "notes.txt", NOTES, caption="count the lines of the notes I sent")
            scenario(lambda: until(service, lambda: [t for t in fake.texts(ADA) if "three lines" in t], "the answer"))
        finally:
            stop_watch(watch)
    [run] = rows(state_dir, "select id, goal, workspace from runs")
    assert "attachments/notes.txt" in run["goal"]
    assert (Path(run["workspace"]) / "attachments" / "notes.txt").read_bytes() == NOTES
    read = model.requests[-1]["messages"][-1]
    assert (read["role"], read["content"]) == ("tool", NOTES.decode()), "the model read the file in its first step"
    [taken] = rows(state_dir, "select run_id, name, sha256, verdict from channel_attachments")
    assert taken == {
        "run_id": run["id"],
        "name": "notes.txt",
        "sha256": hashlib.sha256(NOTES).hexdigest(),
        "verdict": "taken",
    }
    assert not inbox(box.settings.state_dir, run["id"]).exists()


def test_a_telegram_file_named_as_a_path_is_renamed_and_a_refused_one_is_answered(state_dir: Path) -> None:
    with FakeTelegram() as fake:
        box, service = with_telegram(state_dir, fake, attachment_bytes=1000)

        async def work() -> None:
            fake.document(ADA, "../x.txt", NOTES, caption="keep this")
            await turn(service)
            fake.text(ADA, "/new")
            fake.document(ADA, "huge.txt", b"", caption="and this", size=5_000_000)
            fake.text(ADA, "/new")
            fake.document(ADA, "a\x00b.txt", NOTES, caption="and this")
            await turn(service)

        scenario(work)
    first, second, third = sorted(box.settings.queue_dir.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    staged = inbox(box.settings.state_dir, first.stem)
    assert [p.name for p in staged.iterdir()] == ["x.txt"] and (staged / "x.txt").read_bytes() == NOTES
    assert not (box.settings.state_dir / "channels" / "x.txt").exists()
    assert (
        not inbox(box.settings.state_dir, second.stem).exists()
        and not inbox(box.settings.state_dir, third.stem).exists()
    )
    assert [(k["sent_as"], k["name"], k["verdict"]) for k in kept(state_dir)] == [
        ("../x.txt", "x.txt", "renamed"),
        ("huge.txt", "", "refused"),
        ("a\\x00b.txt", "", "refused"),
    ]
    said = fake.texts(ADA)
    assert any(s.startswith("Kept as attachments/x.txt: '../x.txt': renamed from") for s in said)
    assert any("Not taken: 'huge.txt': it is 5000000 bytes; at most 1000 are taken." in s for s in said)
    assert any("Not taken: 'a\\\\x00b.txt': its name holds a NUL" in s for s in said)
    assert [c["file_id"] for c in fake.sent("getFile")] == ["file-1", "file-3"], "the huge one was never fetched"


def test_a_telegram_photo_is_taken_at_its_largest_size_and_a_fake_one_is_refused(state_dir: Path) -> None:
    jpeg = b"\xff\xd8\xff\xe0" + b"\x00" * 64
    with FakeTelegram() as fake:
        box, service = with_telegram(state_dir, fake)

        async def work() -> None:
            fake.photo(ADA, jpeg, caption="what is in this picture?")
            fake.text(ADA, "/new")
            fake.photo(ADA, b"#!/bin/sh\nrm -rf ~\n", caption="and this one?")
            await turn(service)

        scenario(work)
    [taken, refused] = kept(state_dir)
    assert (taken["name"], taken["verdict"], taken["sha256"]) == (
        "photo-ufile-1.jpg",
        "taken",
        hashlib.sha256(jpeg).hexdigest(),
    )
    assert (refused["verdict"], refused["reason"]) == ("refused", "its bytes are not JPG, as its name says")
    assert [c["file_id"] for c in fake.sent("getFile")] == ["file-1", "file-2"], "never the thumbnail"


def test_a_file_alone_runs_nothing_and_is_answered(state_dir: Path) -> None:
    with FakeTelegram() as fake:
        box, service = with_telegram(state_dir, fake)
        fake.document(ADA, "notes.txt", NOTES)
        scenario(lambda: turn(service))
    assert list(box.settings.queue_dir.glob("*.json")) == [] and kept(state_dir) == []
    assert fake.texts(ADA)[0].startswith("Say what to do with it")


def test_an_email_attachment_named_as_a_path_is_renamed_and_one_not_taken_is_answered(state_dir: Path) -> None:
    people = ("hearth", "ada", "bob", "vic", "off", "own")
    with MailPair("root", people) as pair:
        pair.passes(*(pair.address(p) for p in people))
        box, service = with_email(state_dir, pair)
        mail = compose("ada@hearth.test", "summarise the attached notes")
        mail.add_attachment(NOTES, maintype="text", subtype="plain", filename="../x.txt")
        mail.add_attachment(b"MZ\x90\x00", maintype="application", subtype="octet-stream", filename="tool.exe")
        pair.send(mail, "ada@hearth.test")
        scenario(lambda: turn(service))
        [reply] = pair.inbox("ada")
    [queued] = list(box.settings.queue_dir.glob("*.json"))
    assert (inbox(box.settings.state_dir, queued.stem) / "x.txt").read_bytes() == NOTES
    assert [(k["sent_as"], k["name"], k["verdict"], k["sha256"]) for k in kept(state_dir)] == [
        ("../x.txt", "x.txt", "renamed", hashlib.sha256(NOTES).hexdigest()),
        ("tool.exe", "", "refused", hashlib.sha256(b"MZ\x90\x00").hexdigest()),
    ]
    body = reply.get_content()
    assert "Kept as attachments/x.txt: '../x.txt'" in body and "Not taken: 'tool.exe': type .exe is not taken" in body
    assert reply["In-Reply-To"] == mail["Message-ID"]
