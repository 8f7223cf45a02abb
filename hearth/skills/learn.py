"""Learned skills: `hearth skills propose RUN` drafts a SKILL.md from a run that succeeded, as a
self-evolution proposal (the audit's `proposals`, beside `hearth evolve`'s), for a person to read
and accept or reject. Accepting lands it in the box's skills/ (`land`); like any skill it is offered
only once `hearth skills check NAME` has passed.

A skill proposal is a `proposals` row whose branch is `skill:NAME`: `repo` is where it lands,
`base_commit` the run it was drafted from, `diff` the new SKILL.md as a patch (its one copy: the
text that lands is read back from it), and `check_log` what must follow acceptance.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agent.clock import utc_now
from hearth.audit import proposals as proposal_rows
from hearth.audit.steps import tool_steps
from hearth.audit.store import AuditStore
from hearth.errors import ConfigError, NotFound, UsageError
from hearth.eval.cases import slug_of
from hearth.settings import Settings
from hearth.skills.catalog import box_dir
from hearth.skills.skill import NAME, SKILL_FILE, SkillInvalid, read_skill

BRANCH = "skill:"
MAX_STEPS = 30  # a longer run is summarised by its first steps: the operator edits the draft anyway
_HUNK = re.compile(r"^@@ .* @@$")


def is_skill(proposal: dict[str, Any]) -> bool:
    return str(proposal.get("branch") or "").startswith(BRANCH)


def propose(settings: Settings, run_id: str, *, name: str = "", suite: str = "") -> dict[str, Any]:
    """The proposal drafted from run `run_id` (recorded); NotFound for no run, UsageError for a run
    that did not succeed, a bad name, or a skill of that name already on the box."""
    with AuditStore(settings.audit_path) as audit:
        run = audit.run(run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r} in the audit; `hearth runs` lists them")
        if run["status"] != "done":
            raise UsageError(f"run {run_id} ended {run['status']}; a skill is learned from a run that succeeded")
        steps = [s for s in tool_steps(audit, run_id) if s["ok"] == 1][:MAX_STEPS]
        chosen = _name(name, run)
        if (box_dir(settings.config_dir) / chosen).exists():
            raise UsageError(f"a skill {chosen!r} is on the box already; pass --name to name this one")
        text = draft(chosen, run, steps, suite)
        row = _proposal(settings, run, chosen, text)
        proposal_rows.save(audit, row)
    return row


def draft(name: str, run: dict[str, Any], steps: list[dict[str, Any]], suite: str) -> str:
    """The SKILL.md: frontmatter (safe_dump quotes what YAML needs quoted), then the steps that worked."""
    import yaml

    goal = " ".join(str(run["goal"]).split())
    front: dict[str, Any] = {"name": name, "description": f"For goals like: {goal[:200]}"}
    if suite:
        front["eval"] = suite
    lines = [f"Learned from run {run['id']}, which reached this goal: {goal}", "", "What worked, in order:"]
    lines += [f"{n}. {_step(s)}" for n, s in enumerate(steps, 1)] or ["1. (no tool calls: it answered directly)"]
    summary = " ".join(str(run.get("summary") or "").split())
    if summary:
        lines += ["", f"It ended with: {summary[:500]}"]
    return f"---\n{yaml.safe_dump(front, sort_keys=False, allow_unicode=True)}---\n" + "\n".join(lines) + "\n"


def _step(step: dict[str, Any]) -> str:
    try:
        arguments = json.loads(step["arguments"] or "{}")
    except ValueError:
        arguments = {}
    shown = (
        ", ".join(f"{k}={str(v)[:80]!r}" for k, v in arguments.items() if k != "content")
        if isinstance(arguments, dict)
        else ""
    )
    return f"{step['tool']}({shown})"


def _name(given: str, run: dict[str, Any]) -> str:
    if given:
        if not NAME.fullmatch(given):
            raise UsageError(f"{given!r} cannot name a skill: use 1-64 of a-z 0-9 and -")
        return given
    return slug_of(run, 64)


def _proposal(settings: Settings, run: dict[str, Any], name: str, text: str) -> dict[str, Any]:
    lines = text.splitlines()
    relative = f"skills/{name}/{SKILL_FILE}"
    patch = "\n".join(
        ["--- /dev/null", f"+++ b/{relative}", f"@@ -0,0 +1,{len(lines)} @@", *("+" + line for line in lines)]
    )
    return {
        "id": f"sk-{run['id']}-{name}"[:120],
        "goal": f"learn skill {name} from run {run['id']}: {run['goal']}"[:2000],
        "repo": str(box_dir(settings.config_dir) / name),
        "branch": f"{BRANCH}{name}",
        "base_commit": str(run["id"]),
        "status": "proposed",
        "run_status": str(run["status"]),
        "head_commit": "",
        "check_passed": 0,
        "check_log": f"once accepted, it is offered only after `hearth skills check {name}` passes",
        "diff": patch + "\n",
        "diffstat": f" {relative} | {len(lines)} +",
        "security_flag": 0,
        "security_reasons": "[]",
        "created_at": utc_now(),
    }


def text_of(proposal: dict[str, Any]) -> str:
    """The SKILL.md a skill proposal lands, read back from its patch."""
    lines = str(proposal["diff"]).splitlines()
    start = next(i for i, line in enumerate(lines) if _HUNK.match(line)) + 1
    return "\n".join(line[1:] for line in lines[start:] if line.startswith("+")) + "\n"


def land(settings: Settings, proposal: dict[str, Any]) -> Path:
    """Write an accepted skill proposal into the box's skills/; ConfigError when it cannot be
    written or would not load (nothing is left behind then)."""
    if not is_skill(proposal):
        raise UsageError(f"proposal {proposal['id']} is not a skill proposal; `hearth proposals` shows it")
    name = str(proposal["branch"]).removeprefix(BRANCH)
    folder = box_dir(settings.config_dir) / name
    if folder.exists():
        raise ConfigError(f"{folder} exists already; remove it, or propose the skill again under another --name")
    try:
        folder.mkdir(parents=True)
        (folder / SKILL_FILE).write_text(text_of(proposal), encoding="utf-8")
        read_skill(folder, "box")
    except OSError as exc:
        raise ConfigError(
            f"cannot write {folder}: {exc.strerror or exc}; HEARTH_CONFIG_DIR names where skills live"
        ) from None
    except SkillInvalid:
        (folder / SKILL_FILE).unlink()
        folder.rmdir()
        raise
    return folder / SKILL_FILE


def accept(settings: Settings, proposal_id: str, *, by: str, reason: str = "") -> Path:
    """Record a person's acceptance of a skill proposal and land it (the CLI's way; the command
    center's decide route records its own and calls `land`)."""
    with AuditStore(settings.audit_path) as audit:
        proposal = proposal_rows.find(audit, proposal_id)
        if proposal is None or not is_skill(proposal):
            raise NotFound(f"no skill proposal {proposal_id!r}; `hearth proposals` lists them")
        decided = proposal_rows.decision(audit, proposal["id"])
        if decided is not None:
            raise UsageError(f"proposal {proposal['id']} was {decided['decision']} already, by {decided['decided_by']}")
        path = land(settings, proposal)
        row = {
            "proposal_id": proposal["id"],
            "decision": "accepted",
            "decided_by": by,
            "decided_at": utc_now(),
            "reason": reason,
        }
        proposal_rows.decide(audit, row)
    return path
