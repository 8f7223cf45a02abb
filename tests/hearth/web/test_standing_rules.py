"""Standing rules in the command center, through the real app: "Approve and always allow in PROFILE"
on the approvals page for a call a rule may cover, the rules listed with Remove buttons, both for
operators only, and CSRF-checked."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.audit import approvals
from hearth.audit.store import AuditStore, RunRecord
from hearth.settings import Settings
from tests.queue_support import rows
from tests.web_support import Center

OPERATOR = "operator-token-0123456789abcdef"
VIEWER = "viewer-token-0123456789abcdef"


def waiting(state_dir: Path, *commands: str) -> list[str]:
    """A run of profile `builder` waiting on each command; the approvals' ids."""
    Settings.from_env().queue_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db") as audit:
        # suspended, as a queued run waiting for a person is (its process gone, so nothing settles it)
        audit.start_run(RunRecord(id="run1", agent_name="builder", model="m", goal="g", mode="auto", status="waiting"))
        return [
            approvals.ask(audit, "run1", "run_command", {"command": c}, "dangerous", timeout_s=600).id for c in commands
        ]


@pytest.fixture
def guarded(state_dir: Path) -> Iterator[Center]:
    with Center(Settings.from_env(), tokens={"operator": OPERATOR, "viewer": VIEWER}) as served:
        yield served


def test_the_page_offers_always_only_for_a_call_a_rule_may_cover_and_says_why_not(
    center: Center, state_dir: Path
) -> None:
    coverable, redirected = waiting(state_dir, "make test", "ls > out")
    page = center.client().get("/approvals").text
    assert f'data-always="{coverable}"' in page and "Approve and always allow in builder" in page
    assert f'data-always="{redirected}"' not in page
    card = page[page.index(f'id="approval-{redirected}"') :]
    assert "No standing rule for this call: it redirects (&gt; out)" in card[: card.index("</article>")]


def test_always_from_the_page_approves_makes_the_rule_and_remove_stops_it(center: Center, state_dir: Path) -> None:
    [approval] = waiting(state_dir, "make test")
    client = center.client()
    done = client.post_form(f"/approvals/{approval}/always", {})
    assert done.status_code == 303 and done.headers["location"] == f"/approvals?decided={approval}"
    [decided] = rows(state_dir, "select status, decided_by from approvals where id = ?", approval)
    assert decided == {"status": "approved", "decided_by": "web:local"}
    assert (Settings.from_env().queue_dir / "run1.resume").exists()
    [rule] = client.get("/api/rules").json()
    assert (rule["profile"], rule["covers"], rule["made_by"], rule["approval_id"]) == (
        "builder",
        "run_command: make test",
        "web:local",
        approval,
    )
    page = client.get("/approvals").text
    assert f'id="rule-{rule["id"]}"' in page and f'data-remove-rule="{rule["id"]}"' in page
    removed = client.post_form(f"/approvals/rules/{rule['id']}/remove", {})
    assert removed.status_code == 303
    assert client.get("/api/rules").json() == [] and f'id="rule-{rule["id"]}"' not in client.get("/approvals").text
    [kept] = rows(state_dir, "select removed_by from standing_rules where id = ?", rule["id"])
    assert kept == {"removed_by": "web:local"}
    again = client.post_json(f"/api/rules/{rule['id']}/remove", {})
    assert again.status_code == 409 and "was already removed by web:local" in again.json()["error"]


def test_always_for_a_call_no_rule_may_cover_is_refused_and_leaves_it_pending(center: Center, state_dir: Path) -> None:
    [approval] = waiting(state_dir, "sudo make install")
    answer = center.client().post_json(f"/api/approvals/{approval}/always", {})
    assert answer.status_code == 409 and "sudo is a wrapper or a shell" in answer.json()["error"]
    assert rows(state_dir, "select status from approvals where id = ?", approval) == [{"status": "pending"}]
    assert rows(state_dir, "select * from standing_rules") == []


def test_a_viewer_sees_the_rules_but_cannot_make_or_remove_one(guarded: Center, state_dir: Path) -> None:
    first, second = waiting(state_dir, "make test", "make lint")
    operator = guarded.client(Authorization=f"Bearer {OPERATOR}")
    operator.headers.pop("Origin")
    assert operator.post(f"/api/approvals/{first}/always").status_code == 200
    viewer = guarded.client(Authorization=f"Bearer {VIEWER}")
    page = viewer.get("/approvals").text
    [rule] = viewer.get("/api/rules").json()
    assert f'id="rule-{rule["id"]}"' in page and "data-remove-rule" not in page and "data-always" not in page
    for path in (f"/api/approvals/{second}/always", f"/api/rules/{rule['id']}/remove"):
        answer = viewer.post(path, json={})
        error = answer.json()["error"]  # the approval's door names the role; managing rules needs an owner
        assert answer.status_code == 403 and ("operator role" in error or "'viewer' is a viewer" in error), path
    assert re.search(r"pending", str(rows(state_dir, "select status from approvals where id = ?", second)))
