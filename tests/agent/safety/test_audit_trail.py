"""A tool's child process cannot alter the audit trail: run_command, under each command sandbox
alone (bwrap, Landlock), tries to rewrite, truncate and delete audit.db during a real run."""

from __future__ import annotations

import io
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.model.scripted import ScriptedModel
from agent.safety.policy import Decision
from agent.safety.sandbox import SandboxUnavailable, detect
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings

ATTACKS = [
    "python3 -c \"import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from steps'); c.commit()\" AUDIT",
    ": > AUDIT",
    "rm -f AUDIT AUDIT-wal && echo removed",
    "mv AUDIT AUDIT.bak",
]


@pytest.fixture
def state_dir() -> Iterator[Path]:
    # not under /tmp: bwrap mounts a private /tmp, which would hide the audit for the wrong reason
    # (a Nix build's TMPDIR is /build, which is fine; a usual one is /tmp, hence /var/tmp)
    base = tempfile.gettempdir()
    path = Path(tempfile.mkdtemp(prefix="hearth-audit-trail-", dir="/var/tmp" if base.startswith("/tmp") else base))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _approve(name: str, args: dict, reason: str) -> Decision:
    return Decision(True, by="test")


@pytest.mark.parametrize("kind", ["bwrap", "landlock"])
def test_commands_cannot_rewrite_truncate_or_delete_the_audit(kind: str, state_dir: Path) -> None:
    try:
        detect(kind)
    except SandboxUnavailable as exc:
        pytest.skip(f"{kind} is unavailable here: {exc}")
    settings = Settings(state_dir=state_dir, config_dir=state_dir / "etc", model_host="", model="m", sandbox=kind)
    audit = str(settings.audit_path)
    calls = [
        {
            "content": "",
            "tool_calls": [
                {"function": {"name": "run_command", "arguments": {"command": attack.replace("AUDIT", audit)}}}
            ],
        }
        for attack in ATTACKS
    ]
    model = ScriptedModel([*calls, {"content": "tried everything"}], model="m")
    request = GoalRequest(goal="erase your tracks", model="m", max_iters=len(ATTACKS) + 1, mode="auto")
    run_id, outcome = run_goal(request, settings, model=model, approve=_approve, out=io.StringIO())
    assert outcome.status == "done"
    with sqlite3.connect(audit) as db:
        kinds = [k for (k,) in db.execute("select kind from steps where run_id = ? order by seq", [run_id])]
        assert db.execute("pragma integrity_check").fetchone() == ("ok",)
    # every step is still there: the model turn and the command of each attack, and the last turn
    # (under Landlock the run first records what it cannot contain: a `containment` step)
    assert [k for k in kinds if k != "containment"] == ["model", "tool"] * len(ATTACKS) + ["model"]
    assert Path(audit).stat().st_size > 0 and not Path(audit + ".bak").exists()
