"""Follow-ups as real processes against the fake Ollama: `hearth-loop --continue`, `hearth continue`
through the queue, what the model is sent, the audit's links, `hearth show --chain`, refusals."""

from __future__ import annotations

import json
import os
import pwd
import shutil
from pathlib import Path

import pytest

from hearth.audit.store import AuditStore, RunRecord
from hearth.settings import Settings
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, assert_every_request_legal, final_answer, tool_call
from tests.long_support import Script, verdict, write
from tests.queue_support import drop, rows, wait_for
from tests.web_support import Center


def loop(fake: FakeOllama, *args: str) -> tuple[int, str, str]:
    proc = run_cli("hearth-loop", "--ollama-host", fake.url, *args)
    return proc.returncode, proc.stdout, proc.stderr


def only_run(state_dir: Path, where: str, *params: str) -> dict[str, object]:
    [run] = rows(state_dir, f"select * from runs where {where}", *params)
    return run


def test_a_follow_up_sees_the_earlier_run_and_reuses_its_system_prompt_bytes(state_dir: Path, tmp_path: Path) -> None:
    prompts = tmp_path / "config" / "prompts"
    prompts.mkdir(parents=True)  # placeholders that differ from run to run, unless a follow-up reuses them
    (prompts / "00-run.md").write_text("This is run {{runId}}, started {{currentDateTimeIso}}.\n")
    workspace = tmp_path / "ws"
    script = [
        tool_call("write_file", {"path": "plan.md", "content": "1. write the code\n"}),
        final_answer("Wrote plan.md with a one-step plan."),
        {"content": ""},  # unusable, and unusable again when asked again: the nudge, inside a follow-up
        {"content": ""},
        final_answer("Updated the docs as well."),
    ]
    with FakeOllama(script) as fake:
        code, _, err = loop(fake, "--workspace", str(workspace), "write a plan to plan.md")
        assert code == 0, err
        first = only_run(state_dir, "parent_run is null")
        code, _, err = loop(fake, "--continue", str(first["id"]), "yes, and also update the docs")
        assert code == 0, err
    earlier, follow_up = fake.requests[0], fake.requests[2]
    assert_every_request_legal(fake.requests)
    assert follow_up["messages"][0]["content"] == earlier["messages"][0]["content"]  # the same bytes: cache reuse
    assert follow_up["tools"] == earlier["tools"]
    opening = follow_up["messages"][1]["content"]
    assert f"## Earlier run {first['id']}" in opening and "write a plan to plan.md" in opening
    assert "Wrote plan.md with a one-step plan." in opening  # its final summary
    assert 'write_file {"path": "plan.md"' in opening  # its last messages, the tool call among them
    assert opening.endswith("## Goal\nyes, and also update the docs")
    second = only_run(state_dir, "parent_run = ?", str(first["id"]))
    assert (second["link"], second["workspace"], second["status"]) == ("follow-up", first["workspace"], "done")
    [note] = rows(state_dir, "select * from steps where run_id = ? and kind = 'prompt'", second["id"])
    assert "the same bytes as run" in note["detail"]
    shown = run_cli("hearth", "show", str(first["id"]))
    assert f"follow-up: run {second['id']}  done" in shown.stdout
    chain = run_cli("hearth", "show", str(second["id"]), "--chain").stdout
    assert chain.index("person: write a plan") < chain.index("agent:  Wrote plan.md") < chain.index("person: yes, and")


def test_continues_in_a_queued_request_runs_in_the_earlier_workspace_and_extends_the_chain(state_dir: Path) -> None:
    script = [
        tool_call("write_file", {"path": "a.txt", "content": "a"}),
        final_answer("Wrote a.txt."),
        final_answer("a.txt is there; added nothing."),
    ]
    with FakeOllama(script) as fake:
        code, _, err = loop(fake, "write a.txt")
        assert code == 0, err
        first = only_run(state_dir, "1 = 1")
        queued = run_cli("hearth", "continue", str(first["id"]), "check a.txt", "--id", "then-check")
        assert queued.returncode == 0 and queued.stdout.strip() == "then-check", queued.stderr
        spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url})
        assert spawned.returncode == 0, spawned.stderr
    after = only_run(state_dir, "id = 'then-check'")
    assert (after["status"], after["parent_run"], after["link"]) == ("done", first["id"], "follow-up")
    assert after["workspace"] == first["workspace"]  # not a fresh agents/then-check
    assert "Wrote a.txt." in fake.requests[2]["messages"][1]["content"]
    chain = run_cli("hearth", "show", "then-check", "--chain").stdout
    assert chain.startswith("conversation of 2 runs") and "person: check a.txt" in chain


def test_a_run_still_running_or_whose_workspace_and_history_or_profile_is_gone_is_not_continued(
    state_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "config" / "agents" / "builder").mkdir(parents=True)
    with FakeOllama([tool_call("write_file", {"path": "a.txt", "content": "a"}), final_answer("done it")]) as fake:
        code, _, err = loop(fake, "--agent-name", "builder", "--workspace", str(tmp_path / "ws"), "do it")
        assert code == 0, err
        earlier = str(only_run(state_dir, "1 = 1")["id"])
        with AuditStore(state_dir / "audit.db") as audit:
            audit.start_run(RunRecord(id="busy", agent_name="default", model="m", goal="g", mode="auto"))
        refusals = {}
        refusals["running"] = loop(fake, "--continue", "busy", "more")
        shutil.rmtree(tmp_path / "config" / "agents" / "builder")
        refusals["profile"] = loop(fake, "--continue", earlier, "more")
        (tmp_path / "config" / "agents" / "builder").mkdir()
        shutil.rmtree(tmp_path / "ws")  # gone, but its history is there: restored (not refused)
        [history] = {r["git_dir"] for r in rows(state_dir, "select git_dir from checkpoints where run_id = ?", earlier)}
        shutil.rmtree(history)  # and now nothing is left to continue from
        refusals["workspace"] = loop(fake, "--continue", earlier, "more")
        queued = run_cli("hearth", "continue", "busy", "more")
    assert len(fake.requests) == 2  # none of them reached the model
    assert all(code == 2 for code, _, _ in refusals.values())
    assert "run busy is still running; continue it once it has ended" in refusals["running"][2]
    assert "agent profile 'builder' no longer exists" in refusals["profile"][2]
    assert f"workspace {tmp_path / 'ws'} is gone, and run {earlier}'s checkpoint history" in refusals["workspace"][2]
    assert queued.returncode == 2 and "still running" in queued.stderr
    rejected = rows(state_dir, "select parent_run, link, error from runs where status = 'rejected' order by rowid")
    assert [(r["parent_run"], r["link"]) for r in rejected] == [("busy", "follow-up")] + [(earlier, "follow-up")] * 2


def test_a_follow_up_of_a_whole_marathon_starts_from_its_last_leg_s_files_when_its_workspace_is_gone(
    state_dir: Path,
) -> None:
    script = Script(legs={1: [write("FINAL\n"), final_answer("Wrote the report.")]}, judged=[verdict(True, "Done.")])
    with FakeOllama([script], repeat_last=True) as fake:
        code, _, err = loop(fake, "--marathon", "2", "write the final report into report.md")
        assert code == 0, err
    [marathon] = rows(state_dir, "select * from runs where kind = 'marathon'")
    shutil.rmtree(str(marathon["workspace"]))  # only hearth's own history is left
    read = [tool_call("read_file", {"path": "report.md"}), final_answer("The report says FINAL.")]
    with FakeOllama(read) as fake:
        code, _, err = loop(fake, "--continue", str(marathon["id"]), "what does the report say?")
        assert code == 0, err
    follow = only_run(state_dir, "link = 'follow-up'")
    assert follow["status"] == "done" and follow["workspace"] != marathon["workspace"]
    assert (Path(str(follow["workspace"])) / "report.md").read_text() == "FINAL\n"
    [restored] = rows(state_dir, "select * from steps where run_id = ? and kind = 'restore'", follow["id"])
    leg_commits = {
        r["commit_sha"] for r in rows(state_dir, "select commit_sha from checkpoints where run_id like '%-leg1'")
    }
    assert any(sha[:12] in str(restored["detail"]) for sha in leg_commits if sha)


def test_the_run_page_s_follow_up_form_queues_a_follow_up_that_runs(state_dir: Path) -> None:
    with FakeOllama([final_answer("Made the list."), final_answer("Sorted it too.")]) as fake:
        code, _, err = loop(fake, "make a list")
        assert code == 0, err
        first = str(only_run(state_dir, "1 = 1")["id"])
        with Center(Settings.from_env()) as center:
            center.start_watch(fake.url)
            client = center.client()
            assert 'id="follow-up"' in client.get(f"/runs/{first}").text
            answer = client.post_form(f"/runs/{first}/continue", {"goal": "now sort it"})
            assert answer.status_code == 303, answer.text
            follow_up = answer.headers["location"].removeprefix("/runs/").removesuffix("?queued=1")
            wait_for(lambda: rows(state_dir, "select status from runs where id = ? and status = 'done'", follow_up))
            refused = client.post_form("/runs/no-such-run/continue", {"goal": "x"})
    [run] = rows(state_dir, "select * from runs where id = ?", follow_up)
    assert (run["parent_run"], run["link"], run["source"]) == (first, "follow-up", "command-center")
    assert "Made the list." in fake.requests[1]["messages"][1]["content"]
    assert refused.status_code == 404 and "cannot be continued: it is unknown" in refused.text


def test_the_launch_form_queues_a_marathon_or_a_swarm(state_dir: Path) -> None:
    with Center(Settings.from_env()) as center:
        client = center.client()
        assert 'name="long" value="marathon"' in client.get("/launch").text
        form = {"goal": "finish it", "long": "marathon", "legs": "3", "check_files": "a.txt, b.txt", "id": "m-1"}
        assert client.post_form("/launch", form).status_code == 303
        assert (
            client.post_form("/launch", {"goal": "split it", "long": "swarm", "workers": "2", "id": "s-1"}).status_code
            == 303
        )
        refused = client.post_form("/launch", {"goal": "too many", "long": "swarm", "workers": "17", "id": "s-2"})
    queued = state_dir / "queue"
    assert json.loads((queued / "m-1.json").read_text())["marathon"] == {
        "max_legs": 3,
        "check": {"files": ["a.txt", "b.txt"]},
    }
    assert json.loads((queued / "s-1.json").read_text())["swarm"] == {"max_workers": 2}
    assert refused.status_code == 422 and "Workers must be at most 16, got 17" in refused.text
    assert 'id="error-swarm"' in refused.text


def test_who_may_continue_a_queued_run_is_its_asker_under_its_profile_or_an_operator(
    state_dir: Path, tmp_path: Path
) -> None:
    for name in ("builder", "reviewer"):
        (tmp_path / "config" / "agents" / name).mkdir(parents=True)
    queue = state_dir / "queue"
    asked = {"goal": "write a.txt", "agent_name": "builder", "requested_by": "alice"}
    follow_ups = {
        "by-mallory": {"requested_by": "mallory"},
        "by-nobody": {},
        "alice-as-reviewer": {"requested_by": "alice", "agent_name": "reviewer"},
        "alice-again": {"requested_by": "alice"},
    }
    script = [tool_call("write_file", {"path": "a.txt", "content": "a"}), final_answer("Wrote a.txt.")]
    with FakeOllama([*script, final_answer("Checked it."), final_answer("Reviewed it.")]) as fake:
        drop(queue, "first.json", {"version": 1, "id": "first", **asked})
        assert run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}).returncode == 0
        for name, body in follow_ups.items():
            drop(queue, f"{name}.json", {"version": 1, "id": name, "goal": "go on", "continues": "first", **body})
        spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url})
        assert spawned.returncode == 0, spawned.stderr
        # an operator (here root) may continue anyone's run, and under another profile
        root = {"requested_by": "root", "agent_name": "reviewer"}
        drop(
            queue,
            "root-review.json",
            {"version": 1, "id": "root-review", "goal": "review", "continues": "first", **root},
        )
        assert run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}).returncode == 0
    assert len(fake.requests) == 4  # the first run's two turns, alice's follow-up, root's: no refused one
    runs = {row["id"]: row for row in rows(state_dir, "select * from runs")}
    for refused in ("by-mallory", "by-nobody", "alice-as-reviewer"):
        assert (runs[refused]["status"], runs[refused]["parent_run"]) == ("rejected", "first"), refused
    assert "mallory may not continue run first: it was asked for by alice" in runs["by-mallory"]["error"]
    assert "(nobody named) may not continue run first" in runs["by-nobody"]["error"]
    assert (
        "alice may not continue run first (profile 'builder') under profile 'reviewer'"
        in (runs["alice-as-reviewer"]["error"])
    )
    assert (runs["alice-again"]["status"], runs["alice-again"]["agent_name"]) == ("done", "builder")
    assert (runs["root-review"]["status"], runs["root-review"]["agent_name"]) == ("done", "reviewer")
    assert runs["root-review"]["requested_by"] == "root"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a queue file to another owner needs root")
def test_a_follow_up_file_of_another_owner_is_believed_only_as_that_owner(state_dir: Path) -> None:
    queue = state_dir / "queue"
    with FakeOllama([final_answer("Wrote nothing.")]) as fake:
        drop(queue, "first.json", {"version": 1, "id": "first", "goal": "g", "requested_by": "alice"})
        assert run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}).returncode == 0
        forged = {"requested_by": "root", "source": "command-center", "continues": "first"}
        path = drop(queue, "forged.json", {"version": 1, "id": "forged", "goal": "go on", **forged})
        os.chown(path, pwd.getpwnam("nobody").pw_uid, -1)  # a submitter's file claiming to be an operator's
        assert run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}).returncode == 0
    [run] = rows(state_dir, "select * from runs where id = 'forged'")
    assert run["status"] == "rejected" and "nobody may not continue run first" in run["error"]
    assert (run["requested_by"], run["source"]) == ("nobody", "cli") and len(fake.requests) == 1
