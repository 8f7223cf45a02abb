"""The command center's walls, each alone: Host, Origin, CSRF, tokens and roles, cookies, CSP, binding."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from fastapi import Request
from fastapi.routing import APIRoute

from hearth.errors import ConfigError
from hearth.settings import Settings
from hearth.web.config import check_bind, load_tokens, own_names
from hearth.web.security import CSP, Sessions, Throttle, WebError, check_csrf
from tests.conftest import run_cli
from tests.queue_support import wait_for
from tests.web_support import Center, wait_for_answer

OPERATOR = "operator-token-0123456789abcdef"
VIEWER = "viewer-token-0123456789abcdef"
TEMPLATES = Path(__file__).resolve().parents[3] / "hearth" / "web" / "templates"


@pytest.fixture
def guarded(state_dir: Path) -> Iterator[Center]:
    with Center(Settings.from_env(), tokens={"operator": OPERATOR, "viewer": VIEWER}) as served:
        yield served


def test_a_host_header_the_server_is_not_for_is_refused_so_dns_rebinding_cannot_drive_it(center: Center) -> None:
    answer = center.client().get("/api/state", headers={"Host": f"evil.example:{center.port}"})
    assert answer.status_code == 400 and "is not one this server answers to" in answer.json()["error"]
    assert center.client().get("/api/state", headers={"Host": f"localhost:{center.port}"}).status_code == 200


def test_bound_to_the_wildcard_it_answers_loopback_and_its_own_names_but_still_wants_a_token(state_dir: Path) -> None:
    own = own_names()
    address = next(n for n in sorted(own) if "." in n and not n.startswith("127.") and n[0].isdigit())
    tokens = {"operator": OPERATOR}
    with Center(Settings.from_env(), tokens=tokens, bound_as="0.0.0.0", extra_hosts=("hearth.lan",)) as wild:
        client = wild.client()
        for host in ("127.0.0.1", "localhost", address, socket.gethostname().lower(), "hearth.lan"):
            answer = client.get("/api/state", headers={"Host": f"{host}:{wild.port}"})
            assert answer.status_code == 401, (host, answer.text)  # answered: it asks for the token
        refused = client.get("/api/state", headers={"Host": f"evil.example:{wild.port}"})
        assert refused.status_code == 400 and "is not one this server answers to" in refused.json()["error"]
        signed = client.get(
            "/api/state", headers={"Host": f"{address}:{wild.port}", "Authorization": f"Bearer {OPERATOR}"}
        )
        assert signed.status_code == 200


def test_a_post_from_another_origin_is_refused_even_with_the_csrf_token(center: Center, state_dir: Path) -> None:
    client = center.client()
    client.session()
    answer = client.post_json("/api/enqueue", {"goal": "x"}, Origin="http://evil.example")
    assert answer.status_code == 403 and "must come from" in answer.json()["error"]
    no_origin = center.client()
    no_origin.headers.pop("Origin")
    assert no_origin.post_json("/api/enqueue", {"goal": "x"}).status_code == 403
    assert not (state_dir / "queue").exists() or not list((state_dir / "queue").glob("*.json"))


def test_a_post_without_the_csrf_token_or_with_a_wrong_one_is_refused(center: Center) -> None:
    client = center.client()
    client.session()
    assert client.post("/api/enqueue", json={"goal": "x"}).status_code == 403
    wrong = client.post("/api/enqueue", json={"goal": "x"}, headers={"X-CSRF-Token": "guess"})
    assert wrong.status_code == 403 and "CSRF token is missing or wrong" in wrong.json()["error"]
    form = client.post("/launch", data={"goal": "x"})
    assert form.status_code == 403


def test_every_post_route_checks_the_csrf_token_but_the_signed_alert_link() -> None:
    from hearth.web.routes import ROUTERS
    from hearth.web.security import ACT_PREFIX

    routes = [route for router in ROUTERS for route in router.routes]
    posts = [r for r in routes if isinstance(r, APIRoute) and "POST" in r.methods]
    assert all(isinstance(r, APIRoute) for r in routes)
    assert len(posts) >= 12
    # the one door without: its token is its authority (see the walls in hearth/web/security.py)
    assert [r.path for r in posts if r.path.startswith(ACT_PREFIX)] == [ACT_PREFIX + "{token}"]
    for route in [r for r in posts if not r.path.startswith(ACT_PREFIX)]:
        assert any(d.call is check_csrf for d in route.dependant.dependencies), route.path


def test_with_tokens_nothing_is_readable_before_sign_in_and_a_wrong_token_is_refused(guarded: Center) -> None:
    client = guarded.client()
    assert client.get("/api/runs").status_code == 401
    page = client.get("/runs")
    assert page.status_code == 303 and page.headers["location"] == "/signin?next=/runs"
    wrong = client.get("/api/runs", headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 401 and wrong.json() == {"error": "wrong token"}
    client.session()
    signin = client.post_form("/signin", {"name": "ana", "token": "not-the-token", "next": "/"})
    assert signin.status_code == 401 and "wrong token" in signin.text


def test_sign_in_gives_an_httponly_samesite_strict_cookie_and_a_new_session(guarded: Center) -> None:
    client = guarded.client()
    before = client.session()
    assert before["role"] is None
    signin = client.post_form("/signin", {"name": "ana", "token": OPERATOR, "next": "//evil.example/"})
    assert signin.status_code == 303 and signin.headers["location"] == "/"
    cookie = signin.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Secure" not in cookie
    after = client.session()
    assert after["user"] == "ana" and after["role"] == "operator" and after["csrf_token"] != before["csrf_token"]
    assert client.post_json("/api/enqueue", {"goal": "from ana"}).status_code == 201


def test_a_viewer_reads_but_cannot_launch_decide_or_stop(guarded: Center) -> None:
    client = guarded.client(Authorization=f"Bearer {VIEWER}")
    assert client.get("/api/runs").status_code == 200 and client.get("/metrics").status_code == 200
    for path, body in (
        ("/api/enqueue", {"goal": "x"}),
        ("/api/stop-all", {}),
        ("/api/approvals/x", {"decision": "deny"}),
    ):
        answer = client.post(path, json=body)
        assert answer.status_code == 403 and "operator role" in answer.json()["error"], path


def test_a_script_with_the_operator_token_needs_no_csrf_token_but_a_foreign_origin_is_still_refused(
    guarded: Center,
) -> None:
    client = guarded.client(Authorization=f"Bearer {OPERATOR}")
    client.headers.pop("Origin")
    assert client.post("/api/enqueue", json={"goal": "scripted"}).status_code == 201
    assert client.post("/api/enqueue", json={"goal": "x"}, headers={"Origin": "http://evil.example"}).status_code == 403


def test_repeated_bad_tokens_from_one_address_wait_longer_each_time() -> None:
    throttle = Throttle(base_s=0.25)
    delays = [throttle.fail("10.0.0.9") for _ in range(7)]
    assert delays == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 10.0]
    assert throttle.fail("10.0.0.8") == 0.25
    throttle.ok("10.0.0.9")
    assert throttle.fail("10.0.0.9") == 0.25


def test_every_answer_has_a_csp_without_inline_script_and_the_templates_have_none(center: Center) -> None:
    for path in ("/", "/runs", "/api/state", "/static/hearth.css", "/nope"):
        headers = center.client().get(path).headers
        assert headers["content-security-policy"] == CSP and headers["x-frame-options"] == "DENY", path
    assert "'unsafe-inline'" not in CSP and "script-src 'self'" in CSP
    for template in TEMPLATES.glob("*.html"):
        text = template.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), template.name
        assert not re.search(r"\son[a-z]+\s*=", text) and " style=" not in text, template.name
        assert "|safe" not in text, template.name


def test_untrusted_text_is_escaped_in_every_page_that_shows_it(center: Center, state_dir: Path) -> None:
    from tests.web_support import seed_runs

    payload = '<script>alert(1)</script><img src=x onerror=alert(2)><a href="javascript:alert(3)">x</a>'
    [run_id] = seed_runs(state_dir, 1, goal=payload, steps=0)
    for path in ("/", "/runs", f"/runs/{run_id}", "/runs?q=script"):
        html = center.client().get(path).text
        assert "<script>alert" not in html and "<img src=x" not in html and 'href="javascript:' not in html, path
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, path


def test_binding_beyond_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="refusing to listen on 0.0.0.0 without a token"):
        check_bind("0.0.0.0", {})
    check_bind("::1", {})
    token = tmp_path / "operator"
    token.write_text("short\n")
    with pytest.raises(ConfigError, match="at least 16 characters"):
        load_tokens(token, None, None)
    (tmp_path / "creds").mkdir()
    (tmp_path / "creds" / "viewer-token").write_text(VIEWER)
    assert load_tokens(None, None, tmp_path / "creds") == {"viewer": VIEWER}


def test_hearth_serve_refuses_a_public_address_without_a_token(state_dir: Path) -> None:
    done = run_cli("hearth", "serve", "--host", "0.0.0.0", "--port", "0")
    assert done.returncode == 2 and "refusing to listen on 0.0.0.0 without a token" in done.stderr


def test_a_second_hearth_serve_on_a_busy_port_says_so_at_once_and_announces_nothing(
    state_dir: Path, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    done = run_cli("hearth", "serve", "--port", str(port))
    assert done.returncode == 3, done.stderr
    assert done.stderr == (
        f"hearth serve: cannot listen on 127.0.0.1:{port}: Address already in use; "
        "another hearth serve may have it: give --port N\n"
    )
    assert "3 the address cannot be listened on" in " ".join(run_cli("hearth", "serve", "--help").stdout.split())


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_over_tls_the_session_cookie_is_secure(state_dir: Path, tmp_path: Path) -> None:
    from tests.netfixtures import certificate

    with Center(Settings.from_env(), tls=certificate(tmp_path, "localhost")) as served, served.client() as client:
        answer = client.get("/api/session")
    cookie = answer.headers["set-cookie"]
    assert answer.status_code == 200 and "Secure" in cookie and "HttpOnly" in cookie


def test_hearth_serve_starts_answers_a_token_holder_and_stops_on_sigterm_with_a_stream_open(
    state_dir: Path, tmp_path: Path
) -> None:
    import os
    import signal
    import subprocess
    import sys

    from tests.conftest import ROOT
    from tests.web_support import free_port

    token, port = tmp_path / "operator-token", free_port()
    token.write_text(OPERATOR + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [
        sys.executable,
        "-m",
        "hearth.cli.main",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--token-file",
        str(token),
    ]
    serve = subprocess.Popen(argv, env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        assert serve.stderr is not None and "hearth serve: http://127.0.0.1:" in serve.stderr.readline()
        url, auth = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {OPERATOR}"}
        answer = wait_for_answer(url + "/api/state", auth)
        assert answer.status_code == 200 and httpx.get(url + "/api/state").status_code == 401
        with httpx.stream("GET", url + "/api/events", headers=auth, timeout=10) as stream:
            next(stream.iter_lines())
            serve.send_signal(signal.SIGTERM)
            assert serve.wait(15) == 0
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()


def test_anonymous_requests_keep_no_state_and_cannot_sign_an_operator_out(state_dir: Path) -> None:
    tokens = {"operator": OPERATOR, "viewer": VIEWER}
    with Center(Settings.from_env(), tokens=tokens, sessions_per_role=8) as served, served.client() as ana:
        ana.session()
        assert ana.post_form("/signin", {"name": "ana", "token": OPERATOR, "next": "/"}).status_code == 303
        for _ in range(40):  # five times the bound, each a fresh client without a cookie
            with served.client() as stranger:
                assert stranger.get("/static/hearth.css").status_code == 200
                assert stranger.get("/api/session").json()["role"] is None
        assert len(served.app.state.web.sessions) == 1
        assert ana.session()["user"] == "ana"
        assert ana.post_json("/api/enqueue", {"goal": "still signed in"}).status_code == 201


def test_a_roles_sign_ins_evict_only_that_roles_oldest_session() -> None:
    sessions = Sessions(per_role=2)
    operator = sessions.new("ana", "operator")
    viewers = [sessions.new(f"v{i}", "viewer") for i in range(5)]
    assert sessions.get(operator.id) is operator
    assert [sessions.get(v.id) is not None for v in viewers] == [False, False, False, True, True]
    sessions.new("bo", "operator")
    sessions.new("cy", "operator")
    assert sessions.get(operator.id) is None and len(sessions) == 4


def _raw_post(center: Center, path: str, headers: dict[str, str], body: Iterable[bytes] = ()) -> tuple[int, str]:
    """A POST written by hand on a socket (a declared length it never sends, or chunks): status, body."""
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{center.port}\r\nConnection: close\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    answer = b""
    with socket.create_connection(("127.0.0.1", center.port), timeout=20) as sock:
        sock.sendall(head.encode())
        try:
            for part in body:
                sock.sendall(part)
            while data := sock.recv(65536):
                answer += data
        except (BrokenPipeError, ConnectionResetError):
            answer += b"" if answer else sock.recv(65536)
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2].decode()


def _chunked(size: int, piece: int = 64 * 1024) -> Iterator[bytes]:
    data = b'{"goal": "' + b"a" * size + b'"}'
    for start in range(0, len(data), piece):
        chunk = data[start : start + piece]
        yield f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    yield b"0\r\n\r\n"


@pytest.fixture
def probed(guarded: Center) -> list[bytes]:
    """A POST route on the served app that records every body its handler was given."""
    ran: list[bytes] = []

    async def probe(request: Request) -> dict[str, int]:
        ran.append(await request.body())
        return {"read": len(ran[-1])}

    guarded.app.add_api_route("/api/probe", probe, methods=["POST"])
    return ran


def test_an_oversized_content_length_is_refused_413_before_auth_and_before_any_byte_is_read(
    guarded: Center, probed: list[bytes]
) -> None:
    form = {"Content-Type": "multipart/form-data; boundary=x", "Content-Length": str(48 << 20)}
    status, body = _raw_post(guarded, "/signin", {**form, "Origin": guarded.url})
    assert status == 413 and "/signin takes at most 16384 bytes" in json.loads(body)["error"]
    wrong = {"Authorization": "Bearer not-the-token", "Content-Length": str(2 << 20)}
    status, body = _raw_post(guarded, "/api/probe", wrong)
    assert status == 413 and "request body too large" in body and probed == []
    assert guarded.client().get("/api/state", headers={"Authorization": f"Bearer {OPERATOR}"}).status_code == 200


def test_an_oversized_chunked_body_is_refused_413_and_never_reaches_the_handler(
    guarded: Center, probed: list[bytes], state_dir: Path
) -> None:
    chunked = {
        "Transfer-Encoding": "chunked",
        "Authorization": f"Bearer {OPERATOR}",
        "Content-Type": "application/json",
    }
    status, body = _raw_post(guarded, "/api/probe", chunked, _chunked(1 << 20))
    assert status == 413 and "a chunked body past it" in body and probed == []
    status, body = _raw_post(guarded, "/api/enqueue", chunked, _chunked(1 << 20))
    assert status == 413 and "/api/enqueue takes at most 1048576 bytes" in body
    assert not list(state_dir.glob("queue/*.json"))
    status, body = _raw_post(guarded, "/api/probe", chunked, _chunked(1000))
    assert status == 200 and json.loads(body) == {"read": 1012} and len(probed) == 1


class HeldSleep:
    """The throttle's sleep, held until the test opens it; records every wait it was asked for."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        await asyncio.to_thread(self.opened.wait, 30)


def test_parallel_wrong_tokens_are_checked_one_at_a_time_after_their_delay_and_the_excess_refused(
    state_dir: Path,
) -> None:
    held = HeldSleep()
    tokens = {"operator": OPERATOR, "viewer": VIEWER}
    with Center(Settings.from_env(), tokens=tokens, throttle=Throttle(0.01, sleep=held)) as served:
        wrong = {"Authorization": "Bearer not-the-token"}

        def guess() -> int:
            with served.client(**wrong) as client:
                return client.get("/api/state").status_code

        assert guess() == 401 and held.asked == []  # a first failure from an address waits for nothing
        with ThreadPoolExecutor(10) as pool:
            guesses = [pool.submit(guess) for _ in range(10)]
            wait_for(lambda: sum(g.done() for g in guesses) == 5, what="the guesses past the queue to be refused")
            assert held.asked == [0.01]  # one guess is waiting out its delay; four queue behind it, unchecked
            held.opened.set()
            statuses = sorted(g.result() for g in guesses)
    assert statuses == [401] * 5 + [429] * 5
    assert held.asked == [0.01, 0.02, 0.04, 0.08, 0.16]  # each check waited for the one before it


def test_token_checks_from_many_addresses_are_bounded_in_flight_in_all() -> None:
    async def scenario() -> tuple[int, int]:
        throttle = Throttle(0.01, in_flight=2, waiting_total=6, sleep=lambda s: asyncio.sleep(0))
        now = peak = refused = 0

        async def check(client: str) -> None:
            nonlocal now, peak, refused
            try:
                async with throttle.turn(client):
                    now += 1
                    peak = max(peak, now)
                    await asyncio.sleep(0)
                    now -= 1
            except WebError as exc:
                refused += exc.status == 429

        await asyncio.gather(*(check(f"10.0.0.{i}") for i in range(10)))
        return peak, refused

    assert asyncio.run(scenario()) == (2, 4)


def test_with_tokens_the_openapi_description_needs_a_viewer_and_there_are_no_docs_pages(guarded: Center) -> None:
    assert guarded.client().get("/api/openapi.json").status_code == 401
    viewer = guarded.client(Authorization=f"Bearer {VIEWER}")
    described = viewer.get("/api/openapi.json")
    assert described.status_code == 200 and "/api/enqueue" in described.json()["paths"]
    assert [viewer.get(path).status_code for path in ("/docs", "/redoc", "/openapi.json")] == [404, 404, 404]
