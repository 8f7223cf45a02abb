"""A run's skills inside the walls: its commands read the run's copy of a skill's resources through
the real bwrap sandbox, and a write to one fails there even when the file itself is writable (the
bind is read-only); the copy is read-only on the host too."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.settings import Settings
from tests.conftest import require
from tests.eval_support import state_dir  # noqa: F401 (the fixture: under /var/tmp, as bwrap needs)
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.skills_support import record_check, write_skill, write_suite


def test_a_command_reads_a_skills_resource_and_cannot_write_it(state_dir: Path) -> None:  # noqa: F811
    require("bwrap")
    config = state_dir.parent / "config"
    write_suite(config)
    folder = write_skill(config / "skills", "tidy-notes")
    (folder / "ref.md").write_text("original text\n")
    state_dir.mkdir(parents=True)
    record_check(state_dir / "audit.db", folder, "passed")
    run_id = "20261207T220000-5k1115"
    copy = state_dir / "skills" / run_id / "tidy-notes" / "ref.md"
    line = f"cat {copy}; echo changed >> {copy} && echo WROTE || echo REFUSED"

    def loosened(body: dict[str, Any]) -> dict[str, Any]:
        assert copy.stat().st_mode & 0o222 == 0  # read-only on the host, from admission on
        copy.chmod(0o666)  # the mount alone must hold: a write refused even to a writable file
        return tool_call("run_command", {"command": line})

    with FakeOllama([loosened, final_answer("done")]) as fake:
        settings = Settings.from_env(
            {
                "HEARTH_STATE_DIR": str(state_dir),
                "HEARTH_CONFIG_DIR": str(config),
                "OLLAMA_HOST": fake.url,
                "HEARTH_SANDBOX": "bwrap",
            }
        )
        request = GoalRequest(goal="tidy", mode="bypass", source="queue", run_id=run_id)
        _, outcome = run_goal(request, settings, out=io.StringIO())
    assert outcome.status == "done"
    output = fake.requests[1]["messages"][-1]["content"]
    assert "original text" in output and "REFUSED" in output and "WROTE" not in output
    assert "Read-only file system" in output
    assert copy.read_text() == "original text\n" and (folder / "ref.md").read_text() == "original text\n"
