"""A person's launch: the queue's front door (hearth/queue/submit.py) behind the one check.

`submit_as(request, settings, user, ...)` asks hearth/users/access.py whether `user` may launch in
every profile the request would run under (its own, or the one its label names; a follow-up's
earlier run's too, since it goes on in that run's workspace), then submits. The CLI, the command
center, `/v1`, the MCP server and the chat channels launch through it; missions, timers and swarms,
which an owner set up, submit directly.
"""

from __future__ import annotations

from hearth.audit.store import AuditStore
from hearth.queue.request import Request
from hearth.queue.submit import Heal, Submitted, submit
from hearth.run.profiles import agent_for_label
from hearth.settings import Settings
from hearth.users.access import User, require


def submit_as(
    request: Request, settings: Settings, user: User, *, requested_by: str, heal: Heal | None = None
) -> Submitted:
    """Forbidden unless `user` may launch there; else as submit."""
    for profile in launch_profiles(request, settings):
        require(user, "launch", profile)
    return submit(request, settings, requested_by=requested_by, heal=heal)


def launch_profiles(request: Request, settings: Settings) -> list[str]:
    """The profiles a request would run under: a follow-up's earlier run's, and its own unless it
    names none (then it runs under the earlier one's)."""
    own = agent_for_label(settings.config_dir, request.agent_name, request.label)
    if not request.continues:
        return [own]
    earlier = _profile_of(settings, request.continues)
    return [earlier] if own == "default" or own == earlier else [earlier, own]


def _profile_of(settings: Settings, run_id: str) -> str:
    if not settings.audit_path.exists():
        return "default"
    audit = AuditStore.read_only(settings.audit_path)
    try:
        run = audit.run(run_id)
    finally:
        audit.close()
    return str(run["agent_name"] or "default") if run else "default"
