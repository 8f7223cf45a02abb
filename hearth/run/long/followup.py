"""Follow-ups: a new run that carries on an earlier run's conversation, with its files.

`continued(request, settings, audit)` turns a GoalRequest with `continues = RUN` into the run to
start: the same profile and model (the request may name another model), linked to it
(`parent_run`, link `follow-up`), and a first message that carries the earlier run's goal, its
final summary and its last messages (rebuilt from its audited steps and clipped to fit the
window), before the new goal. The earlier run's frozen placeholder values are reused, so when the
profile, the tools and the workspace's context file are unchanged the system prompt is the same
bytes and Ollama reuses its cache (the runner records whether it was).

Where it works:
- the earlier run's workspace, when this process sees it and does not run in a directory made
  for it (the local launcher, `hearth-loop --continue`): the same directory, as before;
- otherwise (a hearth-agent@ unit, which sees only its own directory, or a workspace that is
  gone): its own fresh directory, filled from the earlier run's last checkpoint in hearth's
  history (hearth/run/history.py; `restore_from`, done by admission and recorded as a `restore`
  step). The earlier run's directory is left as it was; the follow-up's row names its own.

Who may continue what (`check_allowed`). A follow-up reads the earlier run's files and record and
works under a profile, so:
- an operator may continue any ended run, and under another profile by naming it (`agent_name`,
  or a label that names a profile); an operator is a request from the command center (only its
  operator role may queue), from root or hearth's own user, or a run started in this process
  (`hearth-loop --continue`: whoever runs it writes hearth's audit directly);
- anyone else may continue only a run they asked for (the same non-empty `requested_by`), under
  that run's own profile (naming none, or naming that one).
`requested_by` is what the request says; the queue's owner check (hearth/queue/directory.py) is what
stands behind a queue file's word.

Refused, with the reason (and recorded as a rejected run, like any request that cannot run): an
unknown run, one still running, one whose workspace is neither here nor in hearth's history, one
whose agent profile no longer exists, one the asker may not continue (above). What a follow-up
reads is that one run's files and record, nothing else. Mode and tools come from the follow-up's
own request or the profile, as for any run: a follow-up is never wider than its asker may make a run.
"""

from __future__ import annotations

import json
import os
import pwd
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.context.compaction import CHARS_PER_TOKEN, render_transcript
from hearth.audit.store import AuditStore
from hearth.errors import HearthError, UsageError
from hearth.run.goal import GoalRequest
from hearth.run.history import NoHistory, source_of
from hearth.run.profiles import load_profile
from hearth.settings import Settings

KEPT_MESSAGES = 8  # the earlier run's last messages shown verbatim (each clipped to fit)
WINDOW_SHARE = 4  # the earlier conversation takes at most 1/WINDOW_SHARE of the window


def continued(request: GoalRequest, settings: Settings, audit: AuditStore) -> GoalRequest:
    """The follow-up made whole; UsageError says why the earlier run cannot be continued."""
    earlier = earlier_run(audit, request.continues or "")
    check_continuable(earlier, settings)
    profile = check_allowed(earlier, request)
    workspace, restore_from = where(earlier, request, settings, audit)
    prompt = prompt_record(earlier)
    return replace(
        request,
        agent_name=profile,
        model=request.model or earlier["model"] or None,
        workspace=workspace,
        restore_from=restore_from,
        parent_run=earlier["id"],
        link="follow-up",
        preface=preface(earlier, audit.steps(earlier["id"]), request.num_ctx, restored=workspace is None),
        prompt_values=prompt.get("values") or None,
        prompt_sha256=prompt.get("sha256") or "",
    )


def earlier_run(audit: AuditStore, run_id: str) -> dict[str, Any]:
    run = audit.run(run_id) or audit.find_run(run_id)
    if run is None:
        raise UsageError(f"no run {run_id!r} to continue (or the prefix matches several); see: hearth runs")
    return run


def check_continuable(run: dict[str, Any], settings: Settings) -> None:
    """UsageError unless the run has ended and its profile still exists."""
    if run["status"] == "running":
        raise UsageError(f"run {run['id']} is still running; continue it once it has ended")
    try:
        load_profile(settings.config_dir, run["agent_name"] or "default")
    except HearthError as exc:
        raise UsageError(f"run {run['id']}'s agent profile {run['agent_name']!r} no longer exists ({exc})") from None


def check_allowed(run: dict[str, Any], request: GoalRequest) -> str:
    """The profile the follow-up runs under; UsageError when its asker may not continue this run
    (see the module's doc: an operator anything, anyone else their own runs, under their profile)."""
    own = run["agent_name"] or "default"
    named = request.agent_name if request.agent_name not in ("", "default", own) else own
    if is_operator(request):
        return named
    asker = request.requested_by or "(nobody named)"
    if not request.requested_by or request.requested_by != (run.get("requested_by") or ""):
        by = run.get("requested_by") or "nobody named"
        raise UsageError(
            f"{asker} may not continue run {run['id']}: it was asked for by {by}, and only its asker or an "
            "operator (the command center, root, hearth's own user) may continue a run"
        )
    if named != own:
        raise UsageError(
            f"{asker} may not continue run {run['id']} (profile {own!r}) under profile {named!r}: a follow-up "
            "runs under its run's profile unless an operator asks for another"
        )
    return own


def is_operator(request: GoalRequest) -> bool:
    """A request from the command center, from root or hearth's own user, or not from the queue at all."""
    if not request.queued or request.source == "command-center":
        return True
    return request.requested_by in ("root", _own_user())


def _own_user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return ""


def where(
    run: dict[str, Any], request: GoalRequest, settings: Settings, audit: AuditStore
) -> tuple[Path | None, tuple[str, str, str] | None]:
    """(the earlier workspace, None) where it is seen and may be used; else (None, what to restore
    into the follow-up's fresh directory). UsageError when neither is possible."""
    workspace = run.get("workspace") or ""
    seen = bool(workspace) and Path(workspace).is_dir()
    if seen and not in_own_unit_dir(request, settings):
        return Path(workspace), None
    try:
        point = source_of(run["id"], history_rows(audit, run), settings.checkpoints_dir)
    except NoHistory as exc:
        state = "is not visible to this run" if seen or in_own_unit_dir(request, settings) else "is gone"
        raise UsageError(f"run {run['id']}'s workspace {workspace or '(none)'} {state}, and {exc}") from None
    return None, (run["id"], str(point.git_dir) if point else "", point.commit if point else "")


# who worked in a marathon's or a swarm's own workspace after it began: its legs, its synthesis
WORKERS = {"marathon": "leg", "swarm": "synthesis"}


def history_rows(audit: AuditStore, run: dict[str, Any]) -> list[dict[str, Any]]:
    """The checkpoints that say where a run's workspace last stood, in the order they were taken:
    its own, and those of the runs that worked in it for a marathon (legs) or a swarm (synthesis)."""
    rows = audit.checkpoints(run["id"])
    link = WORKERS.get(run.get("kind") or "")
    for worker in audit.linked(run["id"]) if link else []:
        if worker.get("link") == link:
            rows += audit.checkpoints(worker["id"])
    return sorted(rows, key=lambda row: row["id"])


def in_own_unit_dir(request: GoalRequest, settings: Settings) -> bool:
    """This run works in the directory systemd made for it ($STATE_DIRECTORY of hearth-agent@ID)."""
    return bool(request.run_id) and str(settings.agents_dir / (request.run_id or "")) in settings.unit_state_dirs


def prompt_record(run: dict[str, Any]) -> dict[str, Any]:
    """What the runner kept of the run's system prompt: {values, sha256}, or {} if nothing."""
    try:
        record = json.loads(run.get("prompt") or "{}")
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def preface(run: dict[str, Any], steps: list[dict[str, Any]], num_ctx: int, *, restored: bool = False) -> str:
    """The earlier run as the follow-up's first message shows it, before the new goal."""
    ending = run.get("summary") or run.get("error") or "(none recorded)"
    budget = max(2_000, num_ctx * CHARS_PER_TOKEN // WINDOW_SHARE)
    messages = messages_of(steps)[-KEPT_MESSAGES:]
    transcript = render_transcript(messages, budget) if messages else "(no messages recorded)"
    where = "in a copy of its workspace restored from its last checkpoint" if restored else "in the same workspace"
    return (
        f"## Earlier run {run['id']} (this run continues it, {where})\n"
        f"Its goal:\n{run['goal']}\n\n"
        f"It ended {run['status']}. Its final summary:\n{ending}\n\n"
        f"Its last messages (clipped):\n{transcript}\n\n"
        "The person now follows up with the goal below. Carry on from where the earlier run stopped."
    )


def messages_of(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as the audit recorded it: model replies and tool results, in order."""
    messages: list[dict[str, Any]] = []
    for step in steps:
        if step["kind"] == "model":
            messages.append({"role": "assistant", "content": step["output"] or ""})
        elif step["kind"] == "tool":
            if messages and messages[-1]["role"] == "assistant":
                call = {"function": {"name": step["tool"], "arguments": _arguments(step["arguments"])}}
                messages[-1].setdefault("tool_calls", []).append(call)
            messages.append({"role": "tool", "content": step["output"] or "", "tool_name": step["tool"]})
    return messages


def _arguments(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"(as recorded)": text}
    return value if isinstance(value, dict) else {"(as recorded)": value}
