"""Learned skills: `hearth skills propose RUN` drafts a SKILL.md from a run that succeeded as a
self-evolution proposal; accepting it (the CLI, or the command center's decision) lands it in
skills/, where it is a skill like any other: not offered until its check passes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hearth.settings import Settings
from hearth.skills.learn import propose
from hearth.skills.skill import read_skill
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.hearth.web.operate_support import OPERATOR
from tests.skills_support import write_suite
from tests.web_support import Center

GOAL = "Write hello.txt saying hi"


def _run(*script: dict[str, object]) -> str:
    with FakeOllama(list(script)) as fake:
        done = run_cli("hearth-loop", "--mode", "bypass", GOAL, env={"OLLAMA_HOST": fake.url})
    return re.search(r"== run (\S+)", done.stdout).group(1)  # type: ignore[union-attr]


def _good_run() -> str:
    return _run(tool_call("write_file", {"path": "hello.txt", "content": "hi\n"}), final_answer("wrote hello.txt"))


def test_a_skill_drafted_from_a_run_lands_when_accepted_and_is_not_offered_unchecked(state_dir: Path) -> None:
    config = state_dir.parent / "config"
    write_suite(config)
    run_id = _good_run()
    proposed = run_cli("hearth", "skills", "propose", run_id, "--name", "say-hello", "--suite", "chores")
    assert proposed.returncode == 0, proposed.stderr
    proposal_id = proposed.stdout.splitlines()[0]
    shown = run_cli("hearth", "proposals", proposal_id)
    assert shown.returncode == 0 and "+name: say-hello" in shown.stdout, shown.stdout + shown.stderr
    assert not (config / "skills" / "say-hello").exists()  # a proposal changes nothing yet

    accepted = run_cli("hearth", "skills", "accept", proposal_id, "--reason", "useful", "--json")
    assert accepted.returncode == 0, accepted.stderr
    assert json.loads(accepted.stdout) == {
        "skill": "say-hello",
        "path": str(config / "skills" / "say-hello" / "SKILL.md"),
        "offered": False,
        "check": "hearth skills check say-hello",
    }
    skill = read_skill(config / "skills" / "say-hello", "box")
    assert (skill.suite, skill.description) == ("chores", f"For goals like: {GOAL}")
    assert "write_file(path='hello.txt')" in skill.body and "wrote hello.txt" in skill.body
    assert "'hi\\n'" not in skill.body  # what was written is the run's, not the skill's
    again = run_cli("hearth", "skills", "accept", proposal_id)
    assert again.returncode == 2 and "accepted already" in again.stderr

    listed = run_cli("hearth", "skills", "list")
    assert re.search(r"say-hello\s+unchecked\s+chores", listed.stdout), listed.stdout
    with FakeOllama([final_answer("ok")]) as fake:
        run_cli("hearth-loop", "--mode", "bypass", "anything", env={"OLLAMA_HOST": fake.url})
    assert "say-hello" not in fake.requests[0]["messages"][0]["content"]


def test_a_run_that_did_not_succeed_teaches_nothing(state_dir: Path) -> None:
    run_id = _run(*[tool_call("list_files", {"path": "." + "/." * n}) for n in range(20)])  # iteration_limit
    refused = run_cli("hearth", "skills", "propose", run_id)
    assert refused.returncode == 2 and "a skill is learned from a run that succeeded" in refused.stderr
    assert run_cli("hearth", "proposals").stdout.count("sk-") == 0


def test_accepting_a_skill_proposal_in_the_command_center_lands_it(state_dir: Path) -> None:
    config = state_dir.parent / "config"
    run_id = _good_run()
    settings = Settings.from_env()
    proposal = propose(settings, run_id, name="say-hello")
    with Center(settings, tokens={"operator": OPERATOR}) as center:
        answer = center.client(Authorization=f"Bearer {OPERATOR}").post(
            f"/api/proposals/{proposal['id']}/decision", json={"decision": "accept"}
        )
    assert answer.status_code == 200, answer.text
    assert answer.json()["apply"] == ["hearth skills check say-hello"]
    assert read_skill(config / "skills" / "say-hello", "box").suite == ""  # no suite named: never offered as it is
