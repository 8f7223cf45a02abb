"""A new launcher is one module plus one table row: tests/remote_launcher.py, registered at test time,
runs requests the way a job engine on another machine would (no local flock, its own state
directory, `python -m hearth.remote.job` in a subprocess), and its runs are submitted, shown live,
stopped, settled and recorded through the seam alone (the `hearth` commands themselves, in this
process, where the row was registered). What the runs did comes back through the hub's door, over
loopback HTTP to a real command center, as a fleet's workers send theirs: the job never opens the
hub's audit."""

from __future__ import annotations

import ast
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hearth.cli.main import main
from hearth.dispatch.launchers import LAUNCHERS, launcher_for, register
from hearth.errors import ConfigError
from hearth.locks import lock_is_held
from hearth.queue.directory import Queue
from hearth.run.liveness import run_lock_path
from hearth.settings import Settings
from tests.fake_ollama import FakeOllama, final_answer
from tests.queue_support import Gate, listing, rows, wait_for
from tests.remote_launcher import HUB, LOST, MACHINE, RemoteLauncher, elsewhere, running
from tests.web_support import Center

ROOT = Path(__file__).resolve().parents[3]
ROWS = {"hearth.dispatch.launchers.systemd", "hearth.dispatch.launchers.local", "hearth.dispatch.launchers.host"}


@pytest.fixture
def remote(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The `remote` row in the table and chosen by HEARTH_LAUNCHER, the hub's command center serving
    its door on loopback; whatever it left running is killed."""
    register("remote", "tests.remote_launcher:RemoteLauncher")
    monkeypatch.setenv("HEARTH_LAUNCHER", "remote")
    settings = Settings.from_env()
    state_dir.mkdir(parents=True)
    there = elsewhere(settings)
    try:
        with Center(settings) as center:
            monkeypatch.setenv(HUB, center.url)
            yield there
    finally:
        LAUNCHERS.pop("remote", None)
        for pidfile in (there / "launched").glob("*.pid"):
            pid = int(pidfile.read_text())
            if running(pid):
                os.killpg(pid, signal.SIGKILL)


def hearth(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """A `hearth` command in this process (the row is registered here); its exit code and stdout."""
    before = signal.getsignal(signal.SIGTERM)  # `hearth spawn` turns SIGTERM into a stop
    try:
        code = main(list(argv))
    finally:
        signal.signal(signal.SIGTERM, before)
    return code, capsys.readouterr().out


def active(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    code, out = hearth(capsys, "state", "--json")
    assert code == 0
    return {run["id"]: run for run in json.loads(out)["active"]}


def status(state_dir: Path, run_id: str) -> str | None:
    """The run's status in the hub's audit (None before its first event came through the door)."""
    found = rows(state_dir, "select status from runs where id = ?", run_id)
    return str(found[0]["status"]) if found else None


def start_held(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, gate: Gate, url: str, rid: str
) -> None:
    """Enqueue and spawn one request; return once its run, elsewhere, waits at the gate."""
    monkeypatch.setenv("OLLAMA_HOST", url)
    assert hearth(capsys, "enqueue", "wait at the gate", "--id", rid) == (0, f"{rid}\n")
    code, out = hearth(capsys, "spawn")
    assert code == 0 and f"started {rid}" in out
    assert gate.reached.wait(60), "the run elsewhere never asked the model"


def no_flock_here(rid: str) -> bool:
    settings = Settings.from_env()
    return not lock_is_held(Queue(settings.queue_dir).lock_path(rid)) and not lock_is_held(run_lock_path(settings, rid))


def test_a_run_elsewhere_is_shown_live_and_stopped_through_its_launcher(
    state_dir: Path, remote: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    with FakeOllama([gate]) as fake:
        try:
            start_held(capsys, monkeypatch, gate, fake.url, "far")
            assert no_flock_here("far")  # only the launcher can say it is alive
            shown = wait_for(lambda: active(capsys).get("far"), what="the run in `hearth state`")
            assert (shown["alive"], shown["state"], shown["queued"]) == (True, "thinking", True)
            wait_for(lambda: status(state_dir, "far") == "running", what="the run's start through the door")
            assert active(capsys)["far"]["alive"]  # `hearth state` settled first, and left it be
            code, out = hearth(capsys, "stop", "far")
        finally:
            gate.opened.set()
    assert (code, out) == (0, "far: interrupted (signal)\n")
    [run] = rows(state_dir, "select status, error from runs where id = 'far'")
    assert run["status"] == "interrupted" and "stopped by cli:" in run["error"]
    assert "stop" in [s["kind"] for s in rows(state_dir, "select kind from steps where run_id = 'far' order by seq")]
    assert "far.json" in listing(state_dir / "queue" / "failed") and listing(state_dir / "queue" / "claimed") == []
    assert "far.json" in listing(remote / "queue" / "failed")  # the run there placed its own copy
    assert active(capsys) == {}


def test_a_run_whose_job_elsewhere_was_killed_is_settled_lost_by_its_launchers_word(
    state_dir: Path, remote: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    launcher = RemoteLauncher(Settings.from_env())
    with FakeOllama([gate]) as fake:
        try:
            start_held(capsys, monkeypatch, gate, fake.url, "lost")
            assert no_flock_here("lost")
            wait_for(lambda: status(state_dir, "lost") == "running", what="the run's start through the door")
            code, out = hearth(capsys, "runs", "--json")  # settles what is dead first
            assert code == 0 and [r["status"] for r in json.loads(out) if r["id"] == "lost"] == ["running"]
            launcher.kill("lost")
            wait_for(lambda: not launcher.alive("lost"), what="the launcher to call the run gone")
            assert "lost" not in active(capsys)  # settled by its launcher's word: lost where it ran
        finally:
            gate.opened.set()
        code, out = hearth(capsys, "spawn")  # the sweep: nothing to go on with, never run twice
    assert code == 0 and "lost" not in out, out
    [run] = rows(state_dir, "select status, error from runs where id = 'lost'")
    assert (run["status"], run["error"]) == ("interrupted", LOST)
    assert listing(state_dir / "queue" / "claimed") == [] and "lost.json" in listing(state_dir / "queue" / "failed")
    assert not launcher.alive("lost")


def test_a_run_elsewhere_that_ends_is_recorded_at_the_hub_through_its_door_and_its_request_placed(
    state_dir: Path, remote: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = state_dir.parent / "opened.txt"
    monkeypatch.setenv("OPENED", str(opened))  # the job lists every file it opens (tests/remote_job.py)
    with FakeOllama([final_answer("done over there")]) as fake:
        monkeypatch.setenv("OLLAMA_HOST", fake.url)
        assert hearth(capsys, "enqueue", "say done", "--id", "there") == (0, "there\n")
        assert hearth(capsys, "spawn")[0] == 0
        wait_for(opened.exists, what="the job there to end")
    [run] = rows(state_dir, "select status, summary, worker from runs where id = 'there'")
    assert (run["status"], run["summary"], run["worker"]) == ("done", "done over there", MACHINE)
    assert rows(state_dir, "select count(*) as n from steps where run_id = 'there'")[0]["n"] > 0
    came = rows(state_dir, "select kind from fleet_events where run_id = 'there' and worker = ?", MACHINE)
    assert {"RunStarted", "RunFinished"} <= {e["kind"] for e in came}  # each written by the door
    assert listing(state_dir / "queue" / "claimed") == []  # placed by the door when its end came, no sweep
    assert listing(state_dir / "queue" / "failed") == []
    there = [Path(line) for line in opened.read_text().splitlines()]
    assert remote / "audit.db" in there  # the job's own audit: the list is of what it opened
    assert [path for path in there if path.is_relative_to(state_dir)] == []  # nothing of the hub's
    assert rows(remote, "select status from runs where id = 'there'") == [{"status": "done"}]  # its own record


def test_an_unknown_launcher_is_refused_with_every_row_named(
    state_dir: Path, remote: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(launcher_for(Settings.from_env()), RemoteLauncher)
    monkeypatch.setenv("HEARTH_LAUNCHER", "docker")
    with pytest.raises(ConfigError) as caught:
        launcher_for(Settings.from_env())
    assert (
        str(caught.value)
        == "HEARTH_LAUNCHER names no launcher 'docker'; there are: auto, systemd, local, celery, remote"
    )
    assert main(["spawn"]) == 2
    assert "there are: auto, systemd, local, celery, remote" in capsys.readouterr().err


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.update([node.module, *(f"{node.module}.{alias.name}" for alias in node.names)])
    return names


def test_only_the_launchers_package_imports_a_launcher_row() -> None:
    package = ROOT / "hearth" / "dispatch" / "launchers"
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imports(path) & ROWS)
        for path in (ROOT / "hearth").rglob("*.py")
        if package not in path.parents and (ROOT / "hearth" / "fleet") not in path.parents
    }  # hearth/fleet/ is the celery row's own package: its launcher and worker use the host's helpers
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_queues_front_door_and_swarms_import_nothing_of_dispatch() -> None:
    for module in ("hearth/queue/submit.py", "hearth/run/long/swarm.py"):
        assert sorted(n for n in _imports(ROOT / module) if n.startswith("hearth.dispatch")) == [], module
