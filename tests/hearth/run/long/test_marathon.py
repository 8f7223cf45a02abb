"""Marathons as real processes against one fake Ollama that plays the legs and the judge: through
the queue with a deliverable check, and `hearth-loop --marathon` stopping for no progress or a stop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from hearth.dispatch.stop import stop_run
from hearth.settings import Settings
from tests.conftest import ROOT, run_cli
from tests.fake_ollama import FakeOllama, assert_every_request_legal, final_answer
from tests.long_support import Script, verdict, write
from tests.queue_support import rows, wait_for


def test_a_marathon_goes_on_until_the_judge_says_done_and_the_deliverable_is_there(state_dir: Path) -> None:
    script = Script(
        legs={
            1: [write("draft\n"), final_answer("Drafted report.md.")],
            2: [{"content": ""}, write("draft 2\n"), final_answer("Improved the draft.")],  # nudged once
            3: [write("FINAL\n"), final_answer("Finished report.md.")],
        },
        judged=[
            verdict(False, "Only a draft so far.", "Improve the draft."),
            verdict(False, "Still a draft.", "Mark it FINAL."),
            verdict(True, "The report is final."),
        ],
    )
    request = {
        "goal": "Write the final report into report.md.",
        "marathon": {"max_legs": 5, "check": {"files": ["report.md"], "command": "grep -q FINAL report.md"}},
    }
    (state_dir.parent / "req.json").write_text(json.dumps(request))
    with FakeOllama([script], repeat_last=True) as fake:
        queued = run_cli("hearth", "enqueue", "--file", str(state_dir.parent / "req.json"), "--id", "mara")
        assert queued.returncode == 0, queued.stderr
        spawned = run_cli("hearth", "spawn", "--local", env={"OLLAMA_HOST": fake.url}, timeout=120)
    assert spawned.returncode == 0, spawned.stderr
    assert_every_request_legal(fake.requests)  # the legs, the judge, and leg 2's nudge
    [marathon] = rows(state_dir, "select * from runs where id = 'mara'")
    assert (marathon["kind"], marathon["status"], marathon["iterations"]) == ("marathon", "done", 3)
    assert marathon["summary"] == "Finished report.md."
    legs = rows(state_dir, "select * from runs where parent_run = 'mara' order by started_at")
    assert [(r["id"], r["link"], r["status"]) for r in legs] == [(f"mara-leg{n}", "leg", "done") for n in (1, 2, 3)]
    assert {r["workspace"] for r in legs} == {marathon["workspace"]}
    judged = [
        json.loads(s["data"])
        for s in rows(state_dir, "select data from steps where run_id = 'mara' and kind = 'judge'")
    ]
    assert [(j["leg"], j["done"], j["check"]["ok"]) for j in judged] == [
        (1, False, False),
        (2, False, False),
        (3, True, True),
    ]
    assert judged[0]["check"]["detail"].startswith("the check command exited 1")
    firsts = [script.seen[f"leg{n}"][0] for n in (1, 2, 3)]
    assert len({body["messages"][0]["content"] for body in firsts}) == 1  # every leg: the same system prompt
    second = firsts[1]["messages"][1]["content"]
    assert "Leg 1 ended done. Its summary:\nDrafted report.md." in second and "Only a draft so far." in second
    assert "Next, the judge suggests: Improve the draft." in second and "## Done" in second
    assert "## Open questions" in firsts[0]["messages"][1]["content"]  # the note hearth made, shown to leg 1
    assert (Path(marathon["workspace"]) / ".hearth" / "progress.md").exists()
    shown = run_cli("hearth", "show", "mara").stdout
    assert "marathon run mara  done" in shown and "legs (3):" in shown
    assert "mara-leg1  done\n      judge: not done: Only a draft so far." in shown
    assert "mara-leg3  done\n      judge: done: The report is final." in shown


def test_a_marathon_stops_when_two_legs_in_a_row_change_nothing(state_dir: Path, tmp_path: Path) -> None:
    script = Script(
        legs={1: [final_answer("Nothing to change.")], 2: [final_answer("Still nothing to change.")]},
        judged=[final_answer("not json"), final_answer("still not json"), verdict(False, "Nothing was written.")],
    )
    with FakeOllama([script], repeat_last=True) as fake:
        proc = run_cli("hearth-loop", "--ollama-host", fake.url, "--marathon", "5", "write the essay")
    assert proc.returncode == 3, proc.stderr
    [marathon] = rows(state_dir, "select * from runs where kind = 'marathon'")
    assert (marathon["status"], marathon["iterations"]) == ("no_progress", 2)
    assert marathon["error"] == "no progress: 2 legs in a row changed nothing in the workspace"
    judged = [json.loads(s["data"]) for s in rows(state_dir, "select data from steps where kind = 'judge'")]
    assert [j["changed"] for j in judged] == [False, False] and judged[0]["judge"] is None  # unusable: not done
    assert "could not be used: it holds no JSON value" in script.seen["judge"][1]["messages"][-1]["content"]
    assert_every_request_legal(fake.requests)  # the judge's repair asks again, no made-up user turn
    assert "== marathon no_progress" in proc.stdout


def test_stopping_a_marathon_interrupts_its_leg_and_runs_no_more(state_dir: Path) -> None:
    reached, release = threading.Event(), threading.Event()

    def held(body: dict[str, Any]) -> dict[str, Any]:
        reached.set()
        release.wait(60)
        return final_answer("late")

    with FakeOllama([held], repeat_last=True) as fake:
        loop = start_loop(fake.url, "--marathon", "3", "a long job")
        try:
            assert reached.wait(30), "the first leg never reached the model"
            marathon_id = wait_for(lambda: rows(state_dir, "select id from runs where kind = 'marathon'"))[0]["id"]
            stopped = stop_run(Settings.from_env(), marathon_id, by="ana", grace_s=10)
        finally:
            release.set()
        loop.communicate(timeout=60)
    assert loop.returncode == 130 and stopped.status == "interrupted"
    runs = {r["id"]: r for r in rows(state_dir, "select * from runs")}
    assert {rid: r["status"] for rid, r in runs.items()} == {
        marathon_id: "interrupted",
        f"{marathon_id}-leg1": "interrupted",
    }
    assert runs[marathon_id]["error"].startswith("stopped by ana")


def start_loop(url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hearth.cli.loop", "--ollama-host", url, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
