"""A proposal reviewed with its check's output and decided once: accepted only when its check passed, rejected at any time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.evolve import Proposal, record_proposal
from hearth.settings import Settings
from tests.browser_support import Browser
from tests.hearth.web.operate_support import OPERATOR, VIEWER, looked_at, signed_in
from tests.queue_support import rows
from tests.web_support import Center

DIFF = "diff --git a/flake.nix b/flake.nix\n--- a/flake.nix\n+++ b/flake.nix\n@@ -1 +1 @@\n-a\n+b\n"


def _proposal(pid: str, status: str, passed: bool, **more: object) -> Proposal:
    log = "nix flake check: passed" if passed else "nix flake check: failed\nerror: attribute 'x' missing"
    return Proposal(
        pid,
        "tidy the flake",
        "/etc/nixos",
        f"hearth/proposal-{pid}",
        "abc123def4567",
        status,
        run_status="done",
        head_commit="fedcba9876543",
        check_passed=passed,
        check_log=log,
        diff=DIFF,
        diffstat=" flake.nix | 2 +-",
        created_at="2026-12-01T10:00:00.000Z",
        **more,
    )  # type: ignore[arg-type]


@pytest.fixture
def guarded(state_dir: Path) -> Iterator[Center]:
    settings = Settings.from_env()
    state_dir.mkdir(parents=True, exist_ok=True)
    record_proposal(settings, _proposal("good-1", "proposed", True))
    record_proposal(settings, _proposal("bad-1", "check_failed", False))
    wide = _proposal("wide-1", "proposed", True, security_flag=True, security_reasons=["egress: allows any host"])
    record_proposal(settings, wide)
    with Center(settings, tokens={"operator": OPERATOR, "viewer": VIEWER}) as served:
        yield served


def _decide(center: Center, pid: str, **body: object) -> object:
    return center.client(Authorization=f"Bearer {OPERATOR}").post(f"/api/proposals/{pid}/decision", json=body)


def test_a_proposal_with_a_passing_check_is_accepted_once_and_says_how_to_apply_it(
    guarded: Center, state_dir: Path
) -> None:
    shown = guarded.client(Authorization=f"Bearer {VIEWER}").get("/api/proposals/good-1").json()
    assert shown["proposal"]["check_log"] == "nix flake check: passed" and shown["decision"] is None
    answer = _decide(guarded, "good-1", decision="accept", reason="looks right")
    assert answer.status_code == 200, answer.text  # type: ignore[attr-defined]
    body = answer.json()  # type: ignore[attr-defined]
    assert body["decision"] == "accepted" and body["decided_by"] == "web:token:operator"
    assert "git -C /etc/nixos merge --ff-only hearth/proposal-good-1" in body["apply"]
    again = _decide(guarded, "good-1", decision="reject")
    assert again.status_code == 409 and "accepted already" in again.json()["error"]  # type: ignore[attr-defined]
    [row] = rows(state_dir, "select decision, decided_by, reason from proposal_decisions")
    assert dict(row) == {"decision": "accepted", "decided_by": "web:token:operator", "reason": "looks right"}
    assert [(a["action"], a["ok"]) for a in rows(state_dir, "select action, ok from operator_actions order by id")] == [
        ("accept", 1),
        ("reject", 0),
    ]


def test_a_failed_check_cannot_be_accepted_but_can_be_rejected(guarded: Center, state_dir: Path) -> None:
    refused = _decide(guarded, "bad-1", decision="accept")
    assert refused.status_code == 409 and "its check must pass" in refused.json()["error"]  # type: ignore[attr-defined]
    assert rows(state_dir, "select * from proposal_decisions") == []
    assert _decide(guarded, "bad-1", decision="reject").json()["decision"] == "rejected"  # type: ignore[attr-defined]


def test_a_proposal_that_widens_security_needs_its_reasons_read_and_a_viewer_cannot_decide(guarded: Center) -> None:
    unread = _decide(guarded, "wide-1", decision="accept")
    assert unread.status_code == 409 and "widens hearth's security" in unread.json()["error"]  # type: ignore[attr-defined]
    viewer = guarded.client(Authorization=f"Bearer {VIEWER}").post(
        "/api/proposals/wide-1/decision", json={"decision": "reject"}
    )
    assert viewer.status_code == 403
    assert _decide(guarded, "wide-1", decision="accept", security_read=True).status_code == 200  # type: ignore[attr-defined]
    assert _decide(guarded, "nope", decision="reject").status_code == 404  # type: ignore[attr-defined]


def test_the_proposal_page_shows_the_check_output_and_decides(guarded: Center, browser: Browser) -> None:
    page = signed_in(guarded, browser, OPERATOR)
    looked_at(browser, page, guarded.url + "/proposals/bad-1", "proposal-failed-check")
    assert "attribute 'x' missing" in page.inner_text("#check") and page.is_disabled("#accept")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(guarded.url + "/proposals/wide-1")
    page.click("#accept")
    assert "read its reasons" in page.wait_for_selector("#decision-error").inner_text()
    page.check("input[name=security_read]")
    page.fill("textarea[name=reason]", "egress is intended")
    page.click("#accept")
    assert "Accepted by web:operator" in page.wait_for_selector("#decided").inner_text()
    assert "merge --ff-only hearth/proposal-wide-1" in page.inner_text("#apply")
    looked_at(browser, page, page.url, "proposal-accepted")
    viewer = signed_in(guarded, browser, VIEWER)
    viewer.goto(guarded.url + "/proposals/good-1")
    assert viewer.locator("#decide-form").count() == 0 and "read-only" in viewer.inner_text("#decision")
