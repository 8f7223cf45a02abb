"""How hearth starts a declared server: its credentials as environment values (named in the file,
read from hearth's store), and a stdio server inside the command sandbox.

Under bubblewrap the server gets the commands' walls (agent/safety/bwrap.py): the allow-list
filesystem with the workspace as its only writable path (plus the file's `read` paths, read-only),
new user, PID, IPC, UTS and network namespaces as nobody with no capabilities, hearth's state and
credentials hidden, `--die-with-parent`, the commands' seccomp filter (AF_UNIX allowed) and the
memory, file-size, core and process rlimits. No network, unless the file's `egress` names hosts
and the run has a guard: then hearth/mcp/netwrap.py gives the server a private network namespace
whose only listener is a guard proxy of the run's, checking each connection against that list
(public addresses after DNS, a LAN host only if the operator named it, loopback never), each one
an `mcp` step, as commands get network. It starts in the run's walls as they are when it starts
(the policy is asked then): the run's cgroup, joined by the shell before bubblewrap, and the
run's decoy home at /home/nobody. Where bubblewrap does not work (inside hearth's
systemd units), the server walls itself in with Landlock before it execs (hearth/mcp/walled.py):
reads of the allow list and `read`, writes of the workspace only, no TCP, seccomp, the same
rlimits, as hearth's own user; the unit's cgroup ends it with the run. `HEARTH_SANDBOX=none`
starts it bare. Both helpers run with `python -P`: the workspace they start in is never on their
import path (a `hearth/` planted there is not imported outside the walls)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import shlex
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from agent.net.cmdproxy import CommandProxy
from agent.net.guard import NetGuard, Record
from agent.safety import allowlist, bwrap, netns, seccomp
from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, detect
from agent.tools.mcp.client import Connection, Launch, McpFailed
from hearth.credentials import CredentialStore
from hearth.mcp.config import ServerConfig
from hearth.settings import Settings

SECCOMP_FD = 3


def connection(
    config: ServerConfig,
    settings: Settings,
    workspace: Path,
    policy: SandboxPolicy | Callable[[], SandboxPolicy],
    guard: NetGuard | None = None,
    record: Record | None = None,
) -> Connection:
    """The server's connection (not started: the first request starts it); McpFailed when it may
    not start. An http server goes through `guard` (hearth/mcp/remote.py). A callable `policy` is
    asked each time the server starts: the run's cgroup and decoy home are made when its first
    tool is called, after the connection was."""
    if config.transport == "http":
        from hearth.mcp.remote import remote

        return remote(config, settings, guard, record)
    env = _environment(config, settings)
    current: Callable[[], SandboxPolicy] = policy if callable(policy) else (lambda: policy)
    try:
        kind = detect(current().kind)
    except SandboxUnavailable as exc:
        raise McpFailed(f"MCP server {config.name} was not started: no sandbox ({exc})") from None
    if kind == "none":
        bare = Launch(argv=(config.command, *config.args), env=env, cwd=str(workspace))
        return Connection(config.name, bare)
    if kind == "landlock":
        return Connection(config.name, lambda: _landlocked(config, workspace, current(), env))
    if kind != "bwrap":
        raise McpFailed(f"MCP server {config.name} was not started: no sandbox here can hold it ({kind})")
    network = bool(config.egress) and guard is not None
    make = lambda: _walled(config, workspace, current(), env, network)  # noqa: E731
    if guard is None or not network:  # still a network namespace of its own, empty (netwrap's `-`)
        return Connection(
            config.name, lambda: Launch(argv=(*_NETWRAP, "-", "--", *make()), env=_path(), cwd=str(workspace))
        )
    return _networked(config, make, workspace, dataclasses.replace(guard, egress=config.egress), record)


def _walled(
    config: ServerConfig, workspace: Path, policy: SandboxPolicy, env: dict[str, str], network: bool
) -> tuple[str, ...]:
    """The argv of the server under bubblewrap with the policy as it is now."""
    command = shlex.join([config.command, *config.args])
    mounts = bwrap.Mounts(
        str(workspace),
        policy.home,  # the run's decoy home at /home/nobody, once its walls are up; else HOME is the workspace
        (),
        expose=tuple(dict.fromkeys((*config.read, *policy.expose))),
        hide=policy.hide,
        tmp_bytes=policy.file_size_bytes,
    )
    home = allowlist.SANDBOX_HOME if policy.home else str(workspace)
    variables = {"HOME": home, "PATH": "/usr/bin:/bin", **env}
    if network:
        variables.update(dict.fromkeys(PROXY_ENV, netns.PROXY_URL))
    filtered = seccomp.supported()
    walled = bwrap.argv(command, mounts, variables, seccomp_fd=SECCOMP_FD if filtered else None)
    # the SDK starts the process (no preexec hook, no passed fds): a shell sets the rlimits, joins
    # the run's cgroup (writing 0: the writer itself, before bwrap forks anything), opens the
    # seccomp program as bwrap's fd 3, then becomes bwrap (processes: -u in bash, -p in dash)
    procs = policy.max_procs
    steps = [
        f"ulimit -v {policy.memory_bytes // 1024}",
        f"ulimit -f {policy.file_size_bytes // 512}",
        "ulimit -c 0",
        f"{{ ulimit -u {procs} 2>/dev/null || ulimit -p {procs}; }}",
        *(f"echo 0 > {shlex.quote(directory + '/cgroup.procs')}" for directory in policy.cgroup),
    ]
    opened = f' {SECCOMP_FD}<"$0"' if filtered else ""
    script = " && ".join(steps) + f' && exec "$@"{opened}'
    program = str(_seccomp_file(network)) if filtered else "-"
    return ("/bin/sh", "-c", script, program, *walled)


PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
# what makes a server's network namespace before it becomes bubblewrap (hearth/mcp/netwrap.py)
_NETWRAP = (sys.executable, "-P", "-m", "hearth.mcp.netwrap")


def _path() -> dict[str, str]:
    """The helper imports hearth as this process does (bubblewrap clears the server's environment)."""
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


def _networked(
    config: ServerConfig, make: Callable[[], tuple[str, ...]], workspace: Path, guard: NetGuard, record: Record | None
) -> Connection:
    """The server started through hearth/mcp/netwrap.py: each time it starts (a crashed one is
    started again) its namespace's listener comes back over a Unix socket in a directory of
    hearth's own and is served by a guard proxy held to the server's egress list."""
    from hearth.mcp.remote import record_connections

    proxy = CommandProxy(guard)
    where = Path(tempfile.mkdtemp(prefix=f"hearth-mcp-{config.name}-"))  # 0700: hearth's user only
    back = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    back.bind(str(where / "net"))
    back.listen(4)
    attached: list[socket.socket] = []
    serve = functools.partial(_serve_listeners, back, proxy, attached)
    threading.Thread(target=serve, name=f"mcp-{config.name}-net", daemon=True).start()
    helper = (*_NETWRAP, str(where / "net"), "--")
    server = Connection(config.name, lambda: Launch(argv=(*helper, *make()), env=_path(), cwd=str(workspace)))
    note = record or (lambda kind, detail: None)
    server.after_call = lambda: record_connections(proxy, config.name, note)
    server.after_close.append(functools.partial(_close_back, back, proxy, attached, where))
    return server


def _serve_listeners(back: socket.socket, proxy: CommandProxy, attached: list[socket.socket]) -> None:
    """Each start's namespace listener, as it comes back over `back`, served by the proxy."""
    while True:
        try:
            conn, _ = back.accept()
        except OSError:
            return  # closed with the connection
        with conn:
            conn.settimeout(30)
            try:
                _, fds, _, _ = socket.recv_fds(conn, 1, 1)
            except OSError:
                continue  # that start failed before its namespace was made: its own error says why
        for fd in fds:
            listener = socket.socket(fileno=fd)
            proxy.attach(listener)
            attached.append(listener)


def _close_back(back: socket.socket, proxy: CommandProxy, attached: list[socket.socket], where: Path) -> None:
    """The server closed: no more listeners come back, the proxy lets go of them, the directory goes."""
    try:
        back.shutdown(socket.SHUT_RDWR)  # wakes _serve_listeners's accept (a close alone does not)
    except OSError:
        pass
    back.close()
    for listener in attached:
        proxy.detach(listener)
    shutil.rmtree(where, ignore_errors=True)


def _landlocked(config: ServerConfig, workspace: Path, policy: SandboxPolicy, env: dict[str, str]) -> Launch:
    """hearth/mcp/walled.py walls itself in, then becomes the server (no bubblewrap here)."""
    tmp = workspace / ".tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    spec = {
        "read": list(dict.fromkeys((*config.read, *policy.expose))),
        "write": [str(workspace)],
        "memory": policy.memory_bytes,
        "file_size": policy.file_size_bytes,
        "processes": policy.max_procs,
        "cgroup": list(policy.cgroup),
    }
    argv = (sys.executable, "-P", "-m", "hearth.mcp.walled", json.dumps(spec), "--", config.command, *config.args)
    variables = {"HOME": str(workspace), "TMPDIR": str(tmp), **env}
    return Launch(argv=argv, env=variables, cwd=str(workspace))


def _seccomp_file(network: bool) -> Path:
    """The commands' seccomp filter (AF_UNIX allowed: an event loop's self-pipe is a socketpair; IP
    sockets only with network) in a file named after its bytes, this user's own, in the temp
    directory; written once per content."""
    code = seccomp.program(network=network, unix=True)
    path = Path(tempfile.gettempdir()) / f"hearth-mcp-seccomp-{os.getuid()}-{hashlib.sha256(code).hexdigest()[:16]}"
    try:
        if path.stat().st_uid == os.getuid() and path.read_bytes() == code:
            return path
    except OSError:
        pass
    scratch = path.with_name(f"{path.name}.{os.getpid()}")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(code)
    os.replace(scratch, path)
    return path


def _environment(config: ServerConfig, settings: Settings) -> dict[str, str]:
    """Each `env` variable's value from hearth's store; McpFailed naming a credential that is not there."""
    if not config.env:
        return {}
    store = CredentialStore(settings.credentials_path, settings.credentials_dir)
    env = {}
    for variable, name in config.env:
        value = store.value(name)
        if value is None:
            raise McpFailed(
                f"MCP server {config.name} was not started: credential {name!r} ({variable}) is not in hearth's store; hearth creds set {name}"
            )
        env[variable] = value
    return env
