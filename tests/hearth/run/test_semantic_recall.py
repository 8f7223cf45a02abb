"""End to end: a lesson comes back to a goal worded differently (by meaning, through the fake's
/api/embed), and with the embedder gone the same run starts, recalls by text and says why once."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.agent.knowledge.test_semantic import CONCEPTS, needs_vec
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, concept_vectors, final_answer, tool_call

LESSON = "The backup job needs the NAS mounted first."


def first_user_messages(fake: FakeOllama) -> list[str]:
    return [r["messages"][1]["content"] for r in fake.requests if len(r["messages"]) == 2]


def loop(fake: FakeOllama, workspace: Path, goal: str) -> None:
    # every tool: `remember` is outside the common set a run is shown by default
    proc = run_cli(
        "hearth-loop", "--ollama-host", fake.url, "--workspace", str(workspace), goal, env={"HEARTH_TOOL_SET": "all"}
    )
    assert proc.returncode == 0, proc.stderr


def recall_steps(state_dir: Path) -> list[tuple[str, str | None, str | None, str | None]]:
    with sqlite3.connect(state_dir / "audit.db") as conn:
        sql = "select run_id, verdict, detail, arguments from steps where kind = 'recall' order by id"
        return conn.execute(sql).fetchall()


def remember_then_ask(fake: FakeOllama, tmp_path: Path, goal: str) -> None:
    fake.add(tool_call("remember", {"lesson": LESSON, "scope": "global"}), final_answer("noted"), final_answer("ok"))
    loop(fake, tmp_path / "a", "note what we found about backups")
    loop(fake, tmp_path / "b", goal)


@needs_vec
def test_a_goal_worded_differently_gets_the_lesson_recalled_in_its_first_message(
    state_dir: Path, tmp_path: Path
) -> None:
    with FakeOllama(embedders={"nomic-embed-text": concept_vectors(CONCEPTS)}) as fake:
        remember_then_ask(fake, tmp_path, "why does the nightly copy fail")
    user = first_user_messages(fake)[1]
    assert user.startswith("## Recalled from earlier runs")
    assert LESSON in user and user.endswith("## Goal\nwhy does the nightly copy fail")
    assert {"model": "nomic-embed-text", "input": [f"search_document: {LESSON}"]} in fake.embeds
    assert {"model": "nomic-embed-text", "input": ["search_query: why does the nightly copy fail"]} in fake.embeds
    steps = recall_steps(state_dir)
    assert [verdict for _, verdict, _, _ in steps] == [None]  # one preface, no fallback
    items = json.loads(steps[0][3] or "{}")["items"]
    assert items == [{"lesson": 1, "score": items[0]["score"], "way": "meaning"}]


def test_with_the_embedder_gone_the_run_still_starts_and_recalls_by_text_saying_why(
    state_dir: Path, tmp_path: Path
) -> None:
    with FakeOllama() as fake:
        remember_then_ask(fake, tmp_path, "the backup job fails again")
    user = first_user_messages(fake)[1]
    assert LESSON in user and user.endswith("## Goal\nthe backup job fails again")
    steps = recall_steps(state_dir)
    second = [s for s in steps if s[0] == steps[-1][0]]
    assert [verdict for _, verdict, _, _ in second] == ["lexical", None]  # said once, then the preface
    assert second[0][2] == (
        "searching by text only: the embedding model nomic-embed-text is not pulled; "
        "run: ollama pull nomic-embed-text; see: hearth doctor"
    )
    assert json.loads(second[1][3] or "{}")["items"][0]["way"] == "text"
