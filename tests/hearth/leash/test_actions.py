"""Signed alert links (hearth/leash/actions.py) against a real audit: one approval, one decision,
once, until it expires; forged, cut, altered, replayed, expired, cross-approval and rotated-away
tokens are refused with one line and change nothing; the key is 0600 from its first instant."""

from __future__ import annotations

import os
import stat
import threading
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from hearth.audit import approvals
from hearth.audit.approvals import utc_clock
from hearth.audit.store import AuditStore, RunRecord
from hearth.leash import actions, decisions
from hearth.leash.actions import ActionRefused
from hearth.settings import Settings
from tests.conftest import run_cli


@pytest.fixture
def audit(tmp_path: Path) -> AuditStore:
    store = AuditStore(tmp_path / "audit.db")
    store.start_run(RunRecord(id="run1", agent_name="default", model="m", goal="g", mode="auto", status="waiting"))
    return store


def _ask(audit: AuditStore, command: str = "make deploy", timeout_s: float = 600) -> approvals.Approval:
    return approvals.ask(audit, "run1", "run_command", {"command": command}, "dangerous", timeout_s=timeout_s)


def link(state_dir: Path, token: str, now: datetime | None = None) -> approvals.Approval:
    """What POST /act/TOKEN does: the link's decision through the one decision call."""
    settings = Settings.from_env({"HEARTH_STATE_DIR": str(state_dir), "HEARTH_CONFIG_DIR": str(state_dir / "config")})
    return decisions.by_link(settings, token, now).approval


def _state(audit: AuditStore) -> list[dict[str, object]]:
    return audit.rows("select * from approvals order by id") + audit.rows("select * from alert_actions")


def test_a_link_decides_its_approval_once_as_alert_of_its_destinations_name(tmp_path: Path, audit: AuditStore) -> None:
    approval = _ask(audit)
    tokens = actions.for_approval(tmp_path, approval, "alice-phone")
    decided = link(tmp_path, tokens["approve"])
    assert (decided.status, decided.decided_by) == ("approved", "alert:alice-phone")
    [used] = audit.rows("select * from alert_actions")
    assert used["approval_id"] == approval.id and used["used_by"] == "alert:alice-phone"
    assert used["digest"] == actions.digest(tokens["approve"]) and tokens["approve"] not in str(used)


def test_two_phones_on_ntfy_are_told_apart_in_the_audit(tmp_path: Path, audit: AuditStore) -> None:
    """Both destinations are ntfy: the audit names each by its name in alerts.toml, whatever it holds."""
    first, second = _ask(audit, "make a"), _ask(audit, "make b")
    link(tmp_path, actions.for_approval(tmp_path, first, "alice's phone")["approve"])
    link(tmp_path, actions.for_approval(tmp_path, second, "bob-phone")["deny"])
    shown = {a.id: a.decided_by for a in approvals.listing(audit, everything=True)}
    assert shown == {first.id: "alert:alice's phone", second.id: "alert:bob-phone"}
    long = actions.for_approval(tmp_path, _ask(audit, "make c"), "x" * 44 + "äöü")  # cut at 45 bytes, in the ä
    assert len(long["approve"]) <= actions.MAX_TOKEN
    assert link(tmp_path, long["approve"]).decided_by == "alert:" + "x" * 44


def test_a_link_sent_before_destinations_were_named_still_decides_as_its_kind(
    tmp_path: Path, audit: AuditStore
) -> None:
    approval = _ask(audit)
    expires = int(approvals.parse_stamp(approval.expires_at).timestamp())
    mac = actions._mac(actions.key(tmp_path), approval.id, "a", expires, "ntfy", "v1")
    assert link(tmp_path, f"{approval.id}.a.{expires}.ntfy.{mac}").decided_by == "alert:ntfy"


def test_a_replayed_link_is_refused_even_for_the_same_decision_and_nothing_changes(
    tmp_path: Path, audit: AuditStore
) -> None:
    tokens = actions.for_approval(tmp_path, _ask(audit), "ntfy")
    link(tmp_path, tokens["deny"])
    before = _state(audit)
    with pytest.raises(ActionRefused, match="used already") as refused:
        link(tmp_path, tokens["deny"])
    assert refused.value.status == 409 and "\n" not in refused.value.reason
    with pytest.raises(ActionRefused, match="denied already"):
        link(tmp_path, tokens["approve"])  # the other link of a decided approval
    assert _state(audit) == before


def test_a_link_for_one_approval_never_decides_another(tmp_path: Path, audit: AuditStore) -> None:
    first, second = _ask(audit, "make a"), _ask(audit, "make b")
    token = actions.for_approval(tmp_path, first, "ntfy")["approve"]
    crossed = token.replace(first.id, second.id, 1)
    before = _state(audit)
    with pytest.raises(ActionRefused, match="signature is wrong"):
        link(tmp_path, crossed)
    assert _state(audit) == before
    assert [a.status for a in approvals.listing(audit)] == ["pending", "pending"]


@pytest.mark.parametrize(
    "forge",
    [
        lambda t: t[:-1],  # cut short
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),  # one character of the MAC
        lambda t: t.replace(".a.", ".d.", 1),  # approve edited into deny
        lambda t: ".".join([*t.split(".")[:3], actions.name_field("bob-phone"), t.split(".")[4]]),  # another's
        lambda t: ".".join([t.split(".")[0], "a", "9999999999", *t.split(".")[3:]]),  # a later expiry
        lambda t: "garbage",
        lambda t: "",
        lambda t: t + "x" * 100_000,  # huge
        lambda t: "../../etc/passwd",
    ],
    ids=["cut", "mac", "decision", "via", "expiry", "garbage", "empty", "huge", "path"],
)
def test_a_forged_link_is_refused_with_one_line_and_nothing_changes(
    tmp_path: Path, audit: AuditStore, forge: object
) -> None:
    token = actions.for_approval(tmp_path, _ask(audit), "ntfy")["approve"]
    before = _state(audit)
    with pytest.raises(ActionRefused) as refused:
        link(tmp_path, forge(token))  # type: ignore[operator]
    assert refused.value.status in (400, 403) and "\n" not in refused.value.reason
    assert refused.value.reason.endswith("nothing changed")
    assert _state(audit) == before


def test_an_expired_link_is_refused_and_nothing_changes(tmp_path: Path, audit: AuditStore) -> None:
    approval = _ask(audit, timeout_s=60)
    token = actions.for_approval(tmp_path, approval, "ntfy")["approve"]
    before = _state(audit)
    with pytest.raises(ActionRefused, match="expired") as refused:
        link(tmp_path, token, now=utc_clock() + timedelta(seconds=61))
    assert refused.value.status == 410
    assert _state(audit) == before


def test_rotating_the_key_voids_every_link_sent_before(tmp_path: Path, audit: AuditStore) -> None:
    old = actions.for_approval(tmp_path, _ask(audit), "ntfy")["approve"]
    actions.rotate_key(tmp_path)
    with pytest.raises(ActionRefused, match="since rotated"):
        link(tmp_path, old)
    assert [a.status for a in approvals.listing(audit)] == ["pending"]


def test_the_key_is_made_at_first_use_with_mode_0600_even_under_a_loose_umask(tmp_path: Path) -> None:
    state = tmp_path / "state"
    old = os.umask(0)
    try:
        assert not actions.key_path(state).exists()
        actions.key(state)
        made = stat.S_IMODE(actions.key_path(state).stat().st_mode)
        actions.rotate_key(state)
        rotated = stat.S_IMODE(actions.key_path(state).stat().st_mode)
    finally:
        os.umask(old)
    assert (made, rotated) == (0o600, 0o600)
    assert [p.name for p in state.iterdir()] == [actions.KEY_FILE]  # no temporary file left behind


def test_callers_making_the_key_at_once_agree_on_one(tmp_path: Path) -> None:
    keys: list[bytes] = []
    start = threading.Barrier(8)

    def make() -> None:
        start.wait()
        keys.append(actions.key(tmp_path))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(keys)) == 1 and len(keys[0]) == 32


def test_hearth_approvals_rotate_key_voids_the_links_already_sent(state_dir: Path) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(state_dir / "audit.db") as audit:
        audit.start_run(RunRecord(id="run1", agent_name="default", model="m", goal="g", mode="auto", status="waiting"))
        token = actions.for_approval(state_dir, _ask(audit), "ntfy")["approve"]
    done = run_cli("hearth", "approvals", "rotate-key")
    assert done.returncode == 0 and "every approve and deny link sent before now is void" in done.stdout
    assert stat.S_IMODE(actions.key_path(state_dir).stat().st_mode) == 0o600
    with AuditStore(state_dir / "audit.db") as audit, pytest.raises(ActionRefused, match="since rotated"):
        link(state_dir, token)
