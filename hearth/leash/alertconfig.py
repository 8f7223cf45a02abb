"""alerts.toml: where the operator's alerts go, which events each destination wants, and when a
waiting approval is alerted again (hearth/leash/alerts.py sends them).

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

`redacted` is a destination's URL as `hearth alerts` and the Alerts page show it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hearth.errors import ConfigError
from hearth.limits import parse_duration
from hearth.tomlcheck import known_table, read_toml

ALERTS_FILE = "alerts.toml"
# run statuses, plus `approval` (a call waits for a decision) and `test` (hearth alerts test);
# `tripped` is a run that touched a decoy secret, `rejected` a refused request (a request the daily
# budget refuses is `budget_exceeded`), `leg_limit` and `no_progress` a marathon's ends,
# `eval_regression` an eval's pass rate that fell past its threshold (hearth/eval/watch.py),
# `skill_retired` a skill whose check failed after an earlier one passed (hearth/skills/state.py)
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
    "skill_retired",
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
    "skill_retired",
)
KEYS = ("name", "url", "events", "local", "user")
APPROVAL_KEYS = ("public_url", "remind_after", "remind_before")
REMIND_AFTER_S = 3600.0
REMIND_BEFORE_S = 900.0
CRED = re.compile(r"\{cred:([A-Za-z][A-Za-z0-9_.-]{0,63})\}")


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
