"""The unit files of `hearth install --systemd`, rendered from units.toml as nix/units.nix renders them.

units.toml holds every directive; this module only composes its tables the way the file's header
says (hardening, then the unit's layers, then its own table, then the host's values, then the bwrap
relaxations) and fills in the host's values from an `InstallConfig`. The defaults of InstallConfig
are the NixOS module's, so `hearth install --systemd` with no options writes the units a bare
`services.hearth.enable = true` does (tests/hearth/install/test_units.py compares the two renderings).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).with_name("units.toml")
CONFIG_DIR = "/etc/hearth"
USERS_FILE = f"{CONFIG_DIR}/users.json"  # install.toml's [users], as hearth-users.service applies it

Table = dict[str, Any]


@dataclass(frozen=True)
class InstallConfig:
    """The host's values the units take; each default is services.hearth's (nix/module.nix)."""

    hearth: str = "/usr/local/bin/hearth"
    hearth_loop: str = "/usr/local/bin/hearth-loop"
    state_dir: str = "/var/lib/hearth"
    ollama_url: str = "http://127.0.0.1:11434"
    model: str = "qwen2.5-coder"
    mode: str = "auto"
    max_iterations: int = 12
    sandbox: str = "landlock"
    tripwires: str = "home"
    tripwire_action: str = "stop"
    command_tasks_max: int = 256
    command_memory_mb: int = 1024
    command_cpu_sec: int = 1800
    memory_max: str = "2G"
    tasks_max: int = 512
    runtime_max_sec: int = 3600
    agent_address_allow: tuple[str, ...] = ()
    credentials: dict[str, str] = field(default_factory=dict)  # name -> file, for LoadCredential=
    self_test_calendar: str | None = "daily"
    schedules: dict[str, str] = field(default_factory=dict)  # mission name -> OnCalendar
    web: bool = False
    web_listen: str = "127.0.0.1"
    web_port: int = 8770
    operator_token_file: str | None = None
    viewer_token_file: str | None = None
    script_dir: str = "/usr/local/lib/hearth"  # where each schedule's script is written
    channels: bool = False  # channels.toml configures chat channels: hearth-channels.service
    channel_credentials: dict[str, str] = field(default_factory=dict)  # telegram-token, email-password -> file
    users: dict[str, Any] = field(default_factory=dict)  # install.toml's [users]: hearth-users.service


@dataclass(frozen=True)
class Unit:
    """One unit file: its name (hearth-spawn.path), [Unit] head, body section, [Install] targets."""

    name: str
    head: Table
    body: Table
    wanted_by: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return self.name.rsplit(".", 1)[1]

    def text(self) -> str:
        """The file, keys in sorted order within each section as NixOS writes them."""
        parts = [_section("Unit", self.head), _section(self.kind.capitalize(), self.body)]
        if self.wanted_by:
            parts.append(_section("Install", {"WantedBy": list(self.wanted_by)}))
        return "\n".join(parts)


def load() -> Table:
    return tomllib.loads(SOURCE.read_text())


def _value(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _section(name: str, settings: Table) -> str:
    lines = [f"[{name}]"]
    for key in sorted(settings):
        value = settings[key]
        lines += [f"{key}={_value(item)}" for item in (value if isinstance(value, list) else [value])]
    return "\n".join(lines) + "\n"


def _fill(value: Any, variables: dict[str, str]) -> Any:
    if isinstance(value, str):
        for name, text in variables.items():
            value = value.replace("{" + name + "}", text)
        return value
    if isinstance(value, list):
        return [_fill(item, variables) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, variables) for key, item in value.items()}
    return value


class Renderer:
    """units.toml and one InstallConfig: every unit the install writes, as `Unit` records."""

    def __init__(self, config: InstallConfig, data: Table | None = None) -> None:
        self.config = config
        self.data = data if data is not None else load()
        self.vars = {
            "stateDir": config.state_dir,
            "stateRel": config.state_dir.removeprefix("/var/lib/"),
            "hearth": config.hearth,
            "hearthLoop": config.hearth_loop,
            "landlock": self.data["landlock"],
        }

    def fill(self, value: Any, **extra: str) -> Any:
        return _fill(value, {**self.vars, **extra})

    def service_config(self, name: str, host: Table | None = None, /, **extra: str) -> Table:
        unit = self.data["services"][name]
        merged: Table = dict(self.fill(self.data["hardening"]))
        for layer in unit["layers"]:
            merged |= self.fill(self.data[layer])
        merged |= self.fill(unit["service"], **extra) | (host or {})
        if unit.get("bwrap") and self.config.sandbox == "bwrap":
            bwrap = dict(self.fill(self.data["bwrap"]))
            added = bwrap.pop("add", {})
            merged |= bwrap
            merged |= {key: [*merged.get(key, []), *values] for key, values in added.items()}  # [bwrap.add]
        return merged

    def environment(self) -> dict[str, str]:
        c = self.config
        env = {
            "HEARTH_STATE_DIR": c.state_dir,
            "HEARTH_CONFIG_DIR": CONFIG_DIR,
            "OLLAMA_HOST": c.ollama_url,
            "HEARTH_MODEL": c.model,
            "HEARTH_MODE": c.mode,
            "HEARTH_MAX_ITERATIONS": str(c.max_iterations),
            "HEARTH_SANDBOX": c.sandbox,
            "HEARTH_TRIPWIRES": c.tripwires,
            "HEARTH_TRIPWIRE_ACTION": c.tripwire_action,
            "HEARTH_COMMAND_MAX_PROCS": str(c.command_tasks_max),
            "HEARTH_COMMAND_MEMORY_MB": str(c.command_memory_mb),
            "HEARTH_COMMAND_CPU_S": str(c.command_cpu_sec),
        }
        if c.web:
            env["HEARTH_WEB_URL"] = f"http://{c.web_listen}:{c.web_port}"
        return env

    def service(self, name: str, file: str, body: Table, env: dict[str, str] | None = None, /, **extra: str) -> Unit:
        unit = self.fill(self.data["services"][name], **extra)
        head: Table = {"Description": unit["description"]}
        if unit.get("after"):
            head["After"] = " ".join(unit["after"])
        head.update(unit.get("unit", {}))  # [Unit] directives the table names (a start limit)
        environment = env if env is not None else self.environment()
        body = {"Environment": [f'"{k}={v}"' for k, v in sorted(environment.items())], **body}
        return Unit(file, head, body, tuple(unit.get("wantedBy", ())))

    def agent(self) -> Unit:
        c = self.config
        host = {
            "IPAddressAllow": [*ollama_allow(c.ollama_url), *c.agent_address_allow],
            "LoadCredential": [f"{name}:{path}" for name, path in sorted(c.credentials.items())],
            "MemoryMax": c.memory_max,
            "TasksMax": c.tasks_max,
            "RuntimeMaxSec": c.runtime_max_sec,
        }
        env = self.environment() | {"HEARTH_CGROUP_DELEGATED": "1"}
        return self.service("hearth-agent@", "hearth-agent@.service", self.service_config("hearth-agent@", host), env)

    def web(self) -> Unit:
        c = self.config
        tokens = {"operator-token": c.operator_token_file, "viewer-token": c.viewer_token_file}
        host = {
            "ExecStart": f"{c.hearth} serve --host {c.web_listen} --port {c.web_port}",
            "LoadCredential": [f"{name}:{path}" for name, path in tokens.items() if path],
        }
        return self.service("hearth-web", "hearth-web.service", self.service_config("hearth-web", host))

    def channels(self) -> Unit:
        host = {"LoadCredential": [f"{n}:{p}" for n, p in sorted(self.config.channel_credentials.items())]}
        return self.service("hearth-channels", "hearth-channels.service", self.service_config("hearth-channels", host))

    def users(self) -> Unit:
        _, credentials = declaration(self.config.users)
        host = {"LoadCredential": [f"{n}:{p}" for n, p in sorted(credentials.items())]}
        body = self.service_config("hearth-users", host, declaration=USERS_FILE)
        return self.service("hearth-users", "hearth-users.service", body, None, declaration=USERS_FILE)

    def schedule_script(self, name: str) -> str:
        return str(self.fill(self.data["scripts"]["schedule"], name=name))

    def schedule(self, name: str) -> Unit:
        host = {"ExecStart": f"{self.config.script_dir}/hearth-schedule-{name}"}
        body = self.service_config("hearth-schedule-", host, name=name)
        return self.service("hearth-schedule-", f"hearth-schedule-{name}.service", body, None, name=name)

    def timer(self, name: str, file: str, calendar: str, /, **extra: str) -> Unit:
        unit = self.fill(self.data["timers"][name], **extra)
        body = {**unit["timer"], "OnCalendar": calendar}
        return Unit(file, {"Description": unit["description"]}, body, tuple(unit["wantedBy"]))

    def sweep_timer(self) -> Unit:
        """hearth-spawn.timer: the spawner's sweep at boot and every few minutes (fixed, no calendar)."""
        unit = self.fill(self.data["timers"]["hearth-spawn"])
        return Unit("hearth-spawn.timer", {"Description": unit["description"]}, unit["timer"], tuple(unit["wantedBy"]))

    def units(self) -> list[Unit]:
        c = self.config
        spawn = self.data["paths"]["hearth-spawn"]
        found = [
            self.agent(),
            self.service("hearth-spawn", "hearth-spawn.service", self.service_config("hearth-spawn")),
            Unit(
                "hearth-spawn.path",
                {"Description": spawn["description"]},
                self.fill(spawn["path"]),
                tuple(spawn["wantedBy"]),
            ),
            self.sweep_timer(),
        ]
        if c.self_test_calendar is not None:
            found.append(
                self.service("hearth-self-test", "hearth-self-test.service", self.service_config("hearth-self-test"))
            )
            found.append(self.timer("hearth-self-test", "hearth-self-test.timer", c.self_test_calendar))
        if c.web:
            found.append(self.web())
        if c.channels:
            found.append(self.channels())
        if c.users:
            found.append(self.users())
        for name, calendar in sorted(c.schedules.items()):
            found.append(self.schedule(name))
            found.append(self.timer("hearth-schedule-", f"hearth-schedule-{name}.timer", calendar, name=name))
        return found


def declaration(users: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """install.toml's [users] as hearth-users.service applies it: each secret's path replaced by the
    name of the credential it is passed as (user-NAME-token-N, user-NAME-key-KEY), and those
    credentials (name -> path). nix/units.nix names them the same way."""
    found: dict[str, Any] = {}
    credentials: dict[str, str] = {}
    for name, table in users.items():
        entry = dict(table)
        tokens = {f"user-{name}-token-{i}": path for i, path in enumerate(table.get("token_files", []), 1)}
        keys = {key: f"user-{name}-key-{key}" for key in table.get("keys", {})}
        if tokens:
            entry["token_files"] = list(tokens)
        if keys:
            entry["keys"] = {key: {**spec, "file": keys[key]} for key, spec in table["keys"].items()}
        credentials |= tokens | {keys[key]: spec["file"] for key, spec in table.get("keys", {}).items()}
        found[name] = entry
    return {"users": found}, credentials


def ollama_allow(url: str) -> list[str]:
    """IPAddressAllow= for the model server: its literal address, `localhost`, or nothing for a name."""
    found = re.match(r"[a-z]+://\[([^]]+)]", url) or re.match(r"[a-z]+://([^/:]+)", url)
    host = found.group(1) if found else ""
    if host == "localhost" or re.fullmatch(r"127\.[0-9.]+|::1", host):
        return ["localhost"]
    if re.fullmatch(r"[0-9.]+|[0-9a-fA-F:]+", host):
        return [host]
    return []
