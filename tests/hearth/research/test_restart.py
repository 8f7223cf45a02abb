"""A research run survives its process: killed in the middle of reading a page and started again,
it does not search, read or ask again what it recorded; the page it was reading is read once more.
A real process (tests/research_child.py) killed with SIGKILL, a real audit, a loopback web."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from hearth.audit.store import AuditStore
from hearth.leash.decisions import By, decide
from hearth.queue.longspec import Research
from hearth.run.suspend import ready
from hearth.settings import Settings
from hearth.users.access import shell_owner
from tests.netfixtures import Answer, Seen
from tests.queue_support import wait_for
from tests.research_support import (
    GC_PAGE,
    PLAIN,
    QUESTION,
    LoopWeb,
    PhaseModel,
    Script,
    go_on,
    plan_approval,
    settings_for,
    start,
)

OWNER = shell_owner("alice")  # whoever decides here is not the check's subject

ROOT = Path(__file__).resolve().parents[3]
URLS = [f"http://docs.test/{n}" for n in (1, 2, 3)]
INCREMENTAL = {"sub_question": 1, "quote": "The cycle garbage collector is now incremental", "note": ""}


def test_a_run_killed_mid_read_goes_on_after_a_restart_without_reading_twice_what_it_recorded(tmp_path: Path) -> None:
    reading, release = threading.Event(), threading.Event()

    def slow(seen: Seen) -> Answer:
        if not release.is_set():
            reading.set()  # the marker: the run is in the middle of reading page 2
            release.wait(60)
        return Answer(200, GC_PAGE, PLAIN)

    pages = {URLS[0]: Answer(200, GC_PAGE, PLAIN), URLS[1]: slow, URLS[2]: Answer(200, GC_PAGE, PLAIN)}
    web = LoopWeb(pages, {"python 3.13 gc incremental": URLS, "python 3.13 gc generations": []})
    settings = settings_for(tmp_path / "state")
    script = {
        "decide": [{"reads": ["S1", "S2", "S3"], "searches": []}],
        "extract": {url: {"excerpts": [INCREMENTAL]} for url in URLS},
    }
    spec = Research(fetches_at_once=1)
    try:
        assert start(settings, web, PhaseModel(Script(**script)), spec).status == "waiting"
        decide(settings, plan_approval(settings)["id"], "approve", By("cli", "alice"), user=OWNER)
        child = _process(tmp_path, web, settings.state_dir, script, spec)
        assert reading.wait(60), _said(child)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(60)
        release.set()
        with AuditStore(settings.audit_path) as audit:
            assert ready(audit, audit.run("r1") or {}) == "restart"  # recorded running, its process gone
        again = PhaseModel(Script(**script))
        outcome = go_on(settings, web, again, spec)
    finally:
        release.set()
        web.close()

    assert outcome.status == "done", outcome.error
    assert web.searched() == ["python 3.13 gc incremental", "python 3.13 gc generations"]  # each once
    assert web.read("docs.test") == ["/1", "/2", "/2", "/3"]  # page 2 again (its read was cut), no other twice
    # no plan, no first round's decision again: the pages' extraction, round 2's decision, the synthesis
    assert [c[0] for c in again.calls] == ["extract", "extract", "extract", "decide", "synthesise"]
    with AuditStore(settings.audit_path) as audit:
        found = {s["opens"]: s for s in audit.steps("r1") if s["opens"]}
        resumed = [s for s in audit.steps("r1") if s["kind"] == "resume"]
    assert found["r1/fetch:S2#1"]["verdict"] == "started"  # the cut read stays as it was recorded
    assert found["r1/fetch:S2#2"]["verdict"] == "done" and "again" in found["r1/fetch:S2#2"]["detail"]
    assert "r1/fetch:S1#2" not in found and "r1/search:python 3.13 gc incremental#2" not in found
    assert "r1/decide:1#2" not in found and "r1/plan#2" not in found
    assert [json.loads(s["data"])["cause"] for s in resumed] == ["approval", "restart"]


def _process(
    tmp_path: Path, web: LoopWeb, state: Path, script: dict[str, object], spec: Research
) -> subprocess.Popen[str]:
    """The run's second process (its approval decided), as the spawner would start it."""
    names = {name: (addresses[0], web.net.servers[addresses[0]].port) for name, addresses in web.net.names.items()}
    config = {
        "state": str(state),
        "web": names,
        "script": script,
        "spec": spec.model_dump(),
        "request": {"goal": QUESTION, "model": "scripted", "run_id": "r1"},
        "resume": "approval approved",
    }
    path = tmp_path / "child.json"
    path.write_text(json.dumps(config))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.research_child", str(path)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _said(child: subprocess.Popen[str]) -> str:
    if child.poll() is None:
        child.kill()
    return (child.communicate(timeout=30)[0] or "")[-2000:]


def test_a_run_told_to_stop_mid_read_ends_interrupted_and_does_not_go_on(tmp_path: Path) -> None:
    reading, release = threading.Event(), threading.Event()

    def slow(seen: Seen) -> Answer:
        reading.set()  # the marker: the run is in the middle of reading the page
        release.wait(60)
        return Answer(200, GC_PAGE, PLAIN)

    web = LoopWeb({URLS[0]: slow}, {"python 3.13 gc incremental": URLS[:1], "python 3.13 gc generations": []})
    settings = settings_for(tmp_path / "state")
    script = {"decide": [{"reads": ["S1"], "searches": []}]}
    try:
        assert start(settings, web, PhaseModel(Script(**script))).status == "waiting"
        decide(settings, plan_approval(settings)["id"], "approve", By("cli", "alice"), user=OWNER)
        child = _process(tmp_path, web, settings.state_dir, script, Research())
        assert reading.wait(60), _said(child)
        os.kill(child.pid, signal.SIGTERM)  # what hearth stop's local launcher sends first
        wait_for(lambda: (run_of(settings) or {}).get("status") == "interrupted", timeout=60)
        release.set()
        said = child.communicate(timeout=60)[0]
    finally:
        release.set()
        web.close()
    assert said.strip().splitlines()[-1] == "interrupted", said
    with AuditStore(settings.audit_path) as audit:
        run = audit.run("r1") or {}
        found = {s["opens"]: s for s in audit.steps("r1") if s["opens"]}
        stops = [s for s in audit.steps("r1") if s["kind"] == "stop"]
        assert ready(audit, run) is None  # a stopped run is not started again
    assert run["status"] == "interrupted" and "interrupted" in run["error"]
    assert [s["detail"] for s in stops] == ["the research run was interrupted; it searches and reads nothing more"]
    assert "r1/extract:S1#1" not in found and "r1/synthesis#1" not in found  # nothing asked after the stop


def run_of(settings: Settings) -> dict[str, object] | None:
    with AuditStore(settings.audit_path) as audit:
        return audit.run("r1")
