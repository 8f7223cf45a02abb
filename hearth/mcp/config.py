"""An MCP server as the operator declares it: `$HEARTH_CONFIG_DIR/mcp/<server>.toml`.

    transport = "stdio"                  stdio (the default) or http
    command = "/usr/bin/mcp-files"       stdio: the program, and its arguments
    args = ["--root", "."]
    url = "http://127.0.0.1:8931/mcp"    http: the streamable-HTTP endpoint
    env = { GITHUB_TOKEN = "github" }    stdio: variable -> a credential NAME in hearth's store (never a value)
    headers = { Authorization = "Bearer cred:github" }
                                         http: headers sent with every request; cred:NAME is the
                                         credential's value, only if it is bound to the url's host
    egress = []                          the hosts it may reach (absent or empty: no network)
    read = ["/opt/mcp-files"]            more read-only paths a stdio server needs in the sandbox
    timeout = 30                         seconds one call may take (1 to 600), cut to the run's limit
    [tools.read_note]                    per tool, every key optional:
    risk = "safe"                        safe | edit | dangerous (the default: dangerous)
    offered = true                       false: never offered, approved or not

A file that is not valid is refused naming the file and the key (hearth/tomlcheck.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.tools.registry import RISKS
from hearth.errors import ConfigError
from hearth.tomlcheck import known_table, read_toml

KEYS = ("transport", "command", "args", "url", "env", "headers", "egress", "read", "timeout", "tools")
TOOL_KEYS = ("risk", "offered")
TRANSPORTS = ("stdio", "http")
SERVER_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]|_(?!_)){0,30}")  # no "__": it joins server and tool
_CREDENTIAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ToolRule:
    risk: str = "dangerous"
    offered: bool = True


@dataclass(frozen=True)
class ServerConfig:
    name: str
    path: Path
    transport: str = "stdio"
    command: str = ""
    args: tuple[str, ...] = ()
    url: str = ""
    env: tuple[tuple[str, str], ...] = ()  # (variable, credential name)
    headers: tuple[tuple[str, str], ...] = ()  # (header, value with cred:NAME in it)
    egress: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    timeout_s: float = 30.0
    tools: dict[str, ToolRule] = field(default_factory=dict)

    def rule(self, tool: str) -> ToolRule:
        """What the operator said of `tool`; one never named is dangerous and offered once approved."""
        return self.tools.get(tool, ToolRule())


def mcp_dir(config_dir: Path) -> Path:
    return config_dir / "mcp"


def load_servers(config_dir: Path) -> list[ServerConfig]:
    """Every declared server, by name; ConfigError for the first bad file."""
    directory = mcp_dir(config_dir)
    try:
        paths = sorted(p for p in directory.iterdir() if p.suffix == ".toml")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ConfigError(f"cannot read {directory}: {exc.strerror or exc}") from None
    return [load_server(path) for path in paths]


def load_server(path: Path) -> ServerConfig:
    """One server's file, checked key by key."""
    name = path.stem
    if not SERVER_NAME.fullmatch(name):
        raise ConfigError(
            f"{path}: the server name {name!r} must be lowercase letters, digits, '-' and single '_' (at most 31)"
        )
    if not path.exists():
        raise ConfigError(f"{path}: no such file")
    raw = known_table(path, "the file", read_toml(path), KEYS)
    transport, command, url = _transport(path, raw)
    timeout = _timeout(path, raw)
    return ServerConfig(
        name=name,
        path=path,
        transport=transport,
        command=command,
        args=_strings(path, raw, "args"),
        url=url,
        env=_env(path, raw.get("env", {})),
        headers=_headers(path, raw.get("headers", {})),
        egress=_strings(path, raw, "egress"),
        read=_paths(path, _strings(path, raw, "read")),
        timeout_s=timeout,
        tools=_tools(path, raw.get("tools", {})),
    )


def _transport(path: Path, raw: dict[str, Any]) -> tuple[str, str, str]:
    """The transport, the command and the url, each only where its transport takes it."""
    transport = _text(path, raw, "transport", "stdio")
    if transport not in TRANSPORTS:
        raise ConfigError(f"{path}: transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")
    command, url = _text(path, raw, "command", ""), _text(path, raw, "url", "")
    if transport == "stdio" and not command:
        raise ConfigError(f"{path}: command is required for transport stdio")
    if transport == "http" and not re.fullmatch(r"https?://[^\s]+", url):
        raise ConfigError(f"{path}: url must be an http:// or https:// address for transport http, got {url!r}")
    if transport == "http" and command:
        raise ConfigError(f"{path}: command is for transport stdio; an http server has only a url")
    if transport == "http" and raw.get("env"):
        raise ConfigError(f"{path}: env is for transport stdio; an http server's credentials go in headers (cred:NAME)")
    if transport == "stdio" and raw.get("headers"):
        raise ConfigError(f"{path}: headers are for transport http; a stdio server's credentials go in env")
    return transport, command, url


def _timeout(path: Path, raw: dict[str, Any]) -> float:
    timeout = raw.get("timeout", 30)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 1 <= timeout <= 600:
        raise ConfigError(f"{path}: timeout must be a number of seconds from 1 to 600, got {timeout!r}")
    return float(timeout)


def _text(path: Path, raw: dict[str, Any], key: str, default: str) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str):
        raise ConfigError(f"{path}: {key} must be a string, got {value!r}")
    return value


def _strings(path: Path, raw: dict[str, Any], key: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: {key} must be a list of strings, got {value!r}")
    return tuple(value)


def _paths(path: Path, values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        if not value.startswith("/"):
            raise ConfigError(f"{path}: read: {value!r} is not an absolute path")
    return values


def _env(path: Path, raw: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        raise ConfigError(f'{path}: env must be a table of VARIABLE = "credential name"')
    pairs = []
    for variable, credential in raw.items():
        if not _VARIABLE.fullmatch(variable):
            raise ConfigError(f"{path}: env: {variable!r} is not an environment variable name")
        if not isinstance(credential, str) or not _CREDENTIAL.fullmatch(credential):
            raise ConfigError(
                f"{path}: env.{variable} must name a credential in hearth's store (hearth creds), got {credential!r}"
            )
        pairs.append((variable, credential))
    return tuple(pairs)


def _headers(path: Path, raw: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        raise ConfigError(f'{path}: headers must be a table of Header-Name = "value" (cred:NAME for a credential)')
    for header, value in raw.items():
        if not re.fullmatch(r"[A-Za-z0-9-]{1,64}", header) or not isinstance(value, str) or "\n" in value:
            raise ConfigError(f"{path}: headers.{header} must be a header name with a one-line string value")
    return tuple(raw.items())


def _tools(path: Path, raw: Any) -> dict[str, ToolRule]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: tools must be a table of [tools.NAME] tables")
    rules = {}
    for tool, table in raw.items():
        entry = known_table(path, f"tools.{tool}", table, TOOL_KEYS)
        risk, offered = entry.get("risk", "dangerous"), entry.get("offered", True)
        if risk not in RISKS:
            raise ConfigError(f"{path}: tools.{tool}.risk must be one of {', '.join(RISKS)}, got {risk!r}")
        if not isinstance(offered, bool):
            raise ConfigError(f"{path}: tools.{tool}.offered must be true or false, got {offered!r}")
        rules[tool] = ToolRule(risk, offered)
    return rules
