"""Agent profiles: a role prompt and a few settings per agent name, in hearth's config directory.

    $HEARTH_CONFIG_DIR/agents/NAME/AGENTS.md    the role prompt
    $HEARTH_CONFIG_DIR/agents/NAME/agent.toml   settings, every key optional:
        name = "NAME"                           must match the directory (the NixOS module writes it)
        model = "qwen2.5-coder"                 the default model
        mode = "auto"                           plan | auto | bypass
        allowed_tools = ["read_file", "list_files"]   the run's manifest (absent: every tool)
        max_iterations = 12                     1 to 100
        network = false                         commands get network, only through the run's guarded proxy
        egress = ["pypi.org", "*.github.com"]   the hosts network tools and commands may reach (absent: any public)
        max_mode = "plan"                       a ceiling: no request or flag may ask for more
        max_tools = ["read_file", "list_files"] a ceiling: no request or flag may name another tool
        fallbacks = ["llama3.2"]                models to try, in order, when the model is not pulled
        escalate = false                        retry a run ending iteration_limit/stuck/failed on the next one
        max_tokens = 50000                      a run's own token cap (budget_exceeded past it)
        approval_wait = "8h"                    how long an approval waits for a person (a deny after)
        tool_set = "common"                     without allowed_tools: the common chores, or "all"
        think = "low"                           a thinking model's effort: true, false, "low", "medium", "high"
        reply_tokens = 2048                     the most tokens one model reply may have (HEARTH_REPLY_TOKENS)
        web_extract = true                      web_fetch answers through a no-tools extractor (default true)
        [research]                              a request under this profile is a research run
        max_pages = 8                           (docs/research.md): its limits, as a request's `research`
        home = true                             a role: its runs work in its durable home (docs/roles.md)
        heartbeat = "hourly"                    a role wakes on this schedule (a mission's), needs home
        heartbeat_timer = "systemd"             a systemd timer fires the heartbeat (NixOS); hearth watch does not
        strategic_review = "24h"                a heartbeat is a strategic review once this old (default 24h)
        enabled = false                         a role switched off: no heartbeats, its requests refused
    $HEARTH_CONFIG_DIR/SOUL.md                  the voice of every agent (see hearth/run/prompting.py)

Precedence, per setting: a request field or a command-line flag given explicitly, then the
profile, then hearth's default (HEARTH_MODEL, else qwen2.5-coder; HEARTH_MODE, else auto; every
tool; HEARTH_MAX_ITERATIONS, else 12). A request's allowed_tools replaces the profile's list (it
does not narrow it). The ceilings are different: a request or flag asking for a mode above
`max_mode` (plan < auto < bypass), or for a tool outside `max_tools`, is refused naming the
profile's limit; what is not asked for explicitly is capped to them (a default mode above the
ceiling becomes the ceiling; "every tool" becomes `max_tools`).

Built in: `default`, `demo`, `evolve` and `self-test` exist without a directory (no role text, no
settings), so a bare install works and hearth's own runs need no config. A directory of the same
name replaces the built-in one. Any other name without a directory is an error that lists the
profiles there are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.model import DEFAULT_REPLY_TOKENS
from agent.safety.policy import MODES
from agent.tools.registry import TOOL_SETS
from hearth.errors import ConfigError, UsageError
from hearth.leash.schedule import CalendarError, parse_calendar
from hearth.limits import MAX_ITERATIONS, MAX_REPLY_TOKENS, MAX_RUN_TOKENS, MIN_REPLY_TOKENS, parse_duration
from hearth.settings import Settings

if TYPE_CHECKING:  # pydantic is loaded only for a profile with a [research] table: every run reads profiles
    from hearth.queue.longspec import Research

BUILTIN = ("default", "demo", "evolve", "self-test")
SETTINGS_FILE = "agent.toml"
ROLE_FILE = "AGENTS.md"
KEYS = (
    "name",
    "model",
    "mode",
    "allowed_tools",
    "max_iterations",
    "max_mode",
    "max_tools",
    "network",
    "egress",
    "fallbacks",
    "escalate",
    "max_tokens",
    "approval_wait",
    "tool_set",
    "think",
    "web_extract",
    "reply_tokens",
    "research",
    "home",
    "heartbeat",
    "heartbeat_timer",
    "strategic_review",
    "enabled",
)
THINK_LEVELS = ("low", "medium", "high")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class Profile:
    name: str
    directory: Path | None = None  # None: built in
    role: str = ""
    role_path: Path | None = None
    model: str | None = None
    mode: str | None = None
    allowed_tools: tuple[str, ...] | None = None
    max_iterations: int | None = None
    network: bool | None = None
    egress: tuple[str, ...] | None = None
    max_mode: str | None = None  # the most any run of this profile may get
    max_tools: tuple[str, ...] | None = None  # the only tools any run of this profile may get
    fallbacks: tuple[str, ...] = ()
    escalate: bool | None = None
    max_tokens: int | None = None
    approval_wait: str | int | None = None
    tool_set: str | None = None  # None: the host's (HEARTH_TOOL_SET)
    think: bool | str | None = None  # None: not sent (the model's own default)
    web_extract: bool | None = None  # None: on
    reply_tokens: int | None = None  # None: the host's (HEARTH_REPLY_TOKENS)
    research: Research | None = None  # its runs are research runs, with these limits
    home: bool = False  # a role: its runs work in its home (hearth/roles/home.py)
    heartbeat: str = ""  # a role's schedule of upkeep turns (hearth/roles/heartbeat.py); "" none
    heartbeat_timer: str = ""  # "systemd": a timer fires the heartbeat, not hearth watch (a mission's `timer`)
    strategic_review: str | int | None = None  # how old last_strategic_review may get; None: 24h
    enabled: bool = True  # False: its heartbeats skip and its requests are refused

    @property
    def builtin(self) -> bool:
        return self.directory is None


def agents_dir(config_dir: Path) -> Path:
    return config_dir / "agents"


def profile_names(config_dir: Path) -> list[str]:
    """Every profile a run may name: the built-in ones and each valid directory under agents/."""
    found = set(BUILTIN)
    try:
        found |= {d.name for d in agents_dir(config_dir).iterdir() if d.is_dir() and _NAME.fullmatch(d.name)}
    except OSError:
        pass  # no agents directory (or an unreadable one, which doctor reports): built-ins only
    return sorted(found)


def load_profile(config_dir: Path, name: str) -> Profile:
    """The profile called `name`; UsageError for a bad or unknown name, ConfigError for a broken file."""
    if not _NAME.fullmatch(name or ""):
        raise UsageError(f"agent name {name!r} is not valid; use letters, digits, '.', '_' and '-' (at most 64)")
    directory = agents_dir(config_dir) / name
    if not directory.is_dir():
        if name in BUILTIN:
            return Profile(name)
        configured = [n for n in profile_names(config_dir) if (agents_dir(config_dir) / n).is_dir()]
        raise UsageError(
            f"unknown agent profile {name!r}; configured: {', '.join(configured) or 'none'}; "
            f"built in: {', '.join(BUILTIN)} (add {directory}/{ROLE_FILE} to create it)"
        )
    role_path = directory / ROLE_FILE
    role = read_config_text(role_path) if role_path.exists() else ""
    settings = _read_settings(directory / SETTINGS_FILE)
    if settings.pop("name", name) != name:
        raise ConfigError(f"{directory / SETTINGS_FILE}: name must be {name!r}, the directory's name")
    profile = Profile(name, directory, role, role_path if role_path.exists() else None, **settings)
    _check_ceilings(profile, directory / SETTINGS_FILE)
    return profile


def _check_ceilings(profile: Profile, path: Path) -> None:
    """A profile's own defaults stay under its ceilings (and a heartbeat has a home to wake in)."""
    if profile.heartbeat and not profile.home:
        raise ConfigError(f"{path}: heartbeat needs home = true (a role wakes in its home)")
    if profile.mode and profile.max_mode and _rank(profile.mode) > _rank(profile.max_mode):
        raise ConfigError(f"{path}: mode {profile.mode!r} is above max_mode {profile.max_mode!r}")
    outside = sorted(set(profile.allowed_tools or ()) - set(profile.max_tools or profile.allowed_tools or ()))
    if outside:
        raise ConfigError(f"{path}: allowed_tools names {outside[0]!r}, which max_tools does not allow")


def _rank(mode: str) -> int:
    return MODES.index(mode) if mode in MODES else len(MODES)


def read_config_text(path: Path) -> str:
    """An operator's config file as text; a ConfigError naming the file when it cannot be."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def _read_settings(path: Path) -> dict[str, Any]:
    import tomllib  # only when a profile has settings to read

    if not path.exists():
        return {}
    try:
        data = tomllib.loads(read_config_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown setting {unknown[0]!r}; the settings are {', '.join(KEYS)}")
    return {key: _checked(path, key, value) for key, value in data.items()}


def _checked(path: Path, key: str, value: Any) -> Any:
    if key == "research":
        return _research(path, value)
    problem = _problem(key, value)
    if problem:
        raise ConfigError(f"{path}: {key} {problem}, got {value!r}")
    return tuple(value) if key in ("allowed_tools", "max_tools", "egress", "fallbacks") else value


def _research(path: Path, value: Any) -> Research:
    """The [research] table: a request's `research` limits (hearth/queue/longspec.py), checked the same."""
    from pydantic import ValidationError

    from hearth.queue.longspec import Research

    if not isinstance(value, dict):
        raise ConfigError(f"{path}: research must be a table of limits ([research] with max_pages = 8 ...)")
    try:
        return Research.model_validate(value)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"{path}: research.{where}: {first['msg'][:1].lower()}{first['msg'][1:]}") from None


def _problem(key: str, value: Any) -> str | None:
    if key == "name" and not isinstance(value, str):
        return "must be the profile's name"
    if key == "model" and not (isinstance(value, str) and value.strip()):
        return "must be a model name"
    if key in ("mode", "max_mode") and value not in MODES:
        return f"must be one of {', '.join(MODES)}"
    if key in ("allowed_tools", "max_tools") and not (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    ):
        return "must be a list of tool names"
    if key == "network" and not isinstance(value, bool):
        return "must be true or false"
    if key == "egress" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return "must be a list of host names (or *.domain)"
    if key == "max_iterations" and not (type(value) is int and 1 <= value <= MAX_ITERATIONS):
        return f"must be a whole number from 1 to {MAX_ITERATIONS}"
    if key == "fallbacks" and not (isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)):
        return "must be a list of model names"
    if key == "escalate" and not isinstance(value, bool):
        return "must be true or false"
    if key == "approval_wait":
        try:
            parse_duration(value)
        except ValueError as exc:
            return f"must be a duration ({exc})"
    if key == "tool_set" and value not in TOOL_SETS:
        return f"must be one of {', '.join(TOOL_SETS)}"
    if key == "think" and not (isinstance(value, bool) or value in THINK_LEVELS):
        return f"must be true, false or one of {', '.join(THINK_LEVELS)}"
    if key in ("web_extract", "home", "enabled") and not isinstance(value, bool):
        return "must be true or false"
    if key == "heartbeat":
        return _schedule_problem(value)
    if key == "heartbeat_timer" and value != "systemd":
        return 'must be "systemd" (or absent: hearth watch fires the heartbeat)'

    if key == "strategic_review":
        try:
            parse_duration(value)
        except ValueError as exc:
            return f"must be a duration ({exc})"
    if key == "reply_tokens" and not (type(value) is int and MIN_REPLY_TOKENS <= value <= MAX_REPLY_TOKENS):
        return f"must be a whole number of tokens from {MIN_REPLY_TOKENS} to {MAX_REPLY_TOKENS}"
    if key == "max_tokens" and not (type(value) is int and 1 <= value <= MAX_RUN_TOKENS):
        return f"must be a whole number of tokens from 1 to {MAX_RUN_TOKENS}"
    return None


def _schedule_problem(value: Any) -> str | None:
    """A heartbeat is a mission's schedule, read here as `hearth watch` reads it."""
    if not isinstance(value, str):
        return "must be a schedule such as hourly or *-*-* 06:00:00"
    try:
        parse_calendar(value)
    except CalendarError as exc:
        return f"must be a schedule such as hourly ({exc})"
    return None


def agent_for_label(config_dir: Path, agent_name: str, label: str | None) -> str:
    """The profile a request runs under: its agent_name, or (when that is `default`) the profile its
    label names, if there is one; a label that names no profile is only a label."""
    if agent_name != "default" or not label or not _NAME.fullmatch(label):
        return agent_name
    return label if label in profile_names(config_dir) else agent_name


@dataclass(frozen=True)
class Chosen:
    """A run's settings as its profile settles them (admission routes the model and plans the rest)."""

    model: str  # `auto` or "" still: the router's to choose (hearth/run/router.py)
    mode: str
    max_iters: int
    allowed_tools: tuple[str, ...] | None  # None: every tool
    network: bool = False
    egress: tuple[str, ...] = ()
    tool_set: str = "common"  # what allowed_tools None shows: the common chores, or every tool (`all`)
    think: bool | str | None = None
    web_extract: bool = True
    reply_tokens: int = DEFAULT_REPLY_TOKENS


def apply_profile(
    profile: Profile,
    *,
    model: str | None,
    mode: str | None,
    max_iters: int | None,
    allowed_tools: list[str] | None,
    defaults: Settings,
    think: bool | str | None = None,
    web_extract: bool | None = None,
    reply_tokens: int | None = None,
) -> Chosen:
    """The run's settings: what was given explicitly, else the profile's, else hearth's default,
    within the profile's ceilings; UsageError when an explicit value is above one."""
    _within_ceilings(profile, mode, allowed_tools)
    tools = allowed_tools if allowed_tools is not None else profile.allowed_tools
    if tools is None:
        tools = profile.max_tools
    chosen = mode or profile.mode or defaults.mode
    if profile.max_mode and _rank(chosen) > _rank(profile.max_mode):
        chosen = profile.max_mode  # a default above the ceiling: the ceiling
    return Chosen(
        model=model or profile.model or defaults.model,
        mode=chosen,
        max_iters=max_iters if max_iters is not None else (profile.max_iterations or defaults.max_iterations),
        allowed_tools=tuple(tools) if tools is not None else None,
        tool_set=profile.tool_set or defaults.tool_set,
        think=think if think is not None else profile.think,
        web_extract=_first(web_extract, profile.web_extract, True),
        reply_tokens=reply_tokens or profile.reply_tokens or defaults.reply_tokens,
    )


def _first(*values: bool | None) -> bool:
    for value in values:
        if value is not None:
            return value
    return True


def apply_network(profile: Profile, chosen: Chosen, *, network: bool | None, egress: list[str]) -> Chosen:
    """Whether commands get network, and the egress list: the request's when given, else the profile's."""
    return replace(
        chosen,
        network=network if network is not None else bool(profile.network),
        egress=tuple(egress) if egress else tuple(profile.egress or ()),
    )


def _within_ceilings(profile: Profile, mode: str | None, tools: list[str] | None) -> None:
    if mode and profile.max_mode and _rank(mode) > _rank(profile.max_mode):
        raise UsageError(
            f"mode {mode!r} is above agent profile {profile.name!r}'s limit: max_mode = {profile.max_mode!r}"
        )
    if tools is not None and profile.max_tools is not None:
        outside = [t for t in tools if t not in profile.max_tools]
        if outside:
            raise UsageError(
                f"tool {outside[0]!r} is outside agent profile {profile.name!r}'s limit: "
                f"max_tools = {list(profile.max_tools)}"
            )
