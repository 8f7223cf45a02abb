"""What goes out on a channel as runs go on, and proof that it arrived.

    progress    each conversation's run: its "On it" message edited in place as steps come
                (where the platform edits), then the run's answer (its summary, or why it
                ended) as a message of its own
    approvals   each approval still waiting goes, once, with Approve / Deny buttons, to every
                user of this channel who may approve in its run's profile
    deliveries  every message hearth says is a row first (hearth/audit/channels.py); it is
                `delivered` only when the platform acknowledged it and gave its message id.
                A failure is tried again after 2^n seconds (at most an hour); after
                MAX_ATTEMPTS it is `missing`, alerted once and shown on the command center
                (and on its mission's page when a mission asked for it)

Outbound messages go only to chats of mapped users: a user's own address (a private chat is the
user's id), a group a mapped user addressed hearth in, or a stranger's refusal.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hearth.audit import approvals, runs, steps
from hearth.audit import channels as rows
from hearth.audit import users as user_rows
from hearth.audit.store import AuditStore
from hearth.channels.desk import ACTIVE, ChannelBy, approval_text
from hearth.channels.message import Edit, buttons_for, recipient
from hearth.channels.seam import Channel, ChannelDown, Undeliverable
from hearth.errors import HearthError
from hearth.settings import Settings
from hearth.users.access import user_named

log = logging.getLogger("hearth.channels")
MAX_ATTEMPTS = 8
BACKOFF_CAP_S = 3600.0
Now = Callable[[], datetime]


@dataclass(frozen=True)
class Sent:
    delivered: int
    failed: int


class Follower:
    def __init__(self, settings: Settings, name: str, now: Now = lambda: datetime.now(UTC)) -> None:
        self.settings, self.name, self.now = settings, name, now

    # -- what is due (sync: the audit) ----------------------------------------------------------------
    def step(self, edits: bool, buttons: bool = True) -> list[Edit]:
        """Queue the answers of ended runs and the approvals not yet sent; the progress edits due."""
        with AuditStore(self.settings.audit_path) as audit, audit.transaction():
            shown = [
                edit for chat in rows.chats_to_follow(audit, self.name) for edit in self._follow(audit, chat, edits)
            ]
            self._approvals(audit, buttons)
            self._missions(audit)
        return shown

    def _follow(self, audit: AuditStore, chat: dict[str, Any], edits: bool) -> list[Edit]:
        run = runs.row(audit, chat["run_id"])
        if run is None:
            return []  # still queued
        line = _progress_line(run, steps.progress(audit, run["id"]))
        progress_id = self._message_id(audit, chat["chat"], "progress", run["id"])
        changed = edits and progress_id and line != chat["shown"]
        if run["status"] not in ACTIVE:
            self._say(audit, chat["chat"], _answer(run), "answer", run["id"])
        rows.set_chat(audit, {**chat, "shown": line, "answered": "" if run["status"] in ACTIVE else run["id"]})
        return [Edit(chat["chat"], progress_id, line)] if changed else []

    def _approvals(self, audit: AuditStore, buttons: bool) -> None:
        waiting = approvals.waiting(audit, approvals.stamp(approvals.utc_clock()))
        if not waiting:
            return
        profiles = runs.agent_names(audit, [a.run_id for a in waiting])
        for identity in user_rows.identities(audit, channel=self.name):
            user = user_named(audit, identity["user"])
            for approval in waiting:
                profile = profiles.get(approval.run_id) or "default"
                if user is None or not user.may("approve", profile):
                    continue
                if not rows.delivered_before(audit, self.name, identity["address"], "approval", approval.id):
                    text = approval_text(approval, profile)
                    shown = buttons_for(approval.id) if buttons else []
                    text += "" if buttons else self._links(approval, identity["user"])
                    self._say(audit, identity["address"], text, "approval", approval.id, shown)

    def _missions(self, audit: AuditStore) -> None:
        """Each mission that names a chat on this channel (`deliver = "telegram:ada"`): its latest
        ended run's answer, once; a user with no chat here is a missing delivery, alerted."""
        from hearth.leash.missions import load_missions

        for mission in load_missions(self.settings)[0]:
            channel, _, user = mission.deliver.partition(":")
            if channel != self.name:
                continue
            chats = [i["address"] for i in user_rows.identities(audit, channel=self.name, user=user)]
            for latest in runs.requested_by(audit, f"mission:{mission.name}", 1):
                run = runs.row(audit, latest["id"])
                if run is None or run["status"] in ACTIVE:
                    continue
                text = f"Mission {mission.name}, run {run['id']}: " + _answer(run)
                for chat in chats:
                    self._say(audit, chat, text, "mission", run["id"], mission=mission.name)
                if not chats:
                    self._missing(audit, f"{user} has no {self.name} chat", text, run["id"], mission.name)

    def _missing(self, audit: AuditStore, why: str, text: str, subject: str, mission: str) -> None:
        if rows.delivered_before(audit, self.name, "", "mission", subject):
            return
        row = {"channel": self.name, "chat": "", "kind": "mission", "subject": subject, "text": text}
        row |= {"buttons": "[]", "created_at": self._stamp(), "mission": mission}
        ident = rows.add_delivery(audit, row)
        rows.set_delivery(audit, ident, {"status": "missing", "last_error": why})
        _alert_missing(self.settings, self.name, {**row, "id": ident}, why)

    def _links(self, approval: approvals.Approval, user: str) -> str:
        """Where there are no buttons: the signed links (hearth/leash/actions.py) when the command
        center has an address the reader can open, and the replies that decide. A link decides as
        the user it was sent to (`channel:NAME:USER`), if they may still approve then."""
        from hearth.leash.actions import for_approval
        from hearth.leash.alerts import load_approval_alerts

        try:
            base = load_approval_alerts(self.settings.config_dir).public_url or self.settings.web_url
        except HearthError:
            base = self.settings.web_url
        said = f"\nReply /approve {approval.id} or /deny {approval.id}."
        if base:
            tokens = for_approval(self.settings.state_dir, approval, ChannelBy(self.name, user).decider)
            said += (
                f"\nApprove: {base.rstrip('/')}/act/{tokens['approve']}\nDeny: {base.rstrip('/')}/act/{tokens['deny']}"
            )
        return said

    def _message_id(self, audit: AuditStore, chat: str, kind: str, subject: str) -> str:
        found = [d for d in rows.deliveries_of(audit, self.name, chat, kind, subject) if d["message_id"]]
        return str(found[0]["message_id"]) if found else ""

    def _say(
        self,
        audit: AuditStore,
        chat: str,
        text: str,
        kind: str,
        subject: str,
        buttons: list[tuple[str, str]] | None = None,
        mission: str = "",
    ) -> None:
        if rows.delivered_before(audit, self.name, chat, kind, subject):
            return
        row = {"channel": self.name, "chat": chat, "kind": kind, "subject": subject, "text": text, "mission": mission}
        rows.add_delivery(audit, row | {"buttons": json.dumps(buttons or []), "created_at": self._stamp()})

    # -- sending (async: the platform) ----------------------------------------------------------------
    async def deliver(self, channel: Channel) -> Sent:
        """Send what is due; ChannelDown goes up (the service backs off) once the row is marked."""
        sent = failed = 0
        for row in self._due():
            if not self._may_send(row):
                self._mark(row["id"], {"status": "refused", "last_error": "not a chat of a mapped user"})
                continue
            try:
                message_id = await channel.send(
                    row["chat"], row["text"], [tuple(b) for b in json.loads(row["buttons"])]
                )
            except ChannelDown as exc:
                self._failed(row, str(exc))
                raise
            except Undeliverable as exc:
                self._failed(row, str(exc))
                failed += 1
                continue
            self._mark(row["id"], {"status": "delivered", "message_id": message_id, "delivered_at": self._stamp()})
            sent += 1
        return Sent(sent, failed)

    def _due(self) -> list[dict[str, Any]]:
        with AuditStore(self.settings.audit_path) as audit:
            return rows.due(audit, self.name, self._stamp())

    def _may_send(self, row: dict[str, Any]) -> bool:
        if row["kind"] == "refusal":
            return True
        with AuditStore(self.settings.audit_path) as audit:
            mapped = {i["address"] for i in user_rows.identities(audit, channel=self.name)}
            return recipient(row["chat"]) in mapped or rows.chat_known(audit, self.name, row["chat"])

    def _failed(self, row: dict[str, Any], error: str) -> None:
        attempts = int(row["attempts"] or 0) + 1
        if attempts >= MAX_ATTEMPTS:
            self._mark(row["id"], {"status": "missing", "attempts": attempts, "last_error": error[:500]})
            _alert_missing(self.settings, self.name, row, error)
            return
        wait = min(BACKOFF_CAP_S, 2.0**attempts)
        fields = {"status": "failed", "attempts": attempts, "last_error": error[:500], "next_at": self._stamp(wait)}
        self._mark(row["id"], fields)

    def _mark(self, ident: int, fields: dict[str, Any]) -> None:
        with AuditStore(self.settings.audit_path) as audit:
            rows.set_delivery(audit, ident, fields)

    def _stamp(self, offset_s: float = 0) -> str:
        return (self.now() + timedelta(seconds=offset_s)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _answer(run: dict[str, Any]) -> str:
    """A run's answer: its summary, or how it ended and why."""
    return str(run.get("summary") or f"Run {run['id']} ended {run['status']}: {run.get('error') or 'no answer'}")


def _progress_line(run: dict[str, Any], progress: dict[str, Any]) -> str:
    status = run["status"]
    if status == "waiting":
        return f"Run {run['id']}: waiting for an approval."
    if status in ACTIVE:
        doing = f", last {progress['tool']}" if progress["tool"] else ""
        return f"Run {run['id']}: {status}, {progress['steps']} steps{doing}."
    return f"Run {run['id']}: {status}."


def _alert_missing(settings: Settings, channel: str, row: dict[str, Any], error: str) -> None:
    """A delivery given up on is an alert (the destinations that want `failed`), once."""
    from hearth.leash.alerts import Alert, notify

    title = f"hearth could not deliver a {row['kind']} on {channel}"
    body = f"to chat {row['chat']} after {MAX_ATTEMPTS} tries: {error[:300]}"
    log.warning("%s %s", title, body)
    run_id = row["subject"] if row["kind"] in ("answer", "mission") else None
    notify(settings, Alert("failed", title, body, run_id=run_id))
