"""Alerts' receivers: a loopback webhook that records what it got, and an alerts.toml writer."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class Receiver:
    """An HTTP server on 127.0.0.1:0 that records every POST (path, headers, JSON body); it can
    hold its answers until `release()` to play a slow destination."""

    def __init__(self, *, hold: bool = False) -> None:
        self.got: list[dict[str, Any]] = []
        self.released = threading.Event()
        if not hold:
            self.released.set()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def release(self) -> None:
        self.released.set()

    def close(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.got.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
                receiver.released.wait(30)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        return Handler


def write_alerts_toml(config: Path, *destinations: tuple[str, str, list[str] | None], local: bool = True) -> None:
    """alerts.toml with these destinations; `local` marks each one `local = true` (the receivers
    here are on 127.0.0.1, which the address policy refuses unless the file says so)."""
    config.mkdir(parents=True, exist_ok=True)
    text = ""
    for name, url, events in destinations:
        text += f"[[destination]]\nname = {json.dumps(name)}\nurl = {json.dumps(url)}\n"
        text += "local = true\n" if local else ""
        text += f"events = {json.dumps(events)}\n\n" if events else "\n"
    (config / "alerts.toml").write_text(text)
