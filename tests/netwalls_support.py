"""Network for commands, for real: local stand-ins for a package index and a git host, reached by a
sandboxed command only through the run's proxy, with the guard's test resolver and connector.

    python -m tests.netwalls_support SCENARIO

runs one scenario in this process (root, or the ordinary user through setpriv) and prints JSON: the
command's result and the proxy's connection records. Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from agent.net.cmdproxy import CommandProxy
from agent.safety.sandbox import SandboxPolicy
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool
from tests.netfixtures import Answer, TestNet, Web

PACKAGE = "hearthdemo"


def wheel() -> tuple[str, bytes]:
    """The smallest wheel pip accepts: a module, METADATA, WHEEL and RECORD."""
    name = f"{PACKAGE}-1.0-py3-none-any.whl"
    files = {
        f"{PACKAGE}/__init__.py": b"ANSWER = 42\n",
        f"{PACKAGE}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 1.0\n".encode(),
        f"{PACKAGE}-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = (
        "".join(
            f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
            for path, data in files.items()
        )
        + f"{PACKAGE}-1.0.dist-info/RECORD,,\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in {**files, f"{PACKAGE}-1.0.dist-info/RECORD": record.encode()}.items():
            archive.writestr(path, data)
    return name, buffer.getvalue()


def index() -> Web:
    name, data = wheel()
    digest = hashlib.sha256(data).hexdigest()
    page = f'<html><body><a href="/files/{name}#sha256={digest}">{name}</a></body></html>'
    return Web(
        {
            f"/simple/{PACKAGE}/": Answer(200, page, {"content-type": "text/html"}),
            f"/files/{name}": Answer(200, data, {"content-type": "application/octet-stream"}),
        }
    )


def git_host(scratch: Path) -> tuple[Web, str]:
    """A bare repository served over git's dumb HTTP protocol (static files); its main's commit."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    work, bare = scratch / "work", scratch / "repo.git"

    def git(*args: str, cwd: Path = scratch) -> str:
        return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout

    git("init", "-q", "-b", "main", str(work))
    (work / "README").write_text("served\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", "-A", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one", cwd=work)
    git("clone", "-q", "--bare", str(work), str(bare))
    git("update-server-info", cwd=bare)
    head = git("rev-parse", "HEAD", cwd=work).strip()
    refs = (bare / "info" / "refs").read_bytes()
    return Web(
        {"/repo.git/info/refs": Answer(200, refs), "/repo.git/HEAD": Answer(200, b"ref: refs/heads/main\n")}
    ), head


COMMANDS = {
    "pip": (
        "python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check --quiet "
        f"--index-url http://pypi.test/simple/ --trusted-host pypi.test -d dl {PACKAGE} && ls dl"
    ),
    "git": "git ls-remote http://git.test/repo.git",
    "refused": "git ls-remote http://git.test/repo.git",
    "loopback": "python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/simple/').status)\"",
    "bypass": (
        "python3 -c \"import socket\nfor a in [('93.184.216.10', 80), ('127.0.0.1', {port}), ('8.8.8.8', 53)]:\n"
        "  try:\n    socket.create_connection(a, timeout=3); print('REACHED', a)\n"
        '  except OSError as e: print(type(e).__name__)"'
    ),
    "connect": (
        "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', 3128)); "
        "s.sendall(b'CONNECT pypi.test:80 HTTP/1.1\\r\\n\\r\\n'); print(s.recv(100).split(b'\\r\\n')[0].decode()); "
        "s.sendall(b'GET /simple/hearthdemo/ HTTP/1.1\\r\\nHost: pypi.test\\r\\nConnection: close\\r\\n\\r\\n'); "
        "print(s.recv(100).split(b'\\r\\n')[0].decode())\""
    ),
}


def scenario(name: str, workspace: Path) -> dict[str, Any]:
    net = TestNet()
    scratch = Path(tempfile.mkdtemp(prefix="hearth-git-host-"))
    pypi, (repo, head) = index(), git_host(scratch)
    net.host("pypi.test", pypi)
    net.host("git.test", repo)
    egress = ("pypi.test",) if name == "refused" else ()
    proxy = CommandProxy(net.guard(egress=egress))
    services = RunServices(sandbox=SandboxPolicy(kind="bwrap", network=True), command_proxy=proxy)
    command = COMMANDS[name].replace("{port}", str(pypi.port))
    try:
        with Workspace(workspace, services=services) as ws:
            result = call_tool("run_command", {"command": command}, ws, mode="bypass")
    finally:
        pypi.close()
        repo.close()
        shutil.rmtree(scratch)
    return {
        "ok": result.ok,
        "output": result.output,
        "head": head,
        "connections": [asdict(c) for c in proxy.drain()],
        "served": len(pypi.seen) + len(repo.seen),
        "stray": net.stray,
    }


if __name__ == "__main__":
    print(json.dumps(scenario(sys.argv[1], Path(sys.argv[2]))))
