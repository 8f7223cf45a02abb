"""Alerts: tell the operator when a run fails, stops, spends its budget, waits for an approval, ...

Where they go and which events each destination wants is alerts.toml, read by
hearth/leash/alertconfig.py (its docstring draws the file).

An approval alert carries Approve and Deny as signed single-use links (hearth/leash/actions.py) to
`hearth serve`'s /act/ page when a base URL is known: ntfy destinations get them as `http` action
buttons (apprise's `actions=` URL argument, sent as ntfy's X-Actions header), every other destination
as two links in the text. The links are capabilities: the `alerts` table records that they were
sent, never the links themselves. Without a base URL the alert says how to decide from the CLI.

Sending is apprise's (ntfy, Telegram, Slack, Matrix, email, webhooks, ... in one URL syntax);
`{cred:NAME}` in a URL is replaced at send time by that credential from hearth's store (or
systemd's $CREDENTIALS_DIRECTORY), and the value never reaches the audit. Best effort: `notify`
returns at once, a thread sends with a short timeout and a couple of retries, and every attempt's
result (sent, or failed with the error) is a row of the audit's `alerts` table. A failing or slow
destination never fails or holds up a run; the process waits at most for its last sends on exit.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agent.clock import stamp, utc_now
from hearth.audit import alerts as alert_rows
from hearth.audit import approvals
from hearth.audit.approvals import Approval, parse_stamp, utc_clock
from hearth.audit.store import AuditStore
from hearth.errors import ConfigError, HearthError
from hearth.leash.alertconfig import ALERTS_FILE as ALERTS_FILE  # still importable from here
from hearth.leash.alertconfig import (
    CRED,
    EVENTS,
    ApprovalAlerts,
    Destination,
    load_approval_alerts,
    load_destinations,
)
from hearth.leash.alertconfig import redacted as redacted  # still importable from here
from hearth.render import time_left
from hearth.settings import Settings

NTFY = ("ntfy://", "ntfys://")
TIMEOUTS = {"cto": "3", "rto": "4"}  # apprise's connect and read timeouts, when a URL does not set them
RETRIES = 2
BACKOFF_S = 0.5

_pending: list[threading.Thread] = []


@dataclass(frozen=True)
class Alert:
    event: str
    title: str
    body: str
    run_id: str | None = None
    links: Links | None = None  # Approve / Deny: buttons on ntfy, links in the text elsewhere


@dataclass(frozen=True)
class Links:
    """What an approval alert's signed links need; each destination gets its own (signed with its name)."""

    base: str  # where `hearth serve` is reached
    approval_id: str
    expires: int  # epoch seconds: the approval's deadline

    def signed(self, state_dir: Path, destination: Destination) -> tuple[tuple[str, str], ...]:
        from hearth.leash import actions

        to = destination.name
        return tuple(
            (label, f"{self.base}/act/{actions.sign(state_dir, self.approval_id, decision, self.expires, to)}")
            for label, decision in (("Approve", "approve"), ("Deny", "deny"))
        )


# -- sending --------------------------------------------------------------------------------------
Resolve = Callable[[str], str | None]


def notify(settings: Settings, alert: Alert) -> threading.Thread | None:
    """Send `alert` to each destination that wants its event, in the background; never raises."""
    try:
        wanted = [d for d in load_destinations(settings.config_dir) if d.wants(alert.event)]
    except ConfigError:
        return None  # a broken alerts.toml is hearth doctor's to report, never a run's problem
    if not wanted:
        return None
    thread = threading.Thread(target=_send_all, args=(settings, alert, wanted), name="hearth-alert")
    _pending.append(thread)
    thread.start()  # not a daemon: the process lets it finish (bounded by timeouts) before it exits
    return thread


def flush(timeout_s: float = 15.0) -> None:
    """Wait (at most `timeout_s`) for the alerts still being sent."""
    deadline = time.monotonic() + timeout_s
    while _pending:
        _pending.pop().join(max(0.0, deadline - time.monotonic()))


def send_now(settings: Settings, alert: Alert, destinations: list[Destination]) -> list[dict[str, Any]]:
    """Send to each destination here and now; the recorded result of each."""
    return [_send_one(settings, alert, d) for d in destinations]


def _send_all(settings: Settings, alert: Alert, destinations: list[Destination]) -> None:
    for destination in destinations:
        try:
            _send_one(settings, alert, destination)
        except Exception:  # best effort: an alert must never break its caller
            continue


def _send_one(settings: Settings, alert: Alert, destination: Destination) -> dict[str, Any]:
    secrets: list[str] = []
    error, attempts = "", 0
    try:
        url = _filled(destination.url, _resolver(settings), secrets)
    except HearthError as exc:
        url, error = "", str(exc)
    sent = alert
    if url and alert.links is not None:
        try:
            links = alert.links.signed(settings.state_dir, destination)
        except OSError:  # no key, no links: the CLI's way still works
            links = ()
        buttons = bool(links) and destination.url.startswith(NTFY) and ntfy_buttons()
        sent = _with_links(alert, links, buttons=buttons)
        if buttons:
            url = _with_ntfy_actions(url, links)
    while url and attempts <= RETRIES:
        attempts += 1
        error = _attempt(url, sent, destination, secrets)
        if not error:
            break
        if attempts <= RETRIES:
            time.sleep(BACKOFF_S * attempts)
    for secret in secrets:
        error = error.replace(secret, "[redacted]")
    return _record(settings, alert, destination, attempts, error)


def _resolver(settings: Settings) -> Resolve:
    from hearth.credentials import CredentialStore

    store = CredentialStore(settings.credentials_path, settings.credentials_dir)
    return store.value


def _filled(url: str, resolve: Resolve, secrets: list[str]) -> str:
    def value(found: re.Match[str]) -> str:
        secret = resolve(found.group(1))
        if not secret:
            raise ConfigError(f"alert URL names credential {found.group(1)!r}, which hearth's store does not have")
        secrets.append(secret)
        return secret

    filled = CRED.sub(value, url)
    extra = "&".join(f"{k}={v}" for k, v in TIMEOUTS.items() if f"{k}=" not in filled)
    return filled + (("&" if "?" in filled else "?") + extra if extra else "")


def _with_ntfy_actions(url: str, actions: tuple[tuple[str, str], ...]) -> str:
    """ntfy `http` action buttons (each POSTs its signed link without opening a page) via apprise's
    `actions=` argument, which it sends as ntfy's X-Actions header."""
    header = "; ".join(f"http, {label}, {link}, method=POST, clear=true" for label, link in actions)
    return url + ("&" if "?" in url else "?") + "actions=" + quote(header, safe="")


def ntfy_buttons() -> bool:
    """Whether this apprise sends ntfy action buttons (its `actions=` argument, added late in 2025);
    an older one would drop them silently, so its ntfy alerts get the links in the text instead."""
    from apprise.plugins import ntfy

    return "actions" in getattr(ntfy.NotifyNtfy, "template_args", {})


def _with_links(alert: Alert, links: tuple[tuple[str, str], ...], *, buttons: bool) -> Alert:
    """What a destination is sent: ntfy's buttons are said in a line, others get the links in the text."""
    if not links:
        return alert
    if buttons:
        extra = "Approve or Deny with the buttons below (each decides once)."
    else:
        extra = "\n".join(f"{label.lower()}: {link}" for label, link in links) + "\n(each link decides once)"
    return Alert(alert.event, alert.title, f"{alert.body}\n{extra}", alert.run_id)


def _attempt(url: str, alert: Alert, destination: Destination, secrets: list[str]) -> str:
    """One send, through the guard (hearth/leash/alertnet.py); the error ('' when sent)."""
    from hearth.leash.alertnet import origin, send

    local = origin(url) if destination.local else None
    if destination.local and local is None:
        return "local = true, but the URL names no host apprise connects to"
    return send(url, alert.title, alert.body, local=local, secrets=secrets)


def _record(settings: Settings, alert: Alert, destination: Destination, attempts: int, error: str) -> dict[str, Any]:
    row = {
        "at": utc_now(),
        "event": alert.event,
        "run_id": alert.run_id,
        "destination": destination.name,
        "status": "failed" if error else "sent",
        "attempts": attempts,
        "error": error or None,
        "title": alert.title,
        "body": (
            alert.body
            + ("\n[approve and deny links sent; a link is a capability and is not kept]" if alert.links else "")
        )[:2000],
    }
    settings.writable_state_dir()
    with AuditStore(settings.audit_path) as audit:
        alert_rows.record(audit, row)
    return row


# -- what hearth says -----------------------------------------------------------------------------
def run_ended(settings: Settings, run_id: str, status: str, *, goal: str, detail: str, agent: str) -> None:
    """A run reached a final status: alert the destinations that want it."""
    if status not in EVENTS:
        return
    title = f"hearth: run {run_id} {status.replace('_', ' ')}"
    link = f"\n{settings.web_url}/runs/{run_id}" if settings.web_url else ""
    body = f"{agent}: {goal[:300]}\n{detail[:800]}{link}".strip()
    notify(settings, Alert(status, title, body, run_id))


def mcp_drift(settings: Settings, run_id: str, server: str, refused: list[str]) -> None:
    """An MCP server's tool changed since it was approved (a "rug pull"): the run refuses it."""
    title = f"hearth: MCP server {server} changed a tool since it was approved"
    body = "\n".join(refused[:10]) + f"\nrefused in run {run_id}; review: hearth mcp review {server}"
    notify(settings, Alert("mcp_drift", title, body, run_id or None))


def approval_waiting(
    settings: Settings, run_id: str, approval_id: str, call: str, expires_at: str, left_s: float
) -> None:
    """A call waits for a decision: the call, the run, the time left, and Approve / Deny links (with
    a base URL) or the CLI commands (without)."""
    notify(settings, approval_alert(settings, run_id, approval_id, call, expires_at, left_s))


def approval_alert(
    settings: Settings,
    run_id: str,
    approval_id: str,
    call: str,
    expires_at: str,
    left_s: float,
    *,
    title: str = "",
) -> Alert:
    """The alert of a waiting approval (first, or a reminder with its own `title`)."""
    try:
        base = load_approval_alerts(settings.config_dir).public_url or settings.web_url
    except ConfigError:
        base = settings.web_url
    links = Links(base, approval_id, int(parse_stamp(expires_at).timestamp())) if base else None
    cli = f"\n{'or ' if links else ''}decide: hearth approve {approval_id}  or  hearth deny {approval_id}"
    page = f"\n{settings.web_url}/approvals" if settings.web_url else ""
    # in UTC, as the link's page says it: the phone reading it may be in another zone than hearth
    until = parse_stamp(expires_at).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    body = (
        f"run {run_id} waits for approval {approval_id}: {call[:600]}{run_line(settings, run_id)}\n"
        f"{time_left(left_s)} left (until {until}); no decision is a deny.{cli}{page}"
    )
    return Alert("approval", title or f"hearth: approval {approval_id} waits", body, run_id, links)


def run_line(settings: Settings, run_id: str) -> str:
    """`\nprofile builder: GOAL`: what the waiting run is for, so a person decides knowing it ('' when
    the audit cannot say). The audit keeps the goal with every credential value redacted."""
    from hearth.audit import runs

    try:
        with AuditStore.read_only(settings.audit_path) as audit:
            found = runs.header(audit, run_id)
    except (sqlite3.Error, OSError):
        return ""
    return f"\nprofile {found['agent_name']}: {found['goal'][:300]}" if found else ""


def pending_alert(settings: Settings) -> Callable[[Approval, str], None]:
    """The headless approver's `on_pending`: alert each approval it starts waiting for."""

    def pending(approval: Approval, call: str) -> None:
        left_s = (parse_stamp(approval.expires_at) - utc_clock()).total_seconds()
        approval_waiting(settings, approval.run_id, approval.id, call, approval.expires_at, max(0.0, left_s))

    return pending


# -- reminders --------------------------------------------------------------------------------------
def remind_due(settings: Settings, audit: AuditStore, now: datetime | None = None) -> list[str]:
    """Alert once more each approval still undecided `remind_after` after it was asked, and again
    `remind_before` before it expires; each reminder once (claimed in `alert_reminders` before it is
    sent, so sweeps in several processes agree). The reminders sent, as `APPROVAL:after|before`.

    For the spawner's sweep, `hearth watch`'s and `hearth serve`'s: cheap when nothing waits."""
    try:
        config = load_approval_alerts(settings.config_dir)
        if not [d for d in load_destinations(settings.config_dir) if "approval" in d.events]:
            return []
    except ConfigError:
        return []
    moment = now or utc_clock()
    sent = []
    for approval in approvals.waiting(audit, stamp(moment)):
        kind = _reminder_due(approval, config, moment)
        if kind is None or not alert_rows.claim_reminder(audit, approval.id, kind, stamp(moment)):
            continue
        left_s = (parse_stamp(approval.expires_at) - moment).total_seconds()
        title = f"hearth: approval {approval.id} " + (
            "still waits" if kind == "after" else f"expires in {time_left(left_s)}"
        )
        call = f"{approval.tool} {approval.arguments}"
        notify(
            settings,
            approval_alert(settings, approval.run_id, approval.id, call, approval.expires_at, left_s, title=title),
        )
        sent.append(f"{approval.id}:{kind}")
    return sent


def _reminder_due(approval: Approval, config: ApprovalAlerts, moment: datetime) -> str | None:
    asked, expires = parse_stamp(approval.requested_at), parse_stamp(approval.expires_at)
    before = None if config.remind_before_s is None else expires - timedelta(seconds=config.remind_before_s)
    if before is not None and before > asked and moment >= before:
        return "before"
    if config.remind_after_s is not None and moment >= asked + timedelta(seconds=config.remind_after_s):
        return "after"
    return None
