"""Alerts: tell the operator when a run fails, stops, spends its budget, waits for an approval, ...

    $HEARTH_CONFIG_DIR/alerts.toml       (on NixOS: services.hearth.alerts)
        [[destination]]
        name = "phone"
        url = "ntfy://{cred:NTFY_TOKEN}@ntfy.example.org/hearth"   any apprise URL
        events = ["failed", "approval"]  absent: DEFAULT_EVENTS; EVENTS lists them all, and
                                         `failed` is every failure (FAILURES) too
        local = true                     only for a destination on this machine or the LAN
                                         (never a cloud metadata service)

A destination gets the network guard's address policy (hearth/leash/alertnet.py): loopback,
link-local, private and other special-purpose addresses are refused at load and at send (names
resolved then, every redirect checked) unless that destination says `local = true`.

        [approval]                          all optional
        public_url = "https://hearth.lan:8443"   where a phone reaches `hearth serve` (else HEARTH_WEB_URL)
        remind_after = "1h"                 still undecided after this: alerted once more (false: never)
        remind_before = "15m"               and again this long before it expires (false: never)

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
from urllib.parse import quote, urlsplit

from agent.clock import stamp, utc_now
from hearth.audit import alerts as alert_rows
from hearth.audit import approvals
from hearth.audit.approvals import Approval, parse_stamp, utc_clock
from hearth.audit.store import AuditStore
from hearth.errors import ConfigError, HearthError
from hearth.limits import parse_duration
from hearth.render import time_left
from hearth.settings import Settings
from hearth.tomlcheck import known_table, read_toml

ALERTS_FILE = "alerts.toml"
# run statuses, plus `approval` (a call waits for a decision) and `test` (hearth alerts test);
# `tripped` is a run that touched a decoy secret, `rejected` a refused request (a request the daily
# budget refuses is `budget_exceeded`), `leg_limit` and `no_progress` a marathon's ends,
# `eval_regression` an eval's pass rate that fell past its threshold (hearth/eval/watch.py)
EVENTS = (
    "failed",
    "interrupted",
    "budget_exceeded",
    "approval",
    "tripped",
    "rejected",
    "done",
    "iteration_limit",
    "stuck",
    "model_unavailable",
    "denied",
    "leg_limit",
    "no_progress",
    "mcp_drift",
    "eval_regression",
)
# Every way a run ends that is a failure: a destination that wants `failed` hears of each, once, so
# a short list of events ("failed", "approval") misses none (an operator's stop, `interrupted`, and
# `done` are not failures)
FAILURES = (
    "failed",
    "rejected",
    "model_unavailable",
    "budget_exceeded",
    "iteration_limit",
    "denied",
    "tripped",
    "leg_limit",
    "no_progress",
)
DEFAULT_EVENTS = (
    "failed",
    "interrupted",
    "budget_exceeded",
    "approval",
    "tripped",
    "rejected",
    "mcp_drift",
    "eval_regression",
)
KEYS = ("name", "url", "events", "local", "user")
APPROVAL_KEYS = ("public_url", "remind_after", "remind_before")
REMIND_AFTER_S = 3600.0
REMIND_BEFORE_S = 900.0
NTFY = ("ntfy://", "ntfys://")
CRED = re.compile(r"\{cred:([A-Za-z][A-Za-z0-9_.-]{0,63})\}")
TIMEOUTS = {"cto": "3", "rto": "4"}  # apprise's connect and read timeouts, when a URL does not set them
RETRIES = 2
BACKOFF_S = 0.5

_pending: list[threading.Thread] = []


@dataclass(frozen=True)
class Destination:
    name: str
    url: str  # as written: `{cred:NAME}` not yet replaced
    events: tuple[str, ...] = DEFAULT_EVENTS
    local: bool = False  # alerts.toml's `local = true`: the guard's address policy is waived for it
    user: str = "operator"  # whose rights its Approve / Deny links have (hearth/users/access.py)

    def wants(self, event: str) -> bool:
        """Its own events, every failure when it wants `failed`, and `hearth alerts test`."""
        return event in self.events or event == "test" or (event in FAILURES and "failed" in self.events)

    @property
    def credentials(self) -> list[str]:
        return CRED.findall(self.url)


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


@dataclass(frozen=True)
class ApprovalAlerts:
    """alerts.toml's [approval]: the base of the signed links, and when to remind (None: never)."""

    public_url: str = ""
    remind_after_s: float | None = REMIND_AFTER_S
    remind_before_s: float | None = REMIND_BEFORE_S


def load_approval_alerts(config_dir: Path) -> ApprovalAlerts:
    """alerts.toml's [approval] table (defaults without it); ConfigError names the file and key."""
    path = config_dir / ALERTS_FILE
    return _approval_alerts(path, read_toml(path)) if path.exists() else ApprovalAlerts()


def _approval_alerts(path: Path, data: dict[str, Any]) -> ApprovalAlerts:
    raw = known_table(path, "approval", data.get("approval", {}), APPROVAL_KEYS)
    url = raw.get("public_url", "")
    if not isinstance(url, str) or (url and not url.startswith(("http://", "https://"))):
        raise ConfigError(f"{path}: approval.public_url must be an http:// or https:// address")
    return ApprovalAlerts(
        url.strip().rstrip("/"),
        _interval(path, raw, "remind_after", REMIND_AFTER_S),
        _interval(path, raw, "remind_before", REMIND_BEFORE_S),
    )


def _interval(path: Path, raw: dict[str, Any], name: str, default: float) -> float | None:
    value = raw.get(name, default)
    if value is False:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ConfigError(f"{path}: approval.{name}: {exc} (or false: never)") from None


def load_destinations(config_dir: Path) -> list[Destination]:
    """The destinations of alerts.toml (none without the file); ConfigError names the file and field."""
    path = config_dir / ALERTS_FILE
    if not path.exists():
        return []
    data = read_toml(path)
    if set(data) - {"destination", "approval"}:
        odd = sorted(set(data) - {"destination", "approval"})[0]
        raise ConfigError(f"{path}: unknown key {odd!r}; use [[destination]] (and [approval])")
    _approval_alerts(path, data)  # a bad [approval] is reported (hearth doctor) as a bad file
    raw = data.get("destination", [])
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: destination must be a list of tables ([[destination]])")
    found = [_destination(path, i, d) for i, d in enumerate(raw)]
    names = [d.name for d in found]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice:
        raise ConfigError(f"{path}: two destinations are named {twice!r}")
    return found


def _destination(path: Path, index: int, raw: Any) -> Destination:
    where = f"destination[{index}]"
    raw = known_table(path, where, raw, KEYS)
    url = raw.get("url")
    if not (isinstance(url, str) and url.strip()):
        raise ConfigError(f"{path}: {where}.url must be an apprise URL such as ntfy://host/topic")
    if not known_url(url):
        scheme = url.split("://", 1)[0]
        raise ConfigError(f"{path}: {where}.url: apprise does not know the scheme {scheme + '://'!r}")
    events = raw.get("events", list(DEFAULT_EVENTS))
    if not (isinstance(events, list) and events and all(isinstance(e, str) for e in events)):
        raise ConfigError(f"{path}: {where}.events must be a list of events ({', '.join(EVENTS)})")
    odd = next((e for e in events if e not in EVENTS), None)
    if odd:
        raise ConfigError(f"{path}: {where}.events: {odd!r} is not one of {', '.join(EVENTS)}")
    local = raw.get("local", False)
    if not isinstance(local, bool):
        raise ConfigError(f"{path}: {where}.local must be true or false")
    _address_policy(path, where, CRED.sub("x", url.strip()), local)
    name = raw.get("name", f"destination-{index}")
    user = raw.get("user", "operator")
    if not (isinstance(user, str) and user.strip()):
        raise ConfigError(f"{path}: {where}.user must name a user of hearth (hearth users list)")
    return Destination(str(name), url.strip(), tuple(events), local, user.strip())


def _address_policy(path: Path, where: str, url: str, local: bool) -> None:
    from hearth.leash.alertnet import metadata_refusal, origin, refusal

    never = metadata_refusal(url)
    if never:
        raise ConfigError(
            f"{path}: {where}.url: {never}, neither this machine nor the LAN; alerts never go there, "
            "local = true or not"
        )
    if local and origin(url) is None:
        raise ConfigError(f"{path}: {where}.local: the URL names no host apprise connects to, so nothing is local")
    problem = None if local else refusal(url)
    if problem:
        raise ConfigError(
            f"{path}: {where}.url: {problem}; alerts go only to public addresses unless the destination "
            "says local = true"
        )


def known_url(url: str) -> bool:
    """Whether apprise has a plugin for this URL (credential placeholders filled with a dummy)."""
    import apprise  # 0.3 s to import: only when alerts are configured

    return apprise.Apprise.instantiate(CRED.sub("x", url)) is not None


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


def redacted(url: str) -> str:
    """`ntfy://x@ntfy.example.org/h...c`: scheme and host, every secret-bearing part shortened
    (apprise's own private form, each path part cut, the query left off): what `hearth alerts` and
    the Alerts page show, since a destination URL can hold a token, a topic or a password."""
    import apprise  # 0.3 s to import: only when alerts are configured

    plugin = apprise.Apprise.instantiate(CRED.sub("x", url))
    private = plugin.url(privacy=True) if plugin is not None else CRED.sub("x", url)
    parts = urlsplit(private)
    netloc = parts.netloc.rsplit("@", 1)
    host = netloc[-1] if len(netloc) == 1 else f"{_short(netloc[0])}@{netloc[1]}"
    path = "/".join(_short(segment) for segment in parts.path.split("/"))
    return f"{parts.scheme}://{host}{path}"


def _short(part: str) -> str:
    return part if len(part) <= 3 or "..." in part or "*" in part else f"{part[0]}...{part[-1]}"
