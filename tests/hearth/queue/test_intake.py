"""Queue intake with hostile files, through the real `hearth spawn` and `hearth agent` processes:
every malformed input is a one-line refusal and the pass goes on; what runs is what was recorded.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer
from tests.queue_support import FakeSystemctl, drop, listing, rows


def reasons(queue: Path) -> dict[str, str]:
    rejected = queue / "rejected"
    return {
        json.loads((rejected / n).read_text())["file"]: json.loads((rejected / n).read_text())["reason"]
        for n in listing(rejected)
        if n.endswith(".error.json")
    }


def test_huge_numbers_lone_surrogates_and_nuls_are_refused_one_line_each_and_the_pass_goes_on(state_dir: Path) -> None:
    queue = state_dir / "queue"
    drop(queue, "huge.json", b'{"id": "huge", "goal": "g", "max_iterations": ' + b"9" * 5000 + b"}")
    drop(queue, "surrogate.json", b'{"id": "surrogate", "goal": "say \\ud800"}')
    drop(queue, "nul.json", b'{"id": "nul", "goal": "g\\u0000rm -rf"}')
    drop(queue, "nulkey.json", b'{"id": "nulkey", "goal": "g", "a\\u0000": 1}')
    drop(queue, "nan.json", b'{"id": "nan", "goal": "g", "timeout_s": NaN}')
    drop(queue, "legacy-space.json", {"prompt": "p", "mode": " bypass"})
    drop(queue, "legacy-newline.json", {"prompt": "p", "mode": "bypass\n"})
    drop(queue, "good.json", {"id": "good", "goal": "fine"})
    with FakeOllama([final_answer("ok")], repeat_last=True) as fake:
        spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url})
    assert spawned.returncode == 0, spawned.stderr
    assert "internal error" not in spawned.stdout + spawned.stderr
    assert reasons(queue) == {
        "huge.json": "a number with 5000 digits; no field takes more than 20",
        "surrogate.json": "goal contains a lone surrogate (\\ud800), which is not text",
        "nul.json": "goal contains a NUL character (at position 1)",
        "nulkey.json": 'the key "a\\u0000" contains a NUL character (at position 1)',
        "nan.json": "not valid JSON: NaN is not a JSON number",
        "legacy-space.json": "mode must be 'plan', 'auto' or 'bypass', got \" bypass\"",
        "legacy-newline.json": "mode must be 'plan', 'auto' or 'bypass', got \"bypass\\n\"",
    }
    assert rows(state_dir, "select id, status from runs where status = 'done'") == [{"id": "good", "status": "done"}]
    assert listing(queue / "claimed") == [] and len(fake.requests) == 1


def test_the_run_executes_the_request_as_recorded_not_the_claimed_file_rewritten_after_its_check(
    state_dir: Path, tmp_path: Path
) -> None:
    systemctl = FakeSystemctl(tmp_path)
    queue = state_dir / "queue"
    drop(queue, "swap.json", {"id": "swap", "goal": "the goal that was checked"})
    assert run_cli("hearth", "spawn", env=systemctl.env()).returncode == 0
    assert systemctl.calls == ["start --no-block hearth-agent@swap.service"]
    # between the spawner's check and the unit's start, the file is rewritten in place
    (queue / "claimed" / "swap.json").write_text(json.dumps({"id": "swap", "goal": "a goal nobody checked"}))
    with FakeOllama([final_answer("ok")]) as fake:
        agent = run_cli("hearth", "agent", "swap", env={"OLLAMA_HOST": fake.url})
    assert agent.returncode == 0, agent.stderr
    assert "swap.json changed after it was checked" in agent.stderr
    assert fake.requests[0]["messages"][1]["content"] == "the goal that was checked"
    [run] = rows(state_dir, "select goal from runs")
    [request] = rows(state_dir, "select body from requests")
    assert run["goal"] == json.loads(request["body"])["goal"] == "the goal that was checked"


def test_racing_a_rewrite_of_each_claimed_file_never_runs_a_goal_other_than_the_recorded_one(state_dir: Path) -> None:
    queue = state_dir / "queue"
    for n in range(10):
        drop(queue, f"race-{n}.json", {"id": f"race-{n}", "goal": f"checked goal {n}"})
    stop = threading.Event()

    def rewrite() -> None:  # rewrites every claimed file once, as fast as it can see it
        done: set[str] = set()
        while not stop.is_set():
            for name in set(listing(queue / "claimed")) - done:
                try:
                    with open(queue / "claimed" / name, "r+b") as handle:
                        body = json.dumps({"id": name[:-5], "goal": f"tampered {name}"}).encode()
                        handle.truncate(0)
                        handle.write(body)
                except OSError:
                    pass
                done.add(name)

    rewriter = threading.Thread(target=rewrite, daemon=True)
    with FakeOllama([final_answer("ok")], repeat_last=True) as fake:
        rewriter.start()
        try:
            spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}, timeout=120)
        finally:
            stop.set()
            rewriter.join()
    assert spawned.returncode == 0, spawned.stderr
    # a rewrite that landed before the spawner's one reading is simply what was checked; the
    # invariant is that every goal sent to the model is the goal recorded for its run
    recorded = {r["id"]: json.loads(r["body"])["goal"] for r in rows(state_dir, "select id, body from requests")}
    done = rows(state_dir, "select id, goal from runs where status = 'done'")
    sent = [body["messages"][1]["content"] for body in fake.requests]
    assert sorted(sent) == sorted(recorded[r["id"]] for r in done) and len(done) == len(recorded)
    assert all(r["goal"] == recorded[r["id"]] for r in done)


def test_hard_linked_world_writable_and_foreign_owned_requests_are_refused_with_reasons(
    state_dir: Path, tmp_path: Path
) -> None:
    queue = state_dir / "queue"
    drop(queue, "linked.json", {"id": "linked", "goal": "g"})
    os.link(queue / "linked.json", tmp_path / "elsewhere.json")
    drop(queue, "open.json", {"id": "open", "goal": "g"})
    (queue / "open.json").chmod(0o666)
    env: dict[str, str] = {}
    if os.geteuid() == 0:  # only root can give a file to another user
        drop(queue, "foreign.json", {"id": "foreign", "goal": "g"})
        os.chown(queue / "foreign.json", 65534, 65534)
        env["HEARTH_SUBMITTERS_GROUP"] = "root"
    drop(queue, "mine.json", {"id": "mine", "goal": "g"})
    with FakeOllama([final_answer("ok")], repeat_last=True) as fake:
        spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url, **env})
    assert spawned.returncode == 0, spawned.stderr
    found = reasons(queue)
    assert found.pop("linked.json") == (
        "has 2 hard links; a request file must have one (another name could change it after its check)"
    )
    assert found.pop("open.json") == "writable by every user (mode 0666); anyone could change it after its check"
    if env:
        assert found.pop("foreign.json").endswith("who is not one of the submitters (group root)")
    assert found == {}
    assert rows(state_dir, "select id from runs where status = 'done'") == [{"id": "mine"}]


@pytest.mark.parametrize("where", ["", "claimed"])
def test_a_queue_directory_writable_by_every_user_stops_the_spawner_and_fails_doctor(
    state_dir: Path, where: str
) -> None:
    queue = state_dir / "queue"
    (queue / "claimed").mkdir(parents=True)
    opened = queue / where if where else queue
    opened.chmod(0o777)
    drop(queue, "waiting.json", {"id": "waiting", "goal": "g"})
    spawned = run_cli("hearth", "spawn", "--local")
    assert spawned.returncode == 2
    assert f"the queue directory {opened} is writable by every user (mode 0777); run: chmod o-w" in spawned.stderr
    assert listing(queue)[-1] == "waiting.json"  # nothing was claimed
    doctor = run_cli("hearth", "doctor")
    assert doctor.returncode == 1 and "writable by every user (mode 0777)" in doctor.stdout
