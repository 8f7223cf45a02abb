"""The security page and /api/security: connections, hosts, tripwires, denials and credential uses, across runs and per run."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.audit.store import AuditStore, RunRecord
from hearth.settings import Settings
from tests.browser_support import Browser
from tests.hearth.web.operate_support import OPERATOR, VIEWER, looked_at, signed_in
from tests.web_support import Center


def _seed(state_dir: Path) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db") as audit:
        for run_id in ("run-a", "run-b"):
            audit.start_run(RunRecord(run_id, "default", "m", "fetch the docs", "auto"))
        audit.record_connection(run_id="run-a", host="pypi.org", port=443, method="CONNECT", allowed=1, reason="egress")
        audit.record_connection(
            run_id="run-a",
            host="evil.example",
            port=443,
            method="CONNECT",
            allowed=0,
            reason="not in the run's egress list",
        )
        audit.record_connection(run_id="run-b", host="pypi.org", port=443, method="CONNECT", allowed=1, reason="egress")
        audit.record_tripwire(
            "run-b", decoy="AWS_SECRET_ACCESS_KEY", how="read ~/.aws/credentials", tool="read_file", action="stopped"
        )
        audit.record_step(
            "run-a",
            "tool",
            iteration=1,
            tool="run_command",
            arguments={"command": "rm -rf /"},
            verdict="denied",
            ok=0,
            detail=json.dumps({"reason": "a person denied it"}),
        )
        audit.record_step(
            "run-a", "tool", iteration=2, tool="read_file", arguments={"path": "x"}, verdict="allowed", ok=1
        )
        detail = {"name": "GITHUB", "host": "api.github.com", "verdict": "used", "reason": ""}
        audit.record_step(
            "run-b", "credential", iteration=1, tool="http_request", verdict="used", detail=json.dumps(detail)
        )


@pytest.fixture
def guarded(state_dir: Path) -> Iterator[Center]:
    _seed(state_dir)
    with Center(Settings.from_env(), tokens={"operator": OPERATOR, "viewer": VIEWER}) as served:
        yield served


def _get(center: Center, **params: str) -> dict[str, object]:
    answer = center.client(Authorization=f"Bearer {VIEWER}").get("/api/security", params=params)
    assert answer.status_code == 200, answer.text
    found: dict[str, object] = answer.json()
    return found


def test_across_runs_the_page_has_each_connection_host_tripwire_denial_and_credential_use(guarded: Center) -> None:
    found = _get(guarded)
    connections = found["connections"]
    assert isinstance(connections, list)
    assert [(c["run_id"], c["host"], c["allowed"], c["reason"]) for c in connections] == [
        ("run-b", "pypi.org", True, "egress"),
        ("run-a", "evil.example", False, "not in the run's egress list"),
        ("run-a", "pypi.org", True, "egress"),
    ]
    hosts = {(h["host"], h["allowed"], h["refused"], h["runs"]) for h in found["hosts"]}  # type: ignore[attr-defined]
    assert hosts == {("evil.example", 0, 1, 1), ("pypi.org", 2, 0, 2)}
    [trip] = found["tripwires"]  # type: ignore[misc]
    assert trip["decoy"] == "AWS_SECRET_ACCESS_KEY" and trip["action"] == "stopped"
    [denial] = found["denials"]  # type: ignore[misc]
    assert (
        denial["tool"] == "run_command" and denial["reason"] == "a person denied it" and "rm -rf" in denial["arguments"]
    )
    [use] = found["credentials"]  # type: ignore[misc]
    assert (use["name"], use["host"], use["verdict"], use["tool"]) == (
        "GITHUB",
        "api.github.com",
        "used",
        "http_request",
    )


def test_one_run_and_refused_only_narrow_every_list(guarded: Center) -> None:
    found = _get(guarded, run="run-a", denied="true")
    assert [c["host"] for c in found["connections"]] == ["evil.example"]  # type: ignore[attr-defined]
    assert found["tripwires"] == [] and found["credentials"] == [] and len(found["denials"]) == 1  # type: ignore[arg-type]


def test_the_denials_and_credential_uses_are_read_through_their_partial_indexes(
    guarded: Center, state_dir: Path
) -> None:
    conn = sqlite3.connect(state_dir / "audit.db")
    plans = {
        index: " ".join(
            str(row[-1])
            for row in conn.execute(f"explain query plan select id from steps where {where} order by id desc limit 200")
        )
        for index, where in (
            ("idx_steps_denied", "verdict = 'denied'"),
            ("idx_steps_credential", "kind = 'credential'"),
        )
    }
    conn.close()
    assert all(index in plan for index, plan in plans.items()), plans


def test_the_security_page_at_both_widths(guarded: Center, browser: Browser) -> None:
    page = signed_in(guarded, browser, VIEWER)
    looked_at(browser, page, guarded.url + "/operate/security", "security")
    assert "REFUSED" in page.inner_text("#connections") and "AWS_SECRET_ACCESS_KEY" in page.inner_text("#tripwires")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.click("a[aria-label='only this run: run-a'] >> nth=0")
    page.wait_for_url("**/operate/security?run=run-a")
    assert "run-b" not in page.inner_text("#connections") and "GITHUB" not in page.inner_text("main")
    looked_at(browser, page, page.url, "security-run")
