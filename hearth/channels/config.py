"""channels.toml: which chat channels `hearth channels` runs, and how.

    [telegram]
    token_file = "/etc/hearth/telegram-token"   # else the credential telegram-token ($CREDENTIALS_DIRECTORY)
    api_url = "https://api.telegram.org"         # a Bot API server; a local one (or a test's) works too
    poll_s = 25                                  # how long one long poll waits for updates

    [email]
    address = "hearth@example.org"               # the mailbox hearth reads and the From of what it sends
    authserv_id = "mx.example.org"               # whose Authentication-Results to believe (docs/channels.md)
    imap_host = "mail.example.org"               # imap_port, imap_tls = "ssl" | "starttls" | "none"
    smtp_host = "mail.example.org"               # smtp_port, smtp_tls = "ssl" | "starttls" | "none"
    password_file = "/etc/hearth/mail-password"  # else the credential email-password; username = address
    poll_s = 30                                  # how often the mailbox is looked at; mailbox = "INBOX"
    max_mail_bytes = 10000000                    # a larger mail is refused unread

Limits that hold on every channel (each may be set in its table): `max_chars` of a message
(4,000), `flood_per_minute` from one sender (20; past it, one "slow down" and nothing more runs),
`refuse_every_s`, how often a stranger is told they are not known (600), and for attachments
(hearth/channels/attachments.py) `attachment_bytes` (10,000,000), `attachments_per_message` (5)
and `attachment_types`, the extensions taken (text, data, PDF and images by default).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hearth.errors import ConfigError
from hearth.tomlcheck import known_table, read_toml

FILE = "channels.toml"
LIMITS = {
    "max_chars": 4000,
    "flood_per_minute": 20,
    "refuse_every_s": 600,
    "attachment_bytes": 10_000_000,
    "attachments_per_message": 5,
}
KEYS = {
    "telegram": ("token_file", "api_url", "poll_s", "attachment_types"),
    "email": (
        *("address", "authserv_id", "password_file", "username", "mailbox", "poll_s", "max_mail_bytes"),
        "attachment_types",
        *("imap_host", "imap_port", "imap_tls", "smtp_host", "smtp_port", "smtp_tls"),
    ),
}
SECRETS = {"telegram": ("token_file", "telegram-token"), "email": ("password_file", "email-password")}


@dataclass(frozen=True)
class ChannelConfig:
    name: str
    options: dict[str, Any] = field(default_factory=dict)
    secret: str = ""  # the bot token: read once, never logged
    limits: dict[str, int] = field(default_factory=lambda: dict(LIMITS))

    def get(self, key: str, default: Any = None) -> Any:
        return self.options.get(key, default)


def load_channels(config_dir: Path, credentials_dir: Path | None = None) -> list[ChannelConfig]:
    """The channels channels.toml configures (none without the file); ConfigError names the file,
    the table and the key."""
    path = config_dir / FILE
    data = read_toml(path)
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown channel [{unknown[0]}]; the channels are {', '.join(KEYS)}")
    credentials = credentials_dir or _credentials_dir()
    return [_one(path, name, raw, credentials) for name, raw in data.items()]


def _one(path: Path, name: str, raw: Any, credentials: Path | None) -> ChannelConfig:
    table = known_table(path, f"[{name}]", raw, (*KEYS[name], *LIMITS))
    limits = dict(LIMITS)
    for key in LIMITS:
        if key in table:
            value = table.pop(key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{path}: [{name}].{key} must be a whole number of at least 1")
            limits[key] = value
    return ChannelConfig(name, table, _secret(path, name, table, credentials), limits)


def _secret(path: Path, name: str, table: dict[str, Any], credentials: Path | None) -> str:
    key, credential = SECRETS[name]
    given = table.pop(key, None)
    source = Path(given) if given else (credentials / credential if credentials else None)
    if source is None or not source.is_file():
        where = f"{key} = {given!r}" if given else f"{key}, or the credential {credential}"
        raise ConfigError(f"{path}: [{name}] needs its secret in a file: {where} (not found)")
    try:
        secret = source.read_text().strip()
    except OSError as exc:
        raise ConfigError(f"{path}: [{name}]: cannot read {source}: {exc.strerror or exc}") from None
    if not secret or any(c.isspace() for c in secret):
        raise ConfigError(f"{path}: [{name}]: {source} must hold the secret alone, one word")
    return secret


def _credentials_dir() -> Path | None:
    found = os.environ.get("CREDENTIALS_DIRECTORY")
    return Path(found) if found else None
