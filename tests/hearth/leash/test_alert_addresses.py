"""Alert destinations get the network guard's address policy: special-purpose addresses are refused
at load and at send (names resolved then, redirects checked) unless alerts.toml marks that exact
destination `local = true`."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agent.net.guard import NetRefused
from hearth.errors import ConfigError
from hearth.leash.alertnet import AlertGuard, Origin, direct_addresses
from hearth.leash.alerts import Alert, Destination, load_destinations, send_now
from hearth.settings import Settings
from tests.alert_support import Receiver
from tests.alert_support import write_alerts_toml as _alerts
from tests.conftest import run_cli
from tests.queue_support import rows


@pytest.fixture
def hook() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


class Redirector:
    """A loopback server that answers every POST with a 307 to `location`."""

    def __init__(self, location: str) -> None:
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.hits += 1
                self.send_response(307)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


REFUSED = {
    "loopback": ("json://127.0.0.1:9/x", "127.0.0.1 is a loopback address"),
    "link-local": ("json://169.254.1.1/x", "169.254.1.1 is a link-local address"),
    "private LAN": ("ntfy://192.168.1.20/hearth", "192.168.1.20 is a private address"),
    "IPv6 loopback": ("json://[::1]:9/x", "::1 is a loopback address"),
    "this machine by name": ("ntfy://localhost:8080/hearth", "localhost names this machine"),
    "a credential in the URL": ("json://u:{cred:k}@10.1.2.3/x", "10.1.2.3 is a private address"),
}


@pytest.mark.parametrize(("url", "reason"), REFUSED.values(), ids=REFUSED.keys())
def test_a_special_purpose_destination_is_refused_at_load_with_its_reason(
    tmp_path: Path, url: str, reason: str
) -> None:
    _alerts(tmp_path, ("x", url, None), local=False)
    with pytest.raises(ConfigError) as caught:
        load_destinations(tmp_path)
    assert reason in str(caught.value)
    assert "alerts go only to public addresses unless the destination says local = true" in str(caught.value)


METADATA = {
    "the address": ("json://169.254.169.254/latest/meta-data", "169.254.169.254 is a cloud metadata address"),
    "as one number": ("json://2852039166/x", "2852039166 is a cloud metadata address"),
    "IPv4-mapped": ("json://[::ffff:169.254.169.254]/x", "::ffff:169.254.169.254 is a cloud metadata address"),
    "AWS IPv6": ("ntfy://[fd00:ec2::254]/hearth", "fd00:ec2::254 is a cloud metadata address"),
    "by name": ("json://metadata.google.internal/x", "metadata.google.internal names a cloud metadata service"),
}


@pytest.mark.parametrize(("url", "reason"), METADATA.values(), ids=METADATA.keys())
def test_a_cloud_metadata_destination_is_refused_at_load_even_marked_local(
    tmp_path: Path, url: str, reason: str
) -> None:
    _alerts(tmp_path, ("meta", url, None), local=True)
    with pytest.raises(ConfigError) as caught:
        load_destinations(tmp_path)
    assert f"{reason}, neither this machine nor the LAN; alerts never go there, local = true or not" in str(
        caught.value
    )


def test_alerts_test_refuses_a_metadata_destination_marked_local(state_dir: Path, tmp_path: Path) -> None:
    _alerts(tmp_path / "config", ("meta", "json://169.254.169.254/latest/meta-data", None), local=True)
    tested = run_cli("hearth", "alerts", "test")
    assert tested.returncode != 0 and "169.254.169.254 is a cloud metadata address" in tested.stderr


def test_the_send_refuses_a_metadata_destination_marked_local_that_skipped_the_load_check(state_dir: Path) -> None:
    """The send's wall alone: a destination that never went through alerts.toml."""
    meta = Destination("meta", "json://169.254.169.254/latest/meta-data", local=True)
    [row] = send_now(Settings.from_env(), Alert("test", "t", "the run's text"), [meta])
    assert row["status"] == "failed"
    assert "169.254.169.254 is a cloud metadata address; alerts never go there, local = true or not" in row["error"]


def test_a_local_name_that_resolves_to_a_metadata_address_is_refused_at_send() -> None:
    guard = AlertGuard(Origin("meta.lan", 80))
    guard.resolver = lambda host, port: ["192.168.1.9", "169.254.169.254"]
    with pytest.raises(NetRefused) as caught:
        guard.check("http://meta.lan/x")
    assert "meta.lan resolves to 169.254.169.254, 169.254.169.254 is a cloud metadata address" in str(caught.value)
    guard.resolver = lambda host, port: ["192.168.1.9"]
    assert guard.check("http://meta.lan/x").addresses == ("192.168.1.9",)  # the LAN is what local allows
    assert direct_addresses("json://169.254.169.254/x", Origin("169.254.169.254", 80)) == []


def test_doctor_and_alerts_test_say_why_a_loopback_destination_is_refused(
    state_dir: Path, tmp_path: Path, hook: Receiver
) -> None:
    _alerts(tmp_path / "config", ("hook", f"json://127.0.0.1:{hook.port}/a", None), local=False)
    doctor = run_cli("hearth", "doctor", "--json")
    found = {f["check"]: f["message"] for f in json.loads(doctor.stdout)["findings"] if f["status"] == "error"}
    assert "127.0.0.1 is a loopback address" in found["alerts"] and "local = true" in found["alerts"]
    tested = run_cli("hearth", "alerts", "test")
    assert tested.returncode != 0 and "127.0.0.1 is a loopback address" in tested.stderr
    assert hook.got == []


def test_a_destination_marked_local_is_delivered_and_listed_as_local(
    state_dir: Path, tmp_path: Path, hook: Receiver
) -> None:
    _alerts(tmp_path / "config", ("hook", f"json://127.0.0.1:{hook.port}/a", None))
    assert run_cli("hearth", "alerts", "test").returncode == 0
    assert hook.got[0]["body"]["title"] == "hearth: test alert"
    listed = json.loads(run_cli("hearth", "alerts", "--json").stdout)
    assert listed["destinations"][0]["local"] is True
    doctor = json.loads(run_cli("hearth", "doctor", "--json").stdout)["findings"]
    assert {
        "check": "alerts",
        "status": "info",
        "path": None,
        "message": ("alert destination hook is local = true: the address policy lets it reach this machine or the LAN"),
    } in doctor


def test_the_alert_sender_connects_nowhere_but_its_proxy_and_the_checked_addresses(tmp_path: Path) -> None:
    """The child's audit hook: without the proxy in its environment apprise would connect straight
    to the destination, and that connect is refused before a packet leaves."""
    target = socket.socket()
    target.bind(("127.0.0.1", 0))
    target.listen(4)
    target.setblocking(False)
    job = {
        "url": f"json://127.0.0.1:{target.getsockname()[1]}/a",
        "title": "t",
        "body": "b",
        "proxy": ["127.0.0.1", 9],
        "direct": [],
        "secrets": [],
    }
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "hearth.leash.alertsend"],
            input=json.dumps(job),
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        with pytest.raises(BlockingIOError):
            target.accept()
    finally:
        target.close()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["error"]  # not sent


def test_a_name_is_resolved_at_send_and_refused_when_it_names_a_special_address(
    state_dir: Path, tmp_path: Path
) -> None:
    """The name passes the load check (only the send resolves it); the send refuses what it resolves to."""
    name = socket.gethostname()
    try:
        resolved = socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)[0][4][0]
    except OSError:
        pytest.skip(f"this machine's name {name!r} does not resolve")
    from agent.net.guard import address_problem

    if address_problem(ipaddress.ip_address(resolved)) is None:
        pytest.skip(f"{name} resolves to a public address here")
    listener = socket.socket(socket.AF_INET6 if ":" in resolved else socket.AF_INET)
    listener.bind((resolved, 0))
    listener.listen(4)
    try:
        _alerts(tmp_path / "config", ("lan", f"json://{name}:{listener.getsockname()[1]}/x", None), local=False)
        [destination] = load_destinations(tmp_path / "config")
        [row] = send_now(Settings.from_env(), Alert("test", "t", "the run's text"), [destination])
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing connected
    finally:
        listener.close()
    assert row["status"] == "failed" and f"{name} resolves to {resolved}" in row["error"]


def test_a_redirect_from_a_local_destination_to_another_address_is_not_followed(
    state_dir: Path, tmp_path: Path, hook: Receiver
) -> None:
    jump = Redirector(f"http://127.0.0.1:{hook.port}/stolen")  # the same host, another port: not local
    try:
        _alerts(tmp_path / "config", ("jump", f"json://127.0.0.1:{jump.port}/a", None))
        [destination] = load_destinations(tmp_path / "config")
        [row] = send_now(Settings.from_env(), Alert("test", "t", "the run's text"), [destination])
    finally:
        jump.close()
    assert jump.hits >= 1 and hook.got == []
    assert row["status"] == "failed" and "127.0.0.1 is a loopback address" in row["error"]
    assert rows(state_dir, "select status from alerts") == [{"status": "failed"}]
