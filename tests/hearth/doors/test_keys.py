"""`hearth keys add|list|rm` as a real process over a real audit: a key is printed once, only its
hash is kept, and the door's checks read what the command wrote."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import pytest

from hearth.audit.store import AuditStore
from hearth.doors import keys
from hearth.doors.keys import KeyRefused
from tests.conftest import run_cli
from tests.queue_support import rows


def test_a_key_is_printed_once_and_only_its_hash_is_kept(state_dir: Path) -> None:
    made = run_cli("hearth", "keys", "add", "webui", "--agent", "demo", "--budget", "500", "--rate", "3")
    assert made.returncode == 0, made.stderr
    secret = made.stdout.splitlines()[0]
    assert secret.startswith("hk-") and len(secret) > 40
    [row] = rows(state_dir, "select * from api_keys")
    assert row["digest"] == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in json.dumps(row) and json.loads(row["agents"]) == ["demo"]
    listed = json.loads(run_cli("hearth", "keys", "list", "--json").stdout)
    assert listed == [
        {
            "name": "webui",
            "agents": "demo",
            "budget": 500,
            "spent_today": 0,
            "rate": "3/min",
            "created_at": row["created_at"],
            "created_by": row["created_by"],
            "user": "operator",
        }
    ]
    with AuditStore(state_dir / "audit.db") as audit:
        assert keys.identify(audit, f"Bearer {secret}").source == "api:webui"


def test_a_removed_key_is_refused_and_removing_it_twice_says_so(state_dir: Path) -> None:
    secret = run_cli("hearth", "keys", "add", "gone").stdout.splitlines()[0]
    assert run_cli("hearth", "keys", "rm", "gone").returncode == 0
    again = run_cli("hearth", "keys", "rm", "gone")
    assert again.returncode != 0 and "no key named 'gone'" in again.stderr
    with AuditStore(state_dir / "audit.db") as audit, pytest.raises(KeyRefused) as refused:
        keys.identify(audit, f"Bearer {secret}")
    assert refused.value.status == 401 and refused.value.code == "invalid_api_key"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["keys", "add", "x", "--agent", "nobody"], "unknown agent profile 'nobody'"),
        (["keys", "add", "bad name"], "key name 'bad name' is not valid"),
        (["keys", "add", "mcp"], "key name 'mcp' is hearth's own"),
        (["keys", "add", "x", "--rate", "-1"], "--budget and --rate are counts"),
    ],
)
def test_a_bad_key_is_refused_in_one_line_and_nothing_is_stored(state_dir: Path, argv: list[str], said: str) -> None:
    refused = run_cli("hearth", *argv)
    assert refused.returncode == 2 and said in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert rows(state_dir, "select count(*) as n from api_keys") == [{"n": 0}]


def test_a_taken_name_is_refused(state_dir: Path) -> None:
    run_cli("hearth", "keys", "add", "twice")
    again = run_cli("hearth", "keys", "add", "twice")
    assert again.returncode == 2 and "a key named 'twice' exists" in again.stderr


def identified(state_dir: Path, secret: str) -> keys.Key:
    with AuditStore(state_dir / "audit.db") as audit:
        return keys.identify(audit, f"Bearer {secret}")


def test_a_key_made_again_under_the_same_name_is_another_key(state_dir: Path) -> None:
    first = identified(state_dir, run_cli("hearth", "keys", "add", "webui").stdout.splitlines()[0])
    with AuditStore(state_dir / "audit.db") as audit:
        keys.record(audit, first, "run-1", "conv-1", 0)
        assert keys.latest_run(audit, first, "conv-1") == "run-1"
    assert run_cli("hearth", "keys", "rm", "webui").returncode == 0
    again = identified(state_dir, run_cli("hearth", "keys", "add", "webui").stdout.splitlines()[0])
    assert again.name == first.name and again.id != first.id and again.id.startswith("key-")
    with AuditStore(state_dir / "audit.db") as audit:
        assert keys.latest_run(audit, again, "conv-1") is None


def test_calls_made_at_once_reserve_the_budget_so_only_what_is_left_is_given(state_dir: Path) -> None:
    """Each call on its own connection, as the door's threads make them: one reserves the 700
    tokens left, the others find nothing left, and what the reserving run holds is said."""
    key = identified(state_dir, run_cli("hearth", "keys", "add", "tight", "--budget", "700").stdout.splitlines()[0])
    given: list[int | None] = []
    refused: list[KeyRefused] = []
    start = threading.Barrier(8)

    def call(n: int) -> None:
        with AuditStore(state_dir / "audit.db") as audit:
            start.wait()
            try:
                given.append(keys.record(audit, key, f"run-{n}", f"conv-{n}", 0))
            except KeyRefused as exc:
                refused.append(exc)

    callers = [threading.Thread(target=call, args=(n,)) for n in range(8)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(60)
    assert given == [700] and len(refused) == 7
    assert {(r.status, r.code) for r in refused} == {(429, "insufficient_quota")}
    assert "0 spent and 700 held by its runs still going" in str(refused[0])
    with AuditStore(state_dir / "audit.db") as audit:
        capped = identified(
            state_dir, run_cli("hearth", "keys", "add", "capped", "--budget", "700").stdout.splitlines()[0]
        )
        assert keys.record(audit, capped, "run-a", "conv-a", 300) == 300  # at most its profile's cap
        assert keys.record(audit, capped, "run-b", "conv-b", 300) == 300
        assert keys.record(audit, capped, "run-c", "conv-c", 300) == 100  # what is left
