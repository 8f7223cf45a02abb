"""One way to decide a waiting approval: approve it, deny it, or approve it and always allow the
same call in its run's profile; then wake the run.

    decide(settings, approval_id, verdict, by, user=..., note=...)    the one call every door makes
    by_link(settings, token)                      an alert's signed link: its check, then decide

Each decision is asked of hearth/users/access.py first, inside the same transaction: `user` (the
signed-in person, the key's or chat's user, the login at the CLI, an alert destination's `user`)
must hold `approve` in the approval's run's profile, else Forbidden and nothing is decided.

The doors: `hearth approve|deny [--always]`, the command center's buttons and /api/approvals, an
alert's Approve / Deny link (hearth/leash/actions.py signs it), the MCP server's decide_approval,
and a channel to come that can answer approvals (a chat). Each passes itself, or the person behind
it, as `by`: a `Decider`, whatever has a `decider` (the web's signed-in Identity, an alert
destination's `By("alert", NAME)`, the CLI's login); a user of hearth's own is one more. It is
recorded as the approval's `decided_by`. Nothing else gives a verdict on a waiting approval (its
compare-and-set is hearth/audit/approvals.py's `decide`, called from here only;
tests/hearth/leash/test_decisions.py holds that to the code).

Not verdicts given here, and so not through this call: what a run settles itself and records
through its own stream (an approval that expires, one cancelled with its run, one a standing rule
or the person at its terminal answers on the spot) and a fleet worker's copy of what the hub decided.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from hearth.audit import approvals
from hearth.audit.approvals import Approval, ApprovalClosed, Clock, utc_clock
from hearth.audit.store import AuditStore
from hearth.errors import ConfigError, NotFound, UsageError
from hearth.leash import actions, rules
from hearth.queue.wake import wake
from hearth.settings import Settings
from hearth.users.access import User, require, user_named

VERDICTS = ("approve", "deny", "always")
LINK_NOTE = "decided from an alert link"


class Decider(Protocol):
    """Who decides, as the audit names them (`cli:alice`, `web:alice`, `alert:alice-phone`)."""

    @property
    def decider(self) -> str: ...


@dataclass(frozen=True)
class By:
    """A decider known by the channel it came through and its name there: a login at the CLI, an
    alert destination's name, an MCP caller."""

    channel: str
    name: str

    @property
    def decider(self) -> str:
        return f"{self.channel}:{self.name}"


@dataclass(frozen=True)
class Decided:
    approval: Approval
    rule: rules.Rule | None = None  # the standing rule an `always` made (or found standing)


def decide(
    settings: Settings,
    approval_id: str,
    verdict: str,
    by: Decider,
    *,
    user: User,
    note: str = "",
    now: Clock = utc_clock,
) -> Decided:
    """Give `verdict` (approve | deny | always) on the approval (its id, or a unique prefix of 4+
    characters), recorded as `by` with `note`, and wake its run. NotFound for no such approval,
    Forbidden when `user` may not approve in its run's profile, ApprovalClosed when it is decided or
    expired already, RuleRefused when `always` may not cover its call (then nothing is decided)."""
    if verdict not in VERDICTS:
        raise UsageError(f"{verdict!r} is not a verdict; one of: {', '.join(VERDICTS)}")
    with _audit(settings, approval_id) as audit, audit.transaction():
        profile = _profile(audit, approval_id)
        if profile is not None:  # an unknown approval: _give says so
            require(user, "approve", profile)
        decided = _give(audit, approval_id, verdict, by.decider, note.strip(), now)
    wake(settings, decided.approval.run_id)  # a suspended run goes on
    return decided


def by_link(settings: Settings, token: str, now: datetime | None = None, *, reason: str = "") -> Decided:
    """The decision a signed alert link carries, made once as `alert:DESTINATION`, and the link
    marked used (with the `reason` the link's page was given, told to the model on a deny);
    ActionRefused (changing nothing) for a link that may not decide now."""
    if not settings.audit_path.exists():
        raise actions.ActionRefused(404, "this hearth has no approvals yet; nothing changed")
    with AuditStore(settings.audit_path) as audit:
        action, approval = actions.check(audit, settings.state_dir, token, now)
        verdict = "approve" if action.granted else "deny"
        _link_user_may(settings, audit, action, _profile(audit, approval.id) or "default")
        try:
            note = f"{LINK_NOTE}: {reason}" if reason else LINK_NOTE
            decided = _give(audit, approval.id, verdict, action.by, note, utc_clock)
        except (ApprovalClosed, NotFound) as exc:
            raise actions.ActionRefused(409, str(exc)) from None
        actions.mark_used(audit, action)
    wake(settings, decided.approval.run_id)
    return decided


def _audit(settings: Settings, approval_id: str) -> AuditStore:
    if not settings.audit_path.exists():
        raise NotFound(f"no approval with id {approval_id!r}: nothing has run yet ({settings.audit_path})")
    return AuditStore(settings.audit_path)


def _profile(audit: AuditStore, ident: str) -> str | None:
    """The profile of the approval's run (None when the approval is unknown)."""
    approval = approvals.find(audit, ident)
    if approval is None:
        return None
    run = audit.run(approval.run_id)
    return str(run["agent_name"] or "default") if run is not None else "default"


def _link_user_may(settings: Settings, audit: AuditStore, action: actions.Action, profile: str) -> None:
    """The link's destination acts as its `user` in alerts.toml (the built-in owner `operator`
    unless it names one), a chat channel's link as the user it was sent to: a link sent to someone
    who may not approve here (or no longer may) decides nothing."""
    from hearth.leash.alerts import load_destinations

    try:
        names = {d.name: d.user for d in load_destinations(settings.config_dir)}
    except ConfigError as exc:
        raise actions.ActionRefused(
            503, f"alerts.toml cannot be read, so whose link this is is unknown: {exc}"
        ) from None
    who = names.get(action.via, "operator")
    if action.via.startswith(actions.CHANNEL_VIA):
        who = action.via.rpartition(":")[2]  # a channel's link to one of its users acts as that user
    user = user_named(audit, who)
    if user is None or not user.may("approve", profile):
        raise actions.ActionRefused(403, f"refused: {who!r} (this link's user) may not approve in profile {profile!r}")


def _give(audit: AuditStore, ident: str, verdict: str, by: str, note: str, now: Clock) -> Decided:
    if verdict == "always":
        return _always(audit, ident, by, note, now)
    return Decided(approvals.decide(audit, ident, granted=verdict == "approve", by=by, note=note, now=now))


def _always(audit: AuditStore, ident: str, by: str, note: str, now: Clock) -> Decided:
    """Approve, and make the standing rule for its run's profile from that exact call; a call no
    rule may cover is refused before anything is decided."""
    approval = approvals.find(audit, ident)
    if approval is None:
        raise NotFound(f"no approval with id {ident!r}; see: hearth approvals")
    run = audit.run(approval.run_id)
    if run is None:
        raise NotFound(f"approval {approval.id} names run {approval.run_id}, which is not recorded")
    profile, args = run["agent_name"] or "default", json.loads(approval.arguments)
    rules.scope(approval.tool, args)  # RuleRefused here: the approval stays pending
    said = "; ".join(part for part in (note, f"and always in profile {profile}") if part)
    decided = approvals.decide(audit, approval.id, granted=True, by=by, note=said, now=now)
    return Decided(decided, rules.make(audit, profile, approval.tool, args, by=by, approval_id=decided.id, now=now))
