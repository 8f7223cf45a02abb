"""The spawner in process, launching through a recording fake `systemctl` (a real executable on PATH):
hostile entries, duplicates, files still being written, abandoned temp files, claims that never started.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hearth.audit.store import AuditStore, RunRecord
from hearth.dispatch.launchers import launcher_for
from hearth.dispatch.pause import pause
from hearth.dispatch.spawner import Spawner
from hearth.errors import ConfigError
from hearth.queue.directory import PASS_NAMES
from hearth.settings import Settings
from tests.queue_support import FakeSystemctl, drop, listing, rows

ID_RULE = "use 1-64 characters from A-Z a-z 0-9 . _ - starting with a letter or digit"


@pytest.fixture
def systemctl(tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSystemctl:
    fake = FakeSystemctl(tmp_path)
    for key, value in fake.env().items():
        monkeypatch.setenv(key, value)
    return fake


def spawner(**kwargs: float) -> Spawner:
    settings = Settings.from_env()
    return Spawner(settings, launcher_for(settings, "systemd"), **kwargs)


def error_of(kept: Path) -> dict[str, object]:
    return json.loads(kept.with_name(kept.name + ".error.json").read_text())


def queue_dir(state_dir: Path) -> Path:
    return state_dir / "queue"


def test_hostile_entries_never_start_a_run_and_each_is_rejected_with_its_reason(
    state_dir: Path, tmp_path: Path, systemctl: FakeSystemctl
) -> None:
    queue = queue_dir(state_dir)
    drop(queue, "good.json", {"id": "good", "goal": "fine"})
    (queue / "link.json").symlink_to("/etc/passwd")
    (queue / "dir.json").mkdir()
    (queue / "dir.json" / "inside.json").write_text("{}")
    os.mkfifo(queue / "pipe.json")
    drop(queue, "big.json", json.dumps({"id": "big", "goal": "x" * (2 << 20)}).encode())
    drop(queue, os.fsdecode(b"caf\xe9.json"), {"id": "cafe", "goal": "g"})
    drop(queue, "evil\nname.json", {"id": "evil", "goal": "g"})
    drop(queue, "notes.txt", b"remember the milk")
    drop(queue, "..json", {"id": ".", "goal": "g"})
    for entry in os.listdir(queue):
        os.utime(queue / entry, (time.time() - 60, time.time() - 60), follow_symlinks=False)
    with spawner() as s:
        s.run()
    assert systemctl.calls == ["start --no-block hearth-agent@good.service"]
    kept = {
        error_of(queue / "rejected" / n)["file"]: error_of(queue / "rejected" / n)["reason"]
        for n in listing(queue / "rejected")
        if not n.endswith(".error.json")
    }
    assert kept == {
        "link.json": "a symlink, not a request file (the queue never follows links)",
        "dir.json": "a directory, not a request file",
        "pipe.json": "not a regular file but a fifo",
        "big.json": f"larger than 1 MiB ({(queue / 'rejected' / 'big.json').stat().st_size} bytes)",
        "caf\\xe9.json": 'id "cafe" does not match the file name "caf\\\\xe9.json"',
        "evil\\nname.json": 'id "evil" does not match the file name "evil\\\\nname.json"',
        "notes.txt": "not a .json file; requests are named <id>.json",
    }
    assert (queue / "rejected" / "dir.json" / "inside.json").exists()  # kept whole, not walked
    assert os.readlink(queue / "rejected" / "link.json") == "/etc/passwd"  # the link itself, never its target
    audit = rows(state_dir, "select r.status, r.error, j.file from runs r join rejections j on j.run_id = r.id")
    assert sorted(a["file"] for a in audit) == sorted(kept) and all(a["status"] == "rejected" for a in audit)
    assert {a["file"]: a["error"] for a in audit} == kept
    assert listing(queue / "claimed") == ["good.json"] and listing(queue / "failed") == []
    assert sorted(listing(queue)) == ["..json", "claimed", "failed", "locks", "rejected"]  # "..json" is a temp name


def test_a_rejection_records_the_file_size_and_sha256(state_dir: Path, systemctl: FakeSystemctl) -> None:
    body = b'{"id": "bad", "goal": 12}'
    drop(queue_dir(state_dir), "bad.json", body)
    with spawner() as s:
        s.run()
    [row] = rows(state_dir, "select * from rejections")
    assert (row["size"], row["file"], row["request_id"]) == (len(body), "bad.json", "bad")
    assert row["sha256"] == __import__("hashlib").sha256(body).hexdigest()
    assert row["reason"] == "goal must be a valid string, got 12"
    assert error_of(queue_dir(state_dir) / "rejected" / "bad.json")["run_id"] == row["run_id"]


def test_a_duplicate_of_an_existing_run_is_rejected_and_the_run_untouched(
    state_dir: Path, systemctl: FakeSystemctl
) -> None:
    Settings.from_env().writable_state_dir()
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(RunRecord(id="dup", agent_name="a", model="m", goal="the original", mode="auto"))
        audit.finish_run("dup", status="done")
    drop(queue_dir(state_dir), "dup.json", {"id": "dup", "goal": "again"})
    with spawner() as s:
        s.run()
    assert systemctl.calls == []
    assert error_of(queue_dir(state_dir) / "rejected" / "dup.json")["reason"] == (
        "duplicate id: run dup already exists (status done); give the request a new id"
    )
    [original] = rows(state_dir, "select * from runs where id = 'dup'")
    assert (original["goal"], original["status"]) == ("the original", "done")


def test_a_duplicate_of_a_request_still_claimed_is_rejected_and_the_claimed_one_kept(
    state_dir: Path, systemctl: FakeSystemctl
) -> None:
    queue = queue_dir(state_dir)
    drop(queue, "twin.json", {"id": "twin", "goal": "first"})
    with spawner() as s:
        s.run()
        drop(queue, "twin.json", {"id": "twin", "goal": "second"})
        s.run()
    assert json.loads((queue / "claimed" / "twin.json").read_text())["goal"] == "first"
    reason = error_of(queue / "rejected" / "twin.json")["reason"]
    assert reason == "duplicate id: request twin is already claimed and running"
    assert systemctl.calls == ["start --no-block hearth-agent@twin.service"]


def test_a_file_still_being_written_in_place_is_waited_for_and_then_started(
    state_dir: Path, systemctl: FakeSystemctl
) -> None:
    queue = queue_dir(state_dir)
    queue.mkdir(parents=True, exist_ok=True)
    (queue / "slow.json").write_text('{"id": "slow", "goal": "wri')
    with spawner(settle_s=30.0) as s:
        step = s.drain()
        assert step.retry_in is not None and 0 < step.retry_in <= 30.0
        assert listing(queue / "claimed") == [] and systemctl.calls == []
        (queue / "slow.json").write_text('{"id": "slow", "goal": "written at last"}')
        assert s.drain().retry_in is None
    assert systemctl.calls == ["start --no-block hearth-agent@slow.service"]


def test_a_file_that_stays_incomplete_is_rejected_once_it_has_settled(
    state_dir: Path, systemctl: FakeSystemctl
) -> None:
    queue = queue_dir(state_dir)
    queue.mkdir(parents=True, exist_ok=True)
    (queue / "cut.json").write_text('{"id": "cut", "goal": "the writer died here')
    written = (queue / "cut.json").stat().st_mtime
    with spawner(settle_s=0.3) as s:
        s.run()  # waits out the settle time, then rejects
    # it was rejected only once the file had been still for the settle time (a load can only make
    # that later, never sooner: the bound is the file's own age, not how long this test waited)
    assert time.time() - written >= 0.3
    assert error_of(queue / "rejected" / "cut.json")["reason"].startswith("not valid JSON: Unterminated string")


def test_a_temp_file_is_left_alone_while_fresh_and_rejected_once_abandoned(
    state_dir: Path, systemctl: FakeSystemctl
) -> None:
    queue = queue_dir(state_dir)
    queue.mkdir(parents=True, exist_ok=True)
    (queue / ".job.json.tmp").write_text('{"id": "job", "go')
    with spawner() as s:
        s.run()
        assert listing(queue)[0] == ".job.json.tmp"
        os.utime(queue / ".job.json.tmp", (time.time() - 3600, time.time() - 3600))
        s.run()
    reason = error_of(queue / "rejected" / "job.json.tmp")["reason"]
    assert reason.startswith("an abandoned temporary file (not renamed into place for 3")
    assert rows(state_dir, "select status from runs") == [{"status": "rejected"}]


def test_a_claim_whose_agent_never_started_goes_to_failed_after_the_grace_period(
    state_dir: Path, systemctl: FakeSystemctl
) -> None:
    queue = queue_dir(state_dir)
    drop(queue, "lost.json", {"id": "lost", "goal": "g", "agent_name": "scout"})
    with spawner() as s:
        s.run()  # systemctl "started" it, but nothing will ever run it
        s.sweep()
        assert listing(queue / "claimed") == ["lost.json"]  # young claims are left alone
    with spawner(grace_s=0.0) as s:
        s.sweep()
    assert listing(queue / "failed") == ["lost.json", "lost.json.error.json"]
    assert error_of(queue / "failed" / "lost.json")["reason"].startswith("claimed, but its agent never started")
    [run] = rows(state_dir, "select * from runs")
    assert (run["id"], run["status"], run["agent_name"]) == ("lost", "failed", "scout")
    assert listing(queue / "claimed") == [] and listing(queue / "locks") == []


def test_a_unit_that_cannot_be_started_leaves_its_request_in_failed_with_the_reason(
    state_dir: Path, systemctl: FakeSystemctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYSTEMCTL_FAIL_START", "1")
    drop(queue_dir(state_dir), "nounit.json", {"id": "nounit", "goal": "g"})
    with spawner() as s:
        assert s.run() == 1
    reason = (
        "systemctl start --no-block hearth-agent@nounit.service failed: "
        "Failed to start hearth-agent@nounit.service: Unit hearth-agent@nounit.service not found."
    )
    assert error_of(queue_dir(state_dir) / "failed" / "nounit.json")["reason"] == reason
    assert rows(state_dir, "select status, error from runs") == [{"status": "failed", "error": reason}]


def test_requests_are_started_oldest_first_one_unit_each(state_dir: Path, systemctl: FakeSystemctl) -> None:
    queue = queue_dir(state_dir)
    for i, name in enumerate(("c", "a", "b")):
        drop(queue, f"{name}.json", {"id": name, "goal": "g", "source": "timer"})
        os.utime(queue / f"{name}.json", (1000 + i, 1000 + i))
    with spawner() as s:
        s.run()
    assert systemctl.calls == [f"start --no-block hearth-agent@{n}.service" for n in ("c", "a", "b")]
    accepted = rows(state_dir, "select id, shape, source, sha256 from requests order by id")
    assert [(r["id"], r["shape"], r["source"]) for r in accepted] == [
        ("a", "v1", "timer"),
        ("b", "v1", "timer"),
        ("c", "v1", "timer"),
    ]


def test_junk_left_in_claimed_by_a_spawner_that_died_is_rejected_after_the_grace_period(
    state_dir: Path, systemctl: FakeSystemctl
) -> None:
    claimed = queue_dir(state_dir) / "claimed"
    claimed.mkdir(parents=True)
    (claimed / "notes.txt").write_text("half-handled")
    with spawner(grace_s=0.0) as s:
        s.sweep()
    assert error_of(queue_dir(state_dir) / "rejected" / "notes.txt")["reason"].startswith("left in claimed/")
    assert listing(claimed) == []


def test_an_unusable_queue_directory_is_one_line_naming_the_setting(
    state_dir: Path, tmp_path: Path, systemctl: FakeSystemctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    monkeypatch.setenv("HEARTH_QUEUE_DIR", str(tmp_path / "a-file" / "queue"))
    with pytest.raises(ConfigError, match="cannot use the queue directory .*: Not a directory; set HEARTH_QUEUE_DIR"):
        spawner()


def test_a_flood_is_taken_a_bounded_batch_a_pass_oldest_first_and_the_next_pass_goes_on(
    state_dir: Path, systemctl: FakeSystemctl
) -> None:
    queue = queue_dir(state_dir)
    old = time.time() - 600
    for n in range(PASS_NAMES + 5):
        drop(queue, f"junk-{n:04d}.json", b"{not json")
        os.utime(queue / f"junk-{n:04d}.json", (old + n, old + n))
    with spawner() as s:
        first = s.drain()
        assert first.took == PASS_NAMES and first.retry_in == 0.0  # more wait: go on at once
        assert sorted(os.listdir(queue / "rejected"))[0] == "junk-0000.json"
        assert len([n for n in os.listdir(queue) if n.startswith("junk-")]) == 5  # the 5 newest are left
        second = s.drain()
    assert second.took == 5 and second.retry_in is None
    assert listing(queue) == ["claimed", "failed", "locks", "rejected"]


def test_fresh_temp_names_never_fill_a_batch_ahead_of_a_request(state_dir: Path, systemctl: FakeSystemctl) -> None:
    queue = queue_dir(state_dir)
    older = time.time() - 60  # older than the request, but not yet abandoned
    for n in range(PASS_NAMES + 1):
        drop(queue, f".upload-{n:04d}.json", b"{")
        os.utime(queue / f".upload-{n:04d}.json", (older, older))
    drop(queue, "real.json", {"id": "real", "goal": "g"})
    os.utime(queue / "real.json", (older + 1, older + 1))
    with spawner() as s:
        step = s.drain()
    assert step.took == 1 and step.retry_in is None  # started in the first pass; the temp names wait
    assert any("hearth-agent@real" in call for call in systemctl.calls)
    assert len([n for n in os.listdir(queue) if n.startswith(".upload-")]) == PASS_NAMES + 1


def test_a_paused_pass_names_at_most_a_batch_of_a_flood_and_counts_the_rest(
    state_dir: Path, systemctl: FakeSystemctl
) -> None:
    queue = queue_dir(state_dir)
    for n in range(PASS_NAMES + 40):
        drop(queue, f"req-{n:04d}.json", {"id": f"req-{n:04d}", "goal": "g"})
    pause(Settings.from_env(), by="test", reason="flood")
    said: list[tuple[str, str, str]] = []
    settings = Settings.from_env()
    with Spawner(settings, launcher_for(settings, "systemd"), report=lambda *r: said.append(r)) as s:
        step = s.drain()
        again = s.drain()  # the same flood again: nothing said twice
    assert step.paused and again.paused
    assert len(said) == PASS_NAMES + 1 and said[-1][1] == "40 more"
    assert systemctl.calls == []
