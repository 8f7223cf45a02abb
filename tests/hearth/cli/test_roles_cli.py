"""`hearth heartbeat` and `hearth roles` as real processes: what they queue, print and record."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.roles_support import make_role, rows, settings_for

ROLE = 'home = true\nheartbeat = "hourly"\n'


def test_heartbeat_queues_a_strategic_review_when_asked_and_records_it(state_dir: Path, tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", ROLE)
    proc = run_cli("hearth", "heartbeat", "household", "--strategic-review", "--json")
    assert proc.returncode == 0, proc.stderr
    [fired] = json.loads(proc.stdout)["fired"]
    assert (fired["role"], fired["kind"]) == ("household", "strategic-review")
    queued = json.loads((state_dir / "queue" / f"{fired['request']}.json").read_text())
    assert (queued["agent_name"], queued["heartbeat"]) == ("household", "strategic-review")
    assert queued["goal"].startswith("Strategic review: the upkeep turn for the role household")
    [action] = rows(settings_for(tmp_path), "select action, subject, ok from operator_actions")
    assert action == {"action": "heartbeat", "subject": "household", "ok": 1}


def test_heartbeat_all_sweeps_every_role_and_says_which_were_skipped(state_dir: Path, tmp_path: Path) -> None:
    make_role(tmp_path / "config", "household", ROLE)
    make_role(tmp_path / "config", "garden", ROLE)
    assert run_cli("hearth", "roles", "disable", "garden", "--reason", "winter").returncode == 0
    proc = run_cli("hearth", "heartbeat", "--all")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "garden: skipped"
    assert "garden: skipped: role garden is switched off (by cli:" in proc.stderr and "winter" in proc.stderr
    assert len(list((state_dir / "queue").glob("household-*.json"))) == 1


def test_heartbeat_needs_one_role_or_all_and_refuses_a_profile_that_is_not_a_role(
    state_dir: Path, tmp_path: Path
) -> None:
    make_role(tmp_path / "config", "scout", 'model = "m"\n')
    neither = run_cli("hearth", "heartbeat")
    assert neither.returncode == 2 and "name one role, or give --all" in neither.stderr
    scout = run_cli("hearth", "heartbeat", "scout")
    assert scout.returncode == 2
    assert (
        scout.stderr.strip()
        == "hearth heartbeat: agent profile 'scout' is not a role; add home = true to its agent.toml"
    )


def test_roles_lists_disables_and_enables_and_enqueue_refuses_a_role_that_is_off(
    state_dir: Path, tmp_path: Path
) -> None:
    make_role(tmp_path / "config", "household", ROLE)
    assert run_cli("hearth", "roles", "disable", "household", "--reason", "moving house").returncode == 0
    listed = json.loads(run_cli("hearth", "roles", "--json").stdout)["roles"]
    assert [(r["name"], r["enabled"], r["heartbeat"]) for r in listed] == [("household", False, "hourly")]
    refused = run_cli("hearth", "enqueue", "--agent-name", "household", "pay the bills")
    assert refused.returncode == 2
    assert "role household is switched off" in refused.stderr and "moving house" in refused.stderr
    assert not list((state_dir / "queue").glob("*.json"))
    on = run_cli("hearth", "roles", "enable", "household")
    assert on.returncode == 0 and on.stdout.strip() == "role household is switched on"
    assert json.loads(run_cli("hearth", "roles", "--json").stdout)["roles"][0]["enabled"] is True
    switches = rows(settings_for(tmp_path), "select action, detail from operator_actions where action = 'switch'")
    assert [s["detail"] for s in switches] == ["disabled: moving house", "enabled"]
