"""`hearth serve`: the command center, a web page to launch, watch, approve, replay and review runs."""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from hearth.render import visible_line
from hearth.settings import Settings

EPILOG = (
    "Listens on 127.0.0.1:8770 by default, open to whoever can reach loopback. Any other address "
    "needs --token-file (operator) and/or --viewer-token-file. exit codes: 0 stopped, 2 bad usage "
    "(no token for a public address, an unreadable token file), 3 the address cannot be listened on "
    "(another hearth serve has the port: give --port)"
)
IN_USE = 3


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="the web command center (default http://127.0.0.1:8770)", epilog=EPILOG)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8770, help="port (default 8770)")
    p.add_argument("--token-file", type=Path, metavar="FILE", help="the operator token (launch, decide, stop)")
    p.add_argument("--viewer-token-file", type=Path, metavar="FILE", help="the viewer token (read only)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME", help="another Host name to answer")
    p.add_argument("--watch", action="store_true", help="also run queued requests here (hosts without systemd)")
    p.add_argument("--certfile", type=Path, help="serve HTTPS with this certificate (cookies become Secure)")
    p.add_argument("--keyfile", type=Path, help="the certificate's private key")
    p.set_defaults(handler=serve)


def serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from hearth.dispatch.settle import settle_dead_runs
    from hearth.knowledge import Backlog
    from hearth.web.app import create_app
    from hearth.web.config import WebConfig, check_bind, load_tokens

    tokens = load_tokens(args.token_file, args.viewer_token_file, settings.credentials_dir)
    check_bind(args.host, tokens)
    try:  # first: a port taken is said at once, before anything is announced or started
        sock = _listening(args.host, args.port)
    except OSError as exc:
        print(
            visible_line(
                f"hearth serve: cannot listen on {_shown(args.host)}:{args.port}: {exc.strerror or exc}"
                "; another hearth serve may have it: give --port N"
            ),
            file=sys.stderr,
        )
        return IN_USE
    settle_dead_runs(settings)  # runs whose process is gone, before anyone looks at the page
    config = WebConfig(settings, args.host, args.port, tokens, tuple(args.allowed_host))
    app = create_app(config)
    watcher = _start_watch(settings) if args.watch else None
    backlog = Backlog(settings).start()  # chunks stored while the embedder was away get vectors
    scheme = "https" if args.certfile else "http"
    access = "open to anyone who reaches it (no token)" if config.open else f"tokens: {', '.join(sorted(tokens))}"
    print(f"hearth serve: {scheme}://{_shown(args.host)}:{args.port}/ ({access})", file=sys.stderr, flush=True)
    server = _server(
        uvicorn.Config(app, host=args.host, port=args.port, log_level="warning", **_tls(args)), app.state.web.live
    )
    try:
        server.run(sockets=[sock])
    finally:
        backlog.stop()
        if watcher is not None:
            watcher.stop()
    return 0


def _listening(host: str, port: int) -> socket.socket:
    """The server's socket, bound and listening (OSError when the address is taken or not ours)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[
        0
    ]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn sets it: a restart may rebind at once
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def _tls(args: argparse.Namespace) -> dict[str, Any]:
    if not args.certfile:
        return {"timeout_graceful_shutdown": 3}
    return {"ssl_certfile": str(args.certfile), "ssl_keyfile": str(args.keyfile), "timeout_graceful_shutdown": 3}


def _shown(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _server(config: Any, live: Any) -> Any:
    """uvicorn's server, ending the live event streams when told to stop (they never end alone)."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            live.close()
            # uvicorn re-raises a caught SIGTERM once it has shut down; a stop asked for is exit 0 here
            # (as `hearth watch`), so forget it (the list is uvicorn's; absent, nothing is re-raised)
            getattr(self, "_captured_signals", []).clear()

    return Server(config)


class _Watcher:
    """`hearth watch` in a thread of this process, for a host without systemd.

    Its spawner is built in that thread: the audit connection it opens belongs to one thread.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ready = threading.Event()
        self.watch: Any = None
        self.thread = threading.Thread(target=self._run, name="hearth-watch", daemon=True)

    def _run(self) -> None:
        from hearth.dispatch.launchers import here_or_fleet, launcher_for
        from hearth.dispatch.spawner import Spawner
        from hearth.dispatch.watch import Watch

        try:
            with Spawner(self.settings, launcher_for(self.settings, here_or_fleet(self.settings))) as spawner:
                spawner.report = run_lines(lambda run_id: _status(spawner, run_id))
                self.watch = Watch(spawner)
                self.ready.set()
                self.watch.run()
        finally:
            self.ready.set()

    def stop(self) -> None:
        self.ready.wait(10)
        if self.watch is not None:
            self.watch.stop()
        self.thread.join(60)


# what a person watching `hearth serve --watch` is told: one line when a run starts, waits for a
# person (and is suspended), goes on, ends or fails to start
SAID = {
    "started": "started",
    "waiting": "waits",
    "resumed": "goes on",
    "ended": "ended",
    "settled": "ended",
    "launch_failed": "failed to start",
}


def run_lines(status: Callable[[str], str | None], out: TextIO | None = None) -> Callable[[str, str, str], None]:
    """The spawner's report as one stderr line per run started, waiting for a person, gone on, ended
    (with the status it recorded and, when not done, its error's first line) or failed to start;
    the rest stays quiet. A process that exits to wait for a person has not ended the run: its end
    is said when the run really ends, by its process's exit or by a settle, whichever comes first,
    once."""
    ended: set[str] = set()

    def report(what: str, name: str, detail: str) -> None:
        run_id = name.removesuffix(".json")
        if what not in SAID or (SAID[what] == "ended" and run_id in ended):
            return
        if SAID[what] == "ended":
            detail = status(run_id) or detail
            if detail.startswith("waiting"):
                return  # suspended: the settle that follows says so as `waits`
            ended.add(run_id)
        line = f"hearth serve: {time.strftime('%H:%M:%S')} run {run_id} {SAID[what]}{': ' + detail if detail else ''}"
        print(visible_line(line), file=out or sys.stderr, flush=True)

    return report


def _status(spawner: Any, run_id: str) -> str | None:
    """`done`, or `failed: the error's first line`, as the audit has it."""
    run = spawner.audit.run(run_id)
    if run is None:
        return None
    text = (run.get("error") or "").strip()
    return f"{run['status']}: {text.splitlines()[0][:300]}" if text and run["status"] != "done" else run["status"]


def _start_watch(settings: Settings) -> _Watcher:
    watcher = _Watcher(settings)
    watcher.thread.start()
    print(f"hearth serve: running queued requests from {settings.queue_dir} here (--watch)", file=sys.stderr)
    return watcher
