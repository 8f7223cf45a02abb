"""What hearth does with what a channel received, whatever the platform.

    the update     kept first, by the platform's own id: a replay is seen and acted on once
    edited         ignored (recorded): an edit changes nothing that ran; send the message again
    group chatter  ignored unless hearth is addressed (a command, its name, a reply to it)
    who            the platform's sender id, mapped to a user (hearth users link); never the text.
                   A stranger gets one short refusal per `refuse_every_s` and is recorded;
                   nothing they write reaches a model. A disabled user is refused the same way.
                   An update whose chat nothing vouches for (a forged e-mail From) is recorded
                   and never answered: the answer would go to someone who never wrote
    floods         past `flood_per_minute` from one sender: one "slow down", then silence
    too long       past `max_chars` (or what the channel refused unread, a mail too large):
                   refused with the limit
    attachments    with a goal: checked, put in the run's inbox and named in the goal
                   (hearth/channels/attachments.py), each refused one answered with why; alone,
                   or while the chat's run still works: refused, nothing taken
    a button       Approve / Deny: decided once through hearth/leash/decisions.py as
                   `channel:NAME:USER`, if that user may approve in the run's profile
    a command      /new /status /runs /stop /steer TEXT /pause /resume /approve ID /deny ID /help,
                   each within the user's rights; any other is answered with the list
    anything else  the conversation: the first message is a run under the user's default
                   profile, the next ones follow-ups of it in its workspace; one at a time: a
                   message while the chat's run still works is a steer of it
                   (hearth/dispatch/steer.py, as `channel:NAME:USER`, if that user may approve
                   in the run's profile), read by its model after its next tool result.
                   "On it" is said where the channel edits it into the run's progress; elsewhere
                   (mail) the answer alone comes, at the run's end

Everything said back is a delivery (hearth/audit/channels.py), sent by hearth/channels/follow.py
once the platform acknowledges it. Each update's verdict is recorded beside it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hearth.audit import approvals, runs
from hearth.audit import channels as rows
from hearth.audit.approvals import ApprovalClosed
from hearth.audit.store import AuditStore, new_run_id
from hearth.channels.attachments import Received, receive
from hearth.channels.config import ChannelConfig
from hearth.channels.inbox import discard
from hearth.channels.message import Edit, Fetched, Handled, Inbound, parse_button
from hearth.dispatch.steer import SteerRefused
from hearth.errors import HearthError, NotFound
from hearth.settings import Settings
from hearth.users.access import Forbidden, User, require, user_of_sender

ACTIVE = ("queued", "claimed", "running", "waiting", "paused")
HELP = {
    "/new": "start over: your next message is a new run",
    "/status": "how your current run is doing",
    "/runs": "your latest runs",
    "/stop": "stop your current run (or /stop RUN_ID)",
    "/steer": "/steer TEXT: tell your current run something; it reads it after its next tool result",
    "/pause": "hold every new run in the queue",
    "/resume": "let waiting runs start",
    "/approve": "/approve ID: let a waiting call run",
    "/deny": "/deny ID: refuse a waiting call",
    "/help": "this list",
}
Now = Callable[[], datetime]


@dataclass(frozen=True)
class ChannelBy:
    """A channel acting for one of hearth's users: how the audit names who decided or stopped."""

    channel: str
    user: str

    @property
    def decider(self) -> str:
        return f"channel:{self.channel}:{self.user}"


class Desk:
    def __init__(
        self, settings: Settings, config: ChannelConfig, now: Now = lambda: datetime.now(UTC), progress: bool = True
    ) -> None:
        self.settings, self.config, self.name, self.now = settings, config, config.name, now
        self.progress = progress  # whether "On it" is said (a message the channel edits as the run goes)
        self._pending_edits: list[Edit] = []
        self._fetched: tuple[Fetched, ...] = ()

    def handle(self, inbound: Inbound, fetched: tuple[Fetched, ...] = ()) -> Handled:
        """Record the update, act on it once, record what was made of it. `fetched`: its
        attachments as the channel fetched them (hearth/channels/attachments.py)."""
        self._fetched = fetched
        with AuditStore(self.settings.audit_path) as audit:
            row = {"channel": self.name, "update_id": inbound.update_id, "at": self._stamp(), "kind": inbound.kind}
            row |= {"sender": inbound.sender, "chat": inbound.chat, "detail": inbound.detail[:500]}
            if not rows.record_update(audit, row):
                return Handled("replay")
            self._pending_edits = []
            handled, user, run_id = self._handle(audit, inbound)
            if self._pending_edits:
                handled = Handled(handled.verdict, handled.answer, [*handled.edits, *self._pending_edits])
            fields = {"verdict": handled.verdict, "user": user, "run_id": run_id}
            if inbound.detail:
                fields["detail"] = inbound.detail[:500]
            rows.settle_update(audit, self.name, inbound.update_id, fields)
        return handled

    # -- who is talking ----------------------------------------------------------------------------
    def _handle(self, audit: AuditStore, inbound: Inbound) -> tuple[Handled, str, str]:
        if inbound.kind == "edited":
            return Handled("ignored: an edited message changes nothing; send it again"), "", ""
        if inbound.kind not in ("message", "callback"):
            return Handled("ignored"), "", ""
        if inbound.kind == "message" and not inbound.private and not inbound.addressed:
            return Handled("ignored: not addressed to hearth"), "", ""
        user = user_of_sender(audit, self.name, inbound.sender) if inbound.sender else None
        if user is None or user.disabled:
            return self._refuse(audit, inbound, user), user.name if user else "", ""
        if self._flooding(audit, inbound):
            return Handled("flood", "slow down"), user.name, ""
        if inbound.kind == "callback":
            return self._button(audit, inbound, user), user.name, ""
        return self._message(audit, inbound, user)

    def _refuse(self, audit: AuditStore, inbound: Inbound, user: User | None) -> Handled:
        """One short refusal per sender per `refuse_every_s`; the rest recorded only."""
        if not inbound.answerable:
            return Handled("refused quietly: the sender is not vouched for")
        since = self._stamp(-self.config.limits["refuse_every_s"])
        if rows.count_from(audit, self.name, inbound.sender, since, "refused") == 0:
            said = "You are not known to this hearth; nothing you write here is acted on."
            if user is not None:
                said = f"User {user.name} is disabled on this hearth; nothing you write here is acted on."
            self._say(audit, inbound.chat, said, "refusal", inbound.update_id)
            return Handled("refused", said)
        return Handled("refused quietly", "refused")

    def _flooding(self, audit: AuditStore, inbound: Inbound) -> bool:
        """Past the limit a minute: one "slow down" (the first update past it), then silence."""
        limit = self.config.limits["flood_per_minute"]
        count = rows.count_from(audit, self.name, inbound.sender, self._stamp(-60))
        if count == limit + 1:
            said = f"Slow down: at most {limit} messages a minute; the rest are not acted on."
            self._say(audit, inbound.chat, said, "refusal", inbound.update_id)
        return count > limit

    # -- buttons ----------------------------------------------------------------------------------
    def _button(self, audit: AuditStore, inbound: Inbound, user: User) -> Handled:
        parsed = parse_button(inbound.data)
        if parsed is None:
            return Handled("refused: not a button of hearth's", "This button is not hearth's.")
        return self._verdict(audit, user, *parsed)

    def _verdict(self, audit: AuditStore, user: User, verdict: str, approval_id: str) -> Handled:
        """The one decision call, as this user through this channel; the messages to change."""
        from hearth.leash.decisions import decide

        try:
            done = decide(self.settings, approval_id, verdict, ChannelBy(self.name, user.name), user=user).approval
        except Forbidden as exc:
            return Handled("refused", str(exc))
        except (ApprovalClosed, NotFound) as exc:
            return Handled("closed", str(exc)[:190])
        line = f"{done.status.capitalize()} by {done.decided_by}: {done.tool} (run {done.run_id})"
        sent = rows.approval_message(audit, self.name, approval_id)
        return Handled(done.status, line, [Edit(row["chat"], row["message_id"], line) for row in sent])

    # -- messages ---------------------------------------------------------------------------------
    def _message(self, audit: AuditStore, inbound: Inbound, user: User) -> tuple[Handled, str, str]:
        text = inbound.text.strip()
        limit = self.config.limits["max_chars"]
        if inbound.refusal:
            self._say(audit, inbound.chat, inbound.refusal, "reply", inbound.update_id)
            return Handled("refused: too large"), user.name, ""
        if len(text) > limit:
            said = f"That message is {len(text)} characters; at most {limit} are read. Nothing was run."
            self._say(audit, inbound.chat, said, "reply", inbound.update_id)
            return Handled("refused: too long"), user.name, ""
        if not text and inbound.attachments:
            said = "Say what to do with it: send the file with a caption, or in a mail with some text. Nothing was run."
            self._say(audit, inbound.chat, said, "reply", inbound.update_id)
            return Handled("refused: attachments without a goal"), user.name, ""
        if not text:
            return Handled("ignored: no text"), user.name, ""
        if text.startswith("/"):
            return self._command(audit, inbound, user, text), user.name, ""
        return self._goal(audit, inbound, user, text)

    def _goal(self, audit: AuditStore, inbound: Inbound, user: User, text: str) -> tuple[Handled, str, str]:
        chat = rows.chat(audit, self.name, inbound.chat, user.name) or {}
        earlier = chat.get("run_id") or ""
        status = runs.status(audit, earlier) if earlier else None
        if earlier and (status in ACTIVE or (status is None and self._queued(earlier))) and self._fetched:
            said = (
                f"Run {earlier} is still going; files are taken with a new goal or a follow-up, once it has answered."
            )
            self._say(audit, inbound.chat, said, "reply", inbound.update_id)
            return Handled("refused: busy"), user.name, earlier
        if earlier and (status in ACTIVE or (status is None and self._queued(earlier))):
            steered = self._steer_busy(audit, inbound, user, earlier, text)
            if steered is not None:
                return steered, user.name, earlier
            status = runs.status(audit, earlier)  # it ended meanwhile: the message is its follow-up
        run_id = new_run_id()
        received = self._received(audit, inbound, run_id)
        try:
            self._launch(user, text + received.note, earlier if status else "", run_id)
        except HearthError as exc:
            discard(self.settings.state_dir, run_id)
            self._say(audit, inbound.chat, f"Not run: {exc}", "reply", inbound.update_id)
            return Handled("refused"), user.name, ""
        if received.reply:
            self._say(audit, inbound.chat, received.reply, "reply", inbound.update_id)
        rows.set_chat(audit, self._chat_row(inbound.chat, user.name, run_id))
        said = f"On it: run {run_id}" + (f" (a follow-up of {earlier})" if status else "") + "."
        if self.progress:
            self._say(audit, inbound.chat, said, "progress", run_id)
        return Handled("follow-up" if status else "run"), user.name, run_id

    def _steer_busy(self, audit: AuditStore, inbound: Inbound, user: User, run_id: str, text: str) -> Handled | None:
        """A message while the chat's run works: a steer of it; None when the run ended meanwhile."""
        try:
            said = self._steered(user, run_id, text)
        except SteerRefused as exc:
            if exc.status == "full":
                self._say(audit, inbound.chat, str(exc), "reply", inbound.update_id)
                return Handled("refused")
            return None
        except HearthError as exc:
            said = f"Run {run_id} is still going and this was not given to it: {exc}. Wait for its answer, or /stop it."
            self._say(audit, inbound.chat, said, "reply", inbound.update_id)
            return Handled("refused")
        self._say(audit, inbound.chat, said, "reply", inbound.update_id)
        return Handled("steer")

    def _steered(self, user: User, run_id: str, text: str) -> str:
        from hearth.dispatch.steer import give_as

        give_as(self.settings, run_id, user, text, by=ChannelBy(self.name, user.name).decider)
        return f"Told run {run_id}; it reads this after its next tool result."

    def _received(self, audit: AuditStore, inbound: Inbound, run_id: str) -> Received:
        if not self._fetched:
            return Received("", "")
        row = {"channel": self.name, "update_id": inbound.update_id, "run_id": run_id, "at": self._stamp()}
        return receive(audit, self.settings.state_dir, self.config, row, self._fetched)

    def _launch(self, user: User, goal: str, earlier: str, run_id: str) -> str:
        from hearth.dispatch.launchers import heal
        from hearth.queue.intake import build_request
        from hearth.users.launch import submit_as

        obj = {"id": run_id, "goal": goal, "source": f"channel:{self.name}"}
        obj |= {"requested_by": f"{self.name}:{user.name}"}
        obj |= {"continues": earlier} if earlier else {"agent_name": user.default_profile}
        request = build_request(obj, file_id=None).request
        return submit_as(request, self.settings, user, requested_by=obj["requested_by"], heal=heal).id

    def _queued(self, run_id: str) -> bool:
        from hearth.queue.directory import Queue

        queue = Queue(self.settings.queue_dir)  # waiting at the top, or claimed and starting (failed/ has ended)
        return (queue.root / f"{run_id}.json").exists() or queue.known(run_id) == "claimed"

    def _chat_row(self, chat: str, user: str, run_id: str) -> dict[str, str]:
        row = {"channel": self.name, "chat": chat, "user": user, "run_id": run_id}
        return row | {"progress_id": "", "shown": "", "answered": "", "updated_at": self._stamp()}

    # -- commands ---------------------------------------------------------------------------------
    def _command(self, audit: AuditStore, inbound: Inbound, user: User, text: str) -> Handled:
        word, _, rest = text.partition(" ")
        word = word.split("@", 1)[0].lower()  # /stop@hearth_bot in a group
        act = COMMANDS.get("/help" if word == "/start" else word)
        if act is None:
            said = f"Unknown command {word[:40]}; these exist: {' '.join(HELP)}"
            self._say(audit, inbound.chat, said, "reply", inbound.update_id)
            return Handled("unknown command")
        try:
            said = act(self, audit, inbound, user, rest.strip())
        except HearthError as exc:
            said = str(exc)
        self._say(audit, inbound.chat, said, "reply", inbound.update_id)
        return Handled(f"command {word}")

    def _help(self, audit: AuditStore, inbound: Inbound, user: User, rest: str) -> str:
        lines = [f"{word}  {what}" for word, what in HELP.items()]
        return "Write a goal and hearth runs it; reply to go on in the same workspace.\n" + "\n".join(lines)

    def _new(self, audit: AuditStore, inbound: Inbound, user: User, rest: str) -> str:
        rows.set_chat(audit, self._chat_row(inbound.chat, user.name, ""))
        return f"Starting over: your next message is a new run under profile {user.default_profile}."

    def _status(self, audit: AuditStore, inbound: Inbound, user: User, rest: str) -> str:
        run_id = (rows.chat(audit, self.name, inbound.chat, user.name) or {}).get("run_id") or ""
        run = runs.row(audit, run_id) if run_id else None
        if not run_id:
            return "No run yet: write a goal."
        if run is None:
            return f"Run {run_id} is queued."
        return f"Run {run_id}: {run['status']}" + (f". {run['summary']}" if run.get("summary") else "")

    def _runs(self, audit: AuditStore, inbound: Inbound, user: User, rest: str) -> str:
        found = runs.requested_by(audit, f"{self.name}:{user.name}", 5)
        return "\n".join(f"{r['id']}: {r['status']}" for r in found) or "No runs yet."

    def _stop(self, audit: AuditStore, inbound: Inbound, user: User, rest: str) -> str:
        from hearth.dispatch.stop import stop_as, stopped_line

        run_id = rest or (rows.chat(audit, self.name, inbound.chat, user.name) or {}).get("run_id") or ""
        if not run_id:
            return "No run to stop."
        return stopped_line(stop_as(self.settings, run_id[:64], user, by=ChannelBy(self.name, user.name).decider))

    def _steer(self, audit: AuditStore, inbound: Inbound, user: User, rest: str) -> str:
        run_id = (rows.chat(audit, self.name, inbound.chat, user.name) or {}).get("run_id") or ""
        if not rest:
            return "Say what to tell the run: /steer TEXT."
        if not run_id:
            return "No run to steer: write a goal."
        try:
            return self._steered(user, run_id, rest)
        except SteerRefused as exc:
            if exc.status == "full":
                raise
            return f"Run {run_id} has ended ({exc.status}): write your next message to follow up on it."

    def _pause(self, audit: AuditStore, inbound: Inbound, user: User, rest: str) -> str:
        from hearth.dispatch.pause import pause

        require(user, "pause")
        return f"hearth is {pause(self.settings, by=ChannelBy(self.name, user.name).decider).line()}."

    def _resume(self, audit: AuditStore, inbound: Inbound, user: User, rest: str) -> str:
        from hearth.dispatch.pause import resume

        require(user, "pause")
        was = resume(self.settings)
        return f"Resumed (was {was.line()})." if was else "hearth was not paused."

    def _approve(self, audit: AuditStore, inbound: Inbound, user: User, rest: str) -> str:
        return self._replied_verdict(audit, user, "approve", rest)

    def _deny(self, audit: AuditStore, inbound: Inbound, user: User, rest: str) -> str:
        return self._replied_verdict(audit, user, "deny", rest)

    def _replied_verdict(self, audit: AuditStore, user: User, verdict: str, rest: str) -> str:
        ident = rest.split(maxsplit=1)[0] if rest.strip() else ""
        if not parse_button(f"{verdict[0]}:{ident}"):
            return f"Say which approval: /{verdict} ID (the id in its message)."
        handled = self._verdict(audit, user, verdict, ident)
        self._pending_edits.extend(handled.edits)
        return handled.answer

    # -- what is said back --------------------------------------------------------------------------
    def _say(self, audit: AuditStore, chat: str, text: str, kind: str, subject: str) -> None:
        row = {"channel": self.name, "chat": chat, "kind": kind, "subject": subject, "text": text}
        rows.add_delivery(audit, row | {"buttons": json.dumps([]), "created_at": self._stamp()})

    def _stamp(self, offset_s: float = 0) -> str:
        return (self.now() + timedelta(seconds=offset_s)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


COMMANDS: dict[str, Callable[[Desk, AuditStore, Inbound, User, str], str]] = {
    "/help": Desk._help,
    "/new": Desk._new,
    "/status": Desk._status,
    "/runs": Desk._runs,
    "/stop": Desk._stop,
    "/steer": Desk._steer,
    "/pause": Desk._pause,
    "/resume": Desk._resume,
    "/approve": Desk._approve,
    "/deny": Desk._deny,
}


def approval_text(approval: approvals.Approval, profile: str) -> str:
    """What an approval's message says: the run, its profile, the exact call, until when."""
    arguments = approval.arguments if len(approval.arguments) <= 600 else approval.arguments[:600] + " [...]"
    return (
        f"Approval {approval.id}: run {approval.run_id} (profile {profile}) asks to run {approval.tool} {arguments}\n"
        f"Reason: {approval.reason or '-'}\nUntil {approval.expires_at or 'decided'}."
    )
