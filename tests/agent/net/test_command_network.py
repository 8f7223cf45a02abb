"""Network for commands only through the run's guarded proxy, for real, as root and as a user.

Each scenario (tests/netwalls_support.py) runs `run_command` under real bwrap in a private network
namespace whose only listener is the run's proxy; the package index and the git host are local
servers behind public-looking test names (the guard's injected resolver and connector).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.model.scripted import ScriptedModel
from agent.safety.sandbox import SandboxUnavailable, detect
from agent.services import RunServices
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.conftest import run_cli
from tests.netfixtures import TestNet
from tests.netwalls_support import PACKAGE, index
from tests.walls_support import WHO, as_who, checkout, give_to_user, python


@pytest.fixture(autouse=True)
def bwrap() -> None:
    try:
        detect("bwrap")
    except SandboxUnavailable as exc:
        pytest.skip(f"network for commands needs bwrap, unavailable here: {exc}")


@pytest.fixture(params=WHO)
def who(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def ws(who: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="hearth-netwalls-", dir="/var/tmp"))
    give_to_user(who, path)
    yield path
    shutil.rmtree(path)


def scenario(who: str, name: str, ws: Path) -> dict[str, Any]:
    done = subprocess.run(
        [*as_who(who), python(who), "-m", "tests.netwalls_support", name, str(ws)],
        cwd=checkout(who),
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(checkout(who))},
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_pip_downloads_a_package_from_an_index_through_the_proxy(who: str, ws: Path) -> None:
    if subprocess.run(["python3", "-m", "pip", "--version"], capture_output=True).returncode != 0:
        pytest.skip("the system's python3 has no pip here")
    seen = scenario(who, "pip", ws)
    assert seen["ok"] and f"{PACKAGE}-1.0-py3-none-any.whl" in seen["output"], seen["output"]
    assert [(c["host"], c["port"], c["allowed"]) for c in seen["connections"]] == [("pypi.test", 80, True)] * 2
    assert all(c["bytes_up"] > 0 and c["bytes_down"] > 0 for c in seen["connections"])


def test_git_ls_remote_reaches_a_repository_through_the_proxy(who: str, ws: Path) -> None:
    seen = scenario(who, "git", ws)
    assert seen["ok"] and f"{seen['head']}\trefs/heads/main" in seen["output"], seen["output"]
    assert {c["host"] for c in seen["connections"]} == {"git.test"} and all(c["allowed"] for c in seen["connections"])


def test_a_host_outside_the_egress_list_is_refused_and_recorded_why(who: str, ws: Path) -> None:
    seen = scenario(who, "refused", ws)
    assert not seen["ok"] and "403" in seen["output"]
    [record] = seen["connections"]
    assert (record["host"], record["allowed"]) == ("git.test", False)
    assert "not in this run's egress allow list" in record["reason"] and seen["served"] == 0


def test_a_loopback_target_through_the_proxy_is_refused(who: str, ws: Path) -> None:
    seen = scenario(who, "loopback", ws)
    assert not seen["ok"] and "403" in seen["output"] and seen["served"] == 0
    [record] = seen["connections"]
    assert record["host"] == "127.0.0.1" and not record["allowed"] and "loopback" in record["reason"]


def test_a_direct_connection_that_bypasses_the_proxy_goes_nowhere(who: str, ws: Path) -> None:
    """A public address, the index's real loopback port and a DNS server, each without the proxy."""
    seen = scenario(who, "bypass", ws)
    assert "REACHED" not in seen["output"] and seen["served"] == 0 and seen["connections"] == []
    assert seen["output"].split()[:3] == ["OSError", "ConnectionRefusedError", "OSError"]


def test_connect_tunnels_are_checked_and_relayed(who: str, ws: Path) -> None:
    seen = scenario(who, "connect", ws)
    assert seen["output"].splitlines()[:2] == ["HTTP/1.1 200 Connection Established", "HTTP/1.1 200 OK"]
    assert [(c["method"], c["host"], c["allowed"]) for c in seen["connections"]] == [("CONNECT", "pypi.test", True)]


# --- end to end: a run granted network, its connections in the audit, `hearth show`, the report ----------


@pytest.fixture
def state_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="hearth-netwalls-state-", dir="/var/tmp"))  # not under bwrap's /tmp
    monkeypatch.setenv("HEARTH_STATE_DIR", str(path))
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(path / "config"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def call(command: str) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"function": {"name": "run_command", "arguments": {"command": command}}}]}


@pytest.mark.parametrize("who", ["root"])
def test_a_run_granted_network_records_every_connection_in_the_audit(who: str, state_dir: Path) -> None:
    net, pypi = TestNet(), index()
    net.host("pypi.test", pypi)

    def inject(services: RunServices) -> None:
        services.net = net.guard(egress=("pypi.test",))

    fetch = f"python3 -c \"import urllib.request as u; print(u.urlopen('http://pypi.test/simple/{PACKAGE}/').status)\""
    script = [call(fetch), call("git ls-remote http://elsewhere.test/x.git"), {"content": "fetched"}]
    settings = Settings.from_env()
    request = GoalRequest(goal="fetch", model="m", mode="bypass", network=True, max_iters=5)
    try:
        run_id, outcome = run_goal(
            request, settings, model=ScriptedModel(script, model="m"), out=io.StringIO(), configure_services=inject
        )
    finally:
        pypi.close()
    assert outcome.status == "done"
    with sqlite3.connect(state_dir / "audit.db") as db:
        rows = db.execute(
            "select host, port, method, allowed, reason from connections where run_id = ?", [run_id]
        ).fetchall()
    assert rows[0] == ("pypi.test", 80, "GET", 1, None)
    assert rows[1][:4] == ("elsewhere.test", 80, "GET", 0) and "egress allow list" in rows[1][4]
    shown = run_cli("hearth", "show", run_id).stdout
    assert "GET     pypi.test:80  allowed" in shown and "elsewhere.test:80  refused" in shown
    report = json.loads(run_cli("hearth", "report", "--json").stdout)
    assert {r["host"]: (r["allowed"], r["refused"]) for r in report["connections"]} == {
        "pypi.test": (1, 0),
        "elsewhere.test": (0, 1),
    }
