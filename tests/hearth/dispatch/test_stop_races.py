"""Stops and pauses that meet: two stops of one run at once, a stop meeting the spawner's claim, a
pause landing mid-pass and while a swarm queues its children. Real runs under `hearth watch`,
real queue directories; each side waits on a condition (a gate reached, a barrier), never a clock."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from hearth.dispatch.launchers import launcher_for
from hearth.dispatch.pause import pause, resume
from hearth.dispatch.spawner import Spawner
from hearth.dispatch.stop import NotRunning, Stopped, stop_run
from hearth.queue.directory import Queue
from hearth.queue.request import Request
from hearth.settings import Settings
from tests.cli_support import Lines, start_watch, stop_watch
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer
from tests.queue_support import Gate, listing, rows, wait_for
from tests.web_support import run_status


def _both(*calls: Any) -> list[Stopped | Exception]:
    """Run each call in its own thread, released together by a barrier; what each returned or raised."""
    barrier = threading.Barrier(len(calls), timeout=30)
    results: list[Stopped | Exception] = [RuntimeError("did not finish")] * len(calls)

    def run(n: int) -> None:
        barrier.wait()
        try:
            results[n] = calls[n]()
        except Exception as exc:
            results[n] = exc

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


def test_two_stops_of_one_running_run_at_once_stop_it_once_and_record_it_once(state_dir: Path) -> None:
    gate = Gate()
    settings = Settings.from_env()
    with FakeOllama([gate]) as fake:
        watch = start_watch({"OLLAMA_HOST": fake.url})
        try:
            Queue(state_dir / "queue").ensure().enqueue(Request(id="held", goal="wait at the gate"))
            assert gate.reached.wait(30)
            local = launcher_for(settings, "local")
            results = _both(
                lambda: stop_run(settings, "held", by="ana", launcher=local),
                lambda: stop_run(settings, "held", by="bo", launcher=local),
            )
        finally:
            gate.opened.set()
            stop_watch(watch)
    stopped = [r for r in results if isinstance(r, Stopped)]
    ended = [r for r in results if isinstance(r, NotRunning)]
    assert len(stopped) == 1 and len(ended) == 1, results  # one outcome each: one stopped it, one heard so
    assert stopped[0].status == "interrupted"
    assert "has already ended (interrupted)" in str(ended[0])
    [run] = rows(state_dir, "select status, error from runs where id = 'held'")
    assert run["status"] == "interrupted"
    assert (run["error"].count("stopped by ana"), run["error"].count("stopped by bo")).count(1) == 1  # one stopper
    stops = rows(state_dir, "select detail from steps where run_id = 'held' and kind = 'stop'")
    assert len(stops) == 1, stops  # recorded once
    assert listing(state_dir / "queue" / "failed") == ["held.json", "held.json.error.json"]
    assert not any(name.endswith(".stop") for name in listing(state_dir / "queue" / "locks"))


def test_two_stops_of_one_waiting_request_at_once_take_it_out_once(state_dir: Path) -> None:
    settings = Settings.from_env()
    Queue(settings.queue_dir).ensure().enqueue(Request(id="queued", goal="never runs"))
    local = launcher_for(settings, "local")
    results = _both(
        lambda: stop_run(settings, "queued", by="ana", launcher=local),
        lambda: stop_run(settings, "queued", by="bo", launcher=local),
    )
    stopped = [r for r in results if isinstance(r, Stopped)]
    assert len(stopped) == 1 and stopped[0].how == "dequeued", results
    assert len([r for r in results if isinstance(r, NotRunning)]) == 1, results
    [run] = rows(state_dir, "select status, error from runs where id = 'queued'")
    assert run["status"] == "interrupted" and run["error"].endswith("before it started")
    assert listing(settings.queue_dir / "failed") == ["queued.json", "queued.json.error.json"]


class PausingOnFirstStart:
    """The local launcher, with a pause written as its first run starts: a pause that lands mid-pass."""

    def __init__(self, settings: Settings) -> None:
        self.inner = launcher_for(settings, "local", concurrency=4)
        self.settings = settings
        self.started: list[str] = []

    def start(self, request_id: str) -> None:
        self.started.append(request_id)
        if len(self.started) == 1:
            pause(self.settings, by="ana", reason="mid-pass")
        self.inner.start(request_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_pause_that_lands_mid_pass_starts_nothing_more(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = Gate()
    with FakeOllama([gate]) as fake:
        monkeypatch.setenv("OLLAMA_HOST", fake.url)
        settings = Settings.from_env()
        queue = Queue(settings.queue_dir).ensure()
        for n in range(3):
            queue.enqueue(Request(id=f"r{n}", goal=f"request {n}"))
        launcher = PausingOnFirstStart(settings)
        try:
            with Spawner(settings, launcher) as spawner:  # type: ignore[arg-type]
                step = spawner.drain()
                assert launcher.started == ["r0"]  # paused as it started: r1 and r2 wait
                assert sorted(n for n in listing(queue.root) if n.endswith(".json")) == ["r1.json", "r2.json"]
                again = spawner.drain()
                assert again.paused and launcher.started == ["r0"]
                assert gate.reached.wait(30)  # the one that started runs on: a pause stops nothing
        finally:
            launcher.inner.shutdown()
            gate.opened.set()
    assert step.took == 1 and listing(queue.rejected) == []


SUB_GOALS = ["Write a.txt.", "Write b.txt."]


def test_a_pause_while_a_swarm_queues_its_children_holds_them_and_each_runs_once_after_resume(
    state_dir: Path,
) -> None:
    settings = Settings.from_env()
    asked = threading.Event()

    def model(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        if messages[0]["content"].startswith("You split a goal"):
            pause(settings, by="ana", reason="while the swarm queues")  # lands before its children are queued
            asked.set()
            return final_answer(json.dumps(SUB_GOALS))
        return final_answer("done")

    with FakeOllama([model], repeat_last=True) as fake:
        queued = run_cli("hearth", "enqueue", "split this", "--id", "sw", "--swarm", "2")
        assert queued.returncode == 0, queued.stderr
        watch = start_watch({"OLLAMA_HOST": fake.url}, "--concurrency", "2")
        out = Lines(watch)
        try:
            assert asked.wait(60)
            for child in ("sw-w1", "sw-w2"):
                out.wait_for(f'"event": "paused", "name": "{child}.json"')
            assert sorted(n for n in listing(settings.queue_dir) if n.endswith(".json")) == ["sw-w1.json", "sw-w2.json"]
            assert rows(state_dir, "select id from runs where id like 'sw-w%'") == []  # none started
            resume(settings)
            wait_for(lambda: run_status(state_dir, "sw") not in (None, "running"), what="the swarm to end", timeout=120)
        finally:
            stop_watch(watch)
    runs = rows(state_dir, "select id, status from runs order by id")
    assert runs == [
        {"id": "sw", "status": "done"},
        {"id": "sw-synthesis", "status": "done"},
        {"id": "sw-w1", "status": "done"},
        {"id": "sw-w2", "status": "done"},
    ]
    for sub_goal in SUB_GOALS:  # each child started once: one first model turn each
        firsts = [
            r for r in fake.requests if len(r["messages"]) == 2 and r["messages"][1]["content"].endswith(sub_goal)
        ]
        assert len(firsts) == 1, sub_goal
    assert listing(settings.queue_dir / "rejected") == [] and listing(settings.queue_dir / "failed") == []


class HeldAtLaunch:
    """The local launcher, held between the spawner's claim (the request checked and recorded) and
    the run's start until the test lets it go: the moment a stop meets a claim."""

    def __init__(self, settings: Settings) -> None:
        self.inner = launcher_for(settings, "local", concurrency=2)
        self.launching, self.go = threading.Event(), threading.Event()

    def start(self, request_id: str) -> None:
        self.launching.set()
        assert self.go.wait(60)
        self.inner.start(request_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_stop_while_the_spawner_claims_the_request_means_it_never_runs_and_is_recorded_once(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOllama([final_answer("should never be asked")], repeat_last=True) as fake:
        monkeypatch.setenv("OLLAMA_HOST", fake.url)
        settings = Settings.from_env()
        Queue(settings.queue_dir).ensure().enqueue(Request(id="held", goal="never runs"))
        launcher = HeldAtLaunch(settings)
        codes: list[int] = []

        def spawn() -> None:  # `hearth spawn`'s whole job, in this thread: its audit connection is its own
            with Spawner(settings, launcher) as spawner:  # type: ignore[arg-type]
                codes.append(spawner.run())

        thread = threading.Thread(target=spawn)
        thread.start()
        try:
            assert launcher.launching.wait(60)  # claimed and recorded; its process not yet started
            stopped = run_cli("hearth", "stop", "held", env={"HEARTH_LAUNCHER": "local"})
        finally:
            launcher.go.set()
            thread.join(120)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.startswith("held: interrupted (cancelled)")
    assert codes == [0] and fake.requests == []  # its process started, found it stopped, ran nothing
    [run] = rows(state_dir, "select status, error from runs")
    assert run["status"] == "interrupted" and run["error"].startswith("stopped by cli:")
    assert listing(settings.queue_dir / "failed") == ["held.json", "held.json.error.json"]
    assert listing(settings.queue_dir / "claimed") == [] and listing(settings.queue_dir / "rejected") == []
