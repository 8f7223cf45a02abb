"""The child process one alert is sent from (hearth/leash/alertnet.py starts it).

It reads one job as JSON on stdin (the filled URL, title, body, the proxy's address, the
addresses it may reach directly, the credential values its URL holds), logs at HEARTH_LOG_LEVEL
with those values redacted (hearth/logs.py), installs an audit hook that refuses every connect but to
those, sends with apprise, and prints {"error": ...} ('' when sent) as its last line.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
from typing import Any


def confine(proxy: tuple[str, int], direct: set[tuple[str, int]]) -> None:
    """Refuse, from now on in this process, any connect but to `proxy` and to the `direct` addresses."""

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event != "socket.connect":
            return
        sock, address = args
        if sock.family == socket.AF_UNIX:
            raise PermissionError("hearth's alert sender connects to no local socket")
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            host, port = str(address[0]).split("%", 1)[0], int(address[1])
            if (host, port) == proxy or (host, port) in direct:
                return
            raise PermissionError(f"hearth's alert sender may not connect to {host}:{port} (not checked by the guard)")

    sys.addaudithook(hook)


def send(url: str, title: str, body: str) -> str:
    import apprise

    sender = apprise.Apprise(asset=apprise.AppriseAsset(async_mode=False))
    if not sender.add(url):
        return "apprise does not accept this URL"
    with apprise.LogCapture(level=logging.WARNING) as logs:
        sent = sender.notify(title=title, body=body)
    if sent:
        return ""
    lines = [line.split(" - ", 2)[-1] for line in logs.getvalue().splitlines() if line.strip()]
    return "; ".join(lines[-2:]) or "apprise could not send it"


def log_redacted(secrets: list[str]) -> None:
    """HEARTH_LOG_LEVEL here too (apprise's and urllib3's debug lines), with the URL's values redacted."""
    from agent.safety.redaction import Redactor
    from hearth.logs import configure
    from hearth.settings import Settings

    try:
        level = Settings.from_env().log_level
    except Exception:
        return
    configure(level, lambda: Redactor({f"alert-url-{i}": value for i, value in enumerate(secrets)}))


def main() -> int:
    job = json.loads(sys.stdin.read())
    log_redacted([str(v) for v in job.get("secrets", [])])
    confine((str(job["proxy"][0]), int(job["proxy"][1])), {(str(a), int(p)) for a, p in job["direct"]})
    try:
        error = send(job["url"], job["title"], job["body"])
    except Exception as exc:  # reported, never a traceback with the URL in it
        error = f"the send failed: {type(exc).__name__}"
    print(json.dumps({"error": error}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
