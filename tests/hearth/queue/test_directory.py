"""The queue directory on a real file system: atomic claims, no-replace moves, hostile entries, run locks."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hearth.locks import RunLock, lock_holder, lock_is_held
from hearth.queue.directory import Queue, is_temp_name, read_request_bytes
from hearth.queue.intake import RequestRefused
from hearth.queue.request import Request
from tests.conftest import ROOT
from tests.queue_support import listing
from tests.walls_support import as_who


def make_queue(tmp_path: Path) -> Queue:
    return Queue(tmp_path / "queue").ensure()


def test_enqueue_writes_the_whole_request_and_never_replaces_one(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    path = queue.enqueue(Request(id="job-1", goal="first"))
    assert json.loads(path.read_text()) == {
        "version": 1,
        "id": "job-1",
        "goal": "first",
        "agent_name": "default",
        "timeout_s": 3600,
        "source": "cli",
        "requested_by": "",
        "evolve": False,
    }
    with pytest.raises(FileExistsError):
        queue.enqueue(Request(id="job-1", goal="second"))
    assert json.loads(path.read_text())["goal"] == "first"
    assert listing(queue.root) == ["claimed", "failed", "job-1.json", "locks", "rejected"]  # no temp left


def _claim_all(root: str, names: list[str], out: multiprocessing.Queue) -> None:
    queue = Queue(Path(root))
    out.put([name for name in names if queue.claim(name) is not None])


def test_racing_processes_each_claim_a_file_at_most_once_and_together_all(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    names = [f"r{i:03}.json" for i in range(300)]
    for name in names:
        (queue.root / name).write_text("{}")
    results: multiprocessing.Queue = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=_claim_all, args=(str(queue.root), names, results)) for _ in range(6)]
    for proc in procs:
        proc.start()
    won = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(60)
    flat = [name for part in won for name in part]
    assert sorted(flat) == names  # every file claimed exactly once across six racing processes
    assert listing(queue.claimed) == names


def test_a_claim_never_replaces_a_request_already_claimed(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    (queue.claimed / "dup.json").write_text("running one")
    (queue.root / "dup.json").write_text("second one")
    with pytest.raises(FileExistsError):
        queue.claim("dup.json")
    assert (queue.claimed / "dup.json").read_text() == "running one"


def test_a_rejected_file_is_kept_with_its_reason_and_never_overwrites_an_earlier_one(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    for content in ("first", "second"):
        (queue.root / "bad.json").write_text(content)
        queue.reject(queue.root / "bad.json", f"{content} reason", run_id="r")
    kept = [n for n in listing(queue.rejected) if not n.endswith(".error.json")]
    assert len(kept) == 2 and "bad.json" in kept
    for name in kept:
        record = json.loads((queue.rejected / f"{name}.error.json").read_text())
        assert record["reason"] == f"{(queue.rejected / name).read_text()} reason" and record["file"] == "bad.json"
        assert (queue.rejected / f"{name}.error.json").stat().st_mode & 0o777 == 0o640  # the submitters' group reads it


def test_a_hidden_name_is_kept_visible_and_an_undecodable_name_is_recorded_as_text(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    odd = os.fsdecode(b"caf\xe9.json")
    (queue.root / ".half.tmp").write_text("x")
    (queue.root / odd).write_text("x")
    assert queue.reject(queue.root / ".half.tmp", "abandoned") == queue.rejected / "half.tmp"
    kept = queue.reject(queue.root / odd, "not UTF-8")
    record = json.loads(Path(str(kept) + ".error.json").read_text())
    assert record["file"] == "caf\\xe9.json"


def test_moving_a_file_someone_else_already_moved_is_a_quiet_no(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    assert queue.claim("gone.json") is None
    assert queue.reject(queue.root / "gone.json", "x") is None


def test_reading_refuses_links_directories_fifos_and_floods_without_reading_them(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    secret = tmp_path / "secret.json"
    secret.write_text('{"id": "secret", "goal": "read me"}')
    (queue.root / "link.json").symlink_to(secret)
    (queue.root / "dir.json").mkdir()
    os.mkfifo(queue.root / "pipe.json")  # opening it for reading would block forever
    (queue.root / "big.json").write_bytes(b" " * ((1 << 20) + 1))
    reasons = {}
    for name in ("link.json", "dir.json", "pipe.json", "big.json"):
        with pytest.raises(RequestRefused) as caught:
            read_request_bytes(queue.root / name)
        reasons[name] = str(caught.value)
    assert reasons == {
        "link.json": "a symlink, not a request file (the queue never follows links)",
        "dir.json": "a directory, not a request file",
        "pipe.json": "not a regular file but a fifo",
        "big.json": "larger than 1 MiB (1048577 bytes)",
    }


def test_incoming_lists_oldest_first_and_skips_the_queue_s_own_directories(tmp_path: Path) -> None:
    queue = make_queue(tmp_path)
    for i, name in enumerate(("c.json", "a.json", "b.json")):
        (queue.root / name).write_text("{}")
        os.utime(queue.root / name, (1000 + i, 1000 + i))
    assert [e.name for e in queue.incoming()] == ["c.json", "a.json", "b.json"]


@pytest.mark.parametrize(
    ("name", "temp"),
    [
        (".x.json.1a2b.tmp", True),
        ("x.json.tmp", True),
        ("x.json.part", True),
        ("x.json~", True),
        ("x.json", False),
        ("x.tmp.json", False),
    ],
)
def test_temp_names_are_recognised(name: str, temp: bool) -> None:
    assert is_temp_name(name) is temp


HOLD_LOCK = """
import sys, time
from pathlib import Path
from hearth.locks import RunLock
lock = RunLock.try_acquire(Path(sys.argv[1]))
print("held" if lock else "busy", flush=True)
time.sleep(60)
"""


def test_a_run_lock_is_held_while_its_process_lives_and_freed_by_the_kernel_when_it_is_killed(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        assert lock_is_held(path) and lock_holder(path) == holder.pid
        assert RunLock.try_acquire(path) is None
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert not lock_is_held(path)
    lock = RunLock.try_acquire(path)
    assert lock is not None and lock_holder(path) == os.getpid()
    lock.release(remove=True)
    assert not path.exists()


def test_a_lock_file_removed_and_recreated_is_never_shared_by_two_holders(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    first = RunLock.try_acquire(path)
    first.release(remove=True)  # settled: the file is gone; the next holder makes a new one
    second = RunLock.try_acquire(path)
    assert second is not None and os.fstat(second.fd).st_ino == path.stat().st_ino
    assert RunLock.try_acquire(path) is None
    second.release(remove=True)


HOLD_BRIEFLY = """
import sys, time
from pathlib import Path
from hearth.locks import RunLock
lock = RunLock.try_acquire(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_acquiring_waits_out_a_brief_holder_but_not_a_live_run(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    glance = subprocess.Popen(
        [sys.executable, "-c", HOLD_BRIEFLY, str(path), "0.3"], stdout=subprocess.PIPE, text=True, env=env
    )
    assert glance.stdout.readline().strip() == "held"  # a sweep looking at the lock
    lock = RunLock.acquire(path, wait_s=5.0)
    assert lock is not None and lock_holder(path) == os.getpid()
    lock.release(remove=False)
    glance.wait()
    run = subprocess.Popen(
        [sys.executable, "-c", HOLD_BRIEFLY, str(path), "60"], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert run.stdout.readline().strip() == "held"  # a live run
        assert RunLock.acquire(path, wait_s=0.2) is None
    finally:
        run.kill()
        run.wait()


def test_a_file_that_cannot_be_read_is_refused_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(RequestRefused, match="^cannot be read: No such file or directory$"):
        read_request_bytes(tmp_path / "vanished.json")


def test_a_submitter_who_may_not_look_into_claimed_is_told_nothing_rather_than_crashing() -> None:
    """hearth's own claimed/ (0700) hides what is there from a submitter: known() skips it, so
    `hearth enqueue --id` as a member of hearth-submit does not crash (seen under a booted systemd)."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to make a directory another user may not look into")
    base = Path(tempfile.mkdtemp(prefix="hearth-queue-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        queue = Queue(base / "queue").ensure()
        os.chmod(queue.root, 0o755)
        (queue.claimed / "taken.json").write_text("{}")
        os.chmod(queue.claimed, 0o700)
        probe = f"from pathlib import Path; from hearth.queue.directory import Queue; print(Queue(Path({str(queue.root)!r})).known('taken'))"
        done = subprocess.run(
            [*as_who("user"), sys.executable, "-c", probe],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "None"
        assert Queue(queue.root).known("taken") == "claimed"  # hearth itself sees it
    finally:
        shutil.rmtree(base)
