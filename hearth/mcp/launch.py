"""How hearth starts a declared server: its credentials as environment values (named in the file,
read from hearth's store), and a stdio server inside the command sandbox.

Under bubblewrap the server gets the commands' walls (agent/safety/bwrap.py): the allow-list
filesystem with the workspace as its only writable path (plus the file's `read` paths, read-only),
new user, PID, IPC, UTS and network namespaces as nobody with no capabilities, hearth's state and
credentials hidden, `--die-with-parent`. Not yet: the seccomp filter, the rlimits and the run's
cgroup (they are applied in a preexec hook the SDK's process start does not take), and network
(an `egress` list is not granted: the server gets none). Where bubblewrap does not work, a
server is started only when the operator chose `HEARTH_SANDBOX=none`."""

from __future__ import annotations

import shlex
from pathlib import Path

from agent.safety import bwrap
from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, detect
from agent.tools.mcp.client import Connection, Launch, McpFailed
from hearth.credentials import CredentialStore
from hearth.mcp.config import ServerConfig
from hearth.settings import Settings


def connection(config: ServerConfig, settings: Settings, workspace: Path, policy: SandboxPolicy) -> Connection:
    """The server's connection (not started: the first request starts it); McpFailed when it may not start."""
    if config.transport == "http":
        return Connection(config.name, Launch(url=config.url))
    env = _environment(config, settings)
    try:
        kind = detect(policy.kind)
    except SandboxUnavailable as exc:
        raise McpFailed(f"MCP server {config.name} was not started: no sandbox ({exc})") from None
    if kind == "none":
        bare = Launch(argv=(config.command, *config.args), env=env, cwd=str(workspace))
        return Connection(config.name, bare)
    if kind != "bwrap":
        raise McpFailed(
            f"MCP server {config.name} was not started: only bubblewrap can hold an MCP server, and the sandbox here is {kind}"
        )
    command = shlex.join([config.command, *config.args])
    mounts = bwrap.Mounts(
        str(workspace),
        None,
        (),
        expose=tuple(dict.fromkeys((*config.read, *policy.expose))),
        hide=policy.hide,
        tmp_bytes=policy.file_size_bytes,
    )
    variables = {"HOME": str(workspace), "PATH": "/usr/bin:/bin", **env}
    walled = bwrap.argv(command, mounts, variables, network=False, seccomp_fd=None)
    return Connection(config.name, Launch(argv=tuple(walled), cwd=str(workspace)))


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
