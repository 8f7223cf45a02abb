"""Skills on disk and checks in the audit, for the skills tests: a SKILL.md written as an operator
would, a suite for it to name, and a finished check recorded through the audit's owner module."""

from __future__ import annotations

from pathlib import Path

from hearth.audit import skills as check_rows
from hearth.audit.store import AuditStore
from hearth.skills.skill import read_skill

SUITE = '[[case]]\nname = "hello"\ngoal = "Write hello.txt saying hi"\n[case.check]\nfiles = ["hello.txt"]\n'


def write_skill(
    root: Path,
    name: str,
    description: str = "Tidy a notes folder.",
    body: str = "Sort the notes by date.",
    **extra: str,
) -> Path:
    """`root`/NAME/SKILL.md (root: the box's skills/ or a profile's), naming the suite `chores`."""
    front = {"name": name, "description": description, "eval": "chores", **extra}
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    lines = "\n".join(f"{k}: {v}" for k, v in front.items())
    (folder / "SKILL.md").write_text(f"---\n{lines}\n---\n{body}\n")
    return folder


def write_suite(config: Path, name: str = "chores") -> Path:
    path = config / "evals" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SUITE)
    return path


def record_check(audit_path: Path, folder: Path, status: str, scope: str = "box", n: int = 1) -> str:
    """A check of the skill in `folder`, as it is now, finished with `status`."""
    skill = read_skill(folder, scope)
    check_id = f"sc-test-{skill.name}-{n}"
    with AuditStore(audit_path) as audit:
        check_rows.start(
            audit,
            {
                "id": check_id,
                "skill": skill.key,
                "name": skill.name,
                "scope": scope,
                "digest": skill.digest,
                "suite": skill.suite,
                "eval_min": skill.eval_min,
                "eval_with": f"ev-with-{n}",
                "eval_without": f"ev-without-{n}",
                "status": "running",
                "requested_by": "test",
                "started_at": f"2026-12-07T10:00:0{n}Z",
            },
        )
        rates = (1.0, 0.0) if status == "passed" else (0.0, 1.0)
        verdict = {"status": status, "rate_with": rates[0], "rate_without": rates[1], "detail": ""}
        check_rows.finish(audit, check_id, {**verdict, "retired": False, "finished_at": "2026-12-07T10:05:00Z"})
    return check_id
