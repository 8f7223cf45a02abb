"""Every model call of a run asks for the name the run resolved: with only `qwen2.5-coder:7b` pulled,
a request for `qwen2.5-coder` runs `:7b`, and so do a marathon's judge, a swarm's planner, its
children and synthesis, the web extractor and compaction; the embedder asks for the tag the server
has. The fake answers 404 for any other name, as Ollama does."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, concept_vectors, final_answer, tool_call
from tests.long_support import Script, verdict, write
from tests.queue_support import rows

PULLED = ("qwen2.5-coder:7b",)  # `qwen2.5-coder` names it: the only tag of that name


def asked(fake: FakeOllama) -> set[str]:
    return {body["model"] for body in fake.requests}


def test_a_marathons_judge_asks_for_the_model_its_legs_run(state_dir: Path) -> None:
    script = Script(
        legs={1: [write("draft\n"), final_answer("Drafted.")], 2: [write("FINAL\n"), final_answer("Finished.")]},
        judged=[verdict(False, "Only a draft.", "Finish it."), verdict(True, "Finished.")],
    )
    with FakeOllama([script], repeat_last=True, models=PULLED) as fake:
        queued = run_cli("hearth", "enqueue", "--marathon", "3", "write report.md", "--id", "mara")
        assert queued.returncode == 0, queued.stderr
        spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}, timeout=120)
    assert spawned.returncode == 0, spawned.stderr
    assert len(script.seen["judge"]) == 2 and asked(fake) == {"qwen2.5-coder:7b"}
    [marathon] = rows(state_dir, "select * from runs where id = 'mara'")
    assert (marathon["status"], marathon["model"], marathon["model_reason"]) == ("done", "qwen2.5-coder:7b", "tag")


def test_a_swarms_planner_children_and_synthesis_ask_for_the_resolved_model(state_dir: Path) -> None:
    plan = ["Write a.txt.", "Write b.txt."]

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        if body["messages"][0]["content"].startswith("You split a goal"):
            return final_answer(json.dumps(plan))
        return final_answer("done")

    with FakeOllama([reply], repeat_last=True, models=PULLED) as fake:
        queued = run_cli("hearth", "enqueue", "write two files", "--id", "sw", "--swarm", "2")
        assert queued.returncode == 0, queued.stderr
        spawned = run_cli("hearth", "spawn", "--local", "--concurrency", "2", env={"OLLAMA_HOST": fake.url})
    assert spawned.returncode == 0, spawned.stderr
    statuses = {r["id"]: (r["status"], r["model"]) for r in rows(state_dir, "select * from runs")}
    done = ("done", "qwen2.5-coder:7b")
    assert statuses == {"sw": done, "sw-w1": done, "sw-w2": done, "sw-synthesis": done}
    assert len(fake.requests) == 4 and asked(fake) == {"qwen2.5-coder:7b"}


def test_a_swarm_whose_model_is_not_pulled_ends_model_unavailable_with_the_routers_line(state_dir: Path) -> None:
    with FakeOllama([final_answer("[]")], repeat_last=True, models=PULLED) as fake:
        queued = run_cli("hearth", "enqueue", "write it", "--id", "sw", "--swarm", "2", "--model", "qwen2.5-codr")
        assert queued.returncode == 0, queued.stderr
        spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url})
    assert spawned.returncode == 0, spawned.stderr
    [swarm] = rows(state_dir, "select * from runs")
    assert swarm["status"] == "model_unavailable" and fake.requests == []
    assert "model qwen2.5-codr is not pulled" in swarm["error"] and "did you mean qwen2.5-coder:7b?" in swarm["error"]


def run_on(fake: FakeOllama, state_dir: Path, tmp_path: Path, request: GoalRequest) -> str:
    settings = Settings.from_env(
        {"HEARTH_STATE_DIR": str(state_dir), "HEARTH_CONFIG_DIR": str(tmp_path / "cfg"), "OLLAMA_HOST": fake.url}
    )
    _, outcome = run_goal(request, settings, out=io.StringIO())
    return outcome.status


def test_compaction_asks_for_the_resolved_model(tmp_path: Path, state_dir: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(12):
        (ws / f"f{i:02d}.txt").write_text(f"{i:02d} " + "x" * 1400)
    reads = iter(range(12))

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("tools"):
            return final_answer("the summary")
        i = next(reads, None)
        return tool_call("read_file", {"path": f"f{i:02d}.txt"}) if i is not None else final_answer("read them all")

    request = GoalRequest(
        goal="read them",
        model="qwen2.5-coder",
        workspace=ws,
        num_ctx=4096,
        max_iters=40,
        mode="bypass",
        allowed_tools=["read_file"],
    )
    with FakeOllama([reply], repeat_last=True, models=PULLED) as fake:
        assert run_on(fake, state_dir, tmp_path, request) == "done"
    summaries = [body for body in fake.requests if not body.get("tools")]
    assert summaries and asked(fake) == {"qwen2.5-coder:7b"}


def test_the_embedder_asks_for_the_tag_the_server_has(tmp_path: Path, state_dir: Path) -> None:
    embedders = {"nomic-embed-text:v1.5": concept_vectors({"backups": ("backup",)})}
    with FakeOllama([], models=PULLED, embedders=embedders) as fake:
        env = {"OLLAMA_HOST": fake.url, "HEARTH_EMBED_MODEL": "nomic-embed-text"}
        added = run_cli("hearth", "kb", "add", "--text", "the backups run at night", env=env)
        assert added.returncode == 0, added.stderr
        found = run_cli("hearth", "kb", "search", "backups", env=env)
    assert found.returncode == 0 and "the backups run at night" in found.stdout
    assert [e["model"] for e in fake.embeds][-1] == "nomic-embed-text:v1.5"
    assert "by text only" not in added.stdout + added.stderr
