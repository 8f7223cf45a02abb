"""`hearth skills check` end to end: the skill's suite runs through the queue twice, with the skill
offered and without it, against a scripted model that does the chore well only when a helpful skill
is listed; a skill that helps is offered afterwards (and load_skill returns it in an ordinary run),
one that lowers the pass rate never is, and a skill whose later check fails is retired, kept on
disk and alerted."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.alert_support import Receiver, write_alerts_toml
from tests.conftest import run_cli
from tests.eval_support import rows, state_dir  # noqa: F401 (the fixture)
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.queue_support import wait_for
from tests.skills_support import write_skill, write_suite

GOOD = tool_call("write_file", {"path": "hello.txt", "content": "hi\n"})
BAD = tool_call("write_file", {"path": "wrong.txt", "content": "hi\n"})


def chore(body: dict[str, Any]) -> dict[str, Any]:
    """A skill listed as `Say hi`: load it, then write hello.txt if it is the helpful one, else
    wrong.txt; none listed: wrong.txt (the model alone gets the chore wrong)."""
    system = body["messages"][0]["content"]
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    listed = re.search(r"- ([a-z-]+): Say hi", system)
    plays = (
        [tool_call("load_skill", {"name": listed.group(1)}), GOOD if "helpful" in system else BAD] if listed else [BAD]
    )
    return plays[turn] if turn < len(plays) else final_answer("wrote it")


def _check(url: str, skill: str) -> str:
    started = run_cli("hearth", "skills", "check", skill, env={"OLLAMA_HOST": url})
    assert started.returncode == 0, started.stderr
    spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": url}, timeout=300)
    assert spawned.returncode == 0, spawned.stdout + spawned.stderr
    return started.stdout.strip()


def _listed(skill: str) -> dict[str, Any]:
    shown = run_cli("hearth", "skills", "list", "--json")
    assert shown.returncode == 0, shown.stderr
    return next(r for r in json.loads(shown.stdout)["skills"] if r["key"] == skill)


@pytest.fixture
def hook() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


def test_a_skill_that_helps_is_offered_after_its_check_and_load_skill_returns_it(state_dir: Path) -> None:  # noqa: F811
    config = state_dir.parent / "config"
    write_suite(config)
    write_skill(config / "skills", "hello-helper", "Say hi, helpful.", "Write hello.txt, not wrong.txt.")
    with FakeOllama([chore], repeat_last=True) as fake:
        before = run_cli("hearth-loop", "--mode", "bypass", "Write hello.txt saying hi", env={"OLLAMA_HOST": fake.url})
        assert before.returncode == 0, before.stderr
        assert "hello-helper" not in fake.requests[-1]["messages"][0]["content"]  # unchecked: not offered
        assert _listed("hello-helper")["state"] == "unchecked"
        check_id = _check(fake.url, "hello-helper")
        listed = _listed("hello-helper")
        assert (listed["state"], listed["rate_with"], listed["rate_without"]) == ("offered", 1.0, 0.0)
        assert listed["last_check"] == check_id
        fake.requests.clear()
        after = run_cli("hearth-loop", "--mode", "bypass", "Write hello.txt saying hi", env={"OLLAMA_HOST": fake.url})
    assert after.returncode == 0, after.stderr
    assert "- hello-helper: Say hi, helpful." in fake.requests[0]["messages"][0]["content"]
    assert "Write hello.txt, not wrong.txt." in fake.requests[1]["messages"][-1]["content"]
    [check] = rows(state_dir, "select * from skill_checks")
    assert (check["status"], check["rate_with"], check["rate_without"]) == ("passed", 1.0, 0.0)
    evals = {r["id"]: r for r in rows(state_dir, "select id, trigger, pass_rate from eval_runs")}
    assert evals[check["eval_with"]]["trigger"] == "skill:hello-helper:with"
    assert evals[check["eval_without"]]["trigger"] == "skill:hello-helper:without"


def test_a_skill_that_lowers_the_rate_is_never_offered(state_dir: Path) -> None:  # noqa: F811
    config = state_dir.parent / "config"
    write_suite(config)
    write_skill(config / "skills", "bad-helper", "Say hi, misleading.", "Write wrong.txt.")
    with FakeOllama([chore], repeat_last=True) as fake:
        _check(fake.url, "bad-helper")
    listed = _listed("bad-helper")
    assert (listed["state"], listed["rate_with"], listed["rate_without"]) == ("failed", 0.0, 0.0)
    assert "below its eval_min 100%" in listed["detail"]
    shown = run_cli("hearth", "skills", "show", "bad-helper")
    assert shown.returncode == 0 and re.search(r"sc-\S+\s+failed\s+0%\s+0%", shown.stdout), shown.stdout


def test_a_skill_whose_later_check_fails_is_retired_kept_and_alerted(state_dir: Path, hook: Receiver) -> None:  # noqa: F811
    config = state_dir.parent / "config"
    write_suite(config)
    folder = write_skill(config / "skills", "hello-helper", "Say hi, helpful.", "Write hello.txt.")
    write_alerts_toml(config, ("hook", f"json://127.0.0.1:{hook.port}/hearth", ["skill_retired"]))
    with FakeOllama([chore], repeat_last=True) as fake:
        _check(fake.url, "hello-helper")
        assert _listed("hello-helper")["state"] == "offered"
        write_skill(config / "skills", "hello-helper", "Say hi, misleading now.", "Write wrong.txt.")
        assert _listed("hello-helper")["state"] == "changed"  # not offered until checked again
        _check(fake.url, "hello-helper")
        listed = _listed("hello-helper")
        fake.requests.clear()
        run_cli("hearth-loop", "--mode", "bypass", "Write hello.txt saying hi", env={"OLLAMA_HOST": fake.url})
    assert listed["state"] == "retired" and listed["rate_with"] == 0.0
    assert "hello-helper" not in fake.requests[0]["messages"][0]["content"]
    assert (folder / "SKILL.md").is_file()  # kept
    [alert] = wait_for(lambda: hook.got, what="the retirement alert")
    assert alert["body"]["title"] == "hearth: skill hello-helper retired: its check failed"
    [recorded] = rows(state_dir, "select event, status from alerts")
    assert recorded == {"event": "skill_retired", "status": "sent"}
    checks = rows(state_dir, "select status, retired from skill_checks order by started_at")
    assert checks == [{"status": "passed", "retired": 0}, {"status": "failed", "retired": 1}]


def test_a_check_of_a_skill_without_a_suite_is_refused_naming_the_file(state_dir: Path) -> None:  # noqa: F811
    config = state_dir.parent / "config"
    folder = config / "skills" / "loose"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: loose\ndescription: no suite named\nlicense: MIT\n---\nbody\n")
    refused = run_cli("hearth", "skills", "check", "loose")
    assert refused.returncode == 2 and f"add `eval: SUITE` to {folder / 'SKILL.md'}" in refused.stderr
    assert _listed("loose")["state"] == "no eval"
    write_skill(config / "skills", "named", eval="nosuch")
    missing = run_cli("hearth", "skills", "check", "named")
    assert missing.returncode == 2 and "no suite 'nosuch'" in missing.stderr
