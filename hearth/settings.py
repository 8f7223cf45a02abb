"""Settings read once, at the edge, from the environment; passed down as values."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agent.model import DEFAULT_REPLY_TOKENS
from agent.model.host import DEFAULT_TIMEOUT_S, parse_host
from agent.safety.policy import MODES
from agent.tools.registry import TOOL_SETS
from hearth.errors import ConfigError, UsageError
from hearth.limits import MAX_ITERATIONS, MAX_REPLY_TOKENS, MIN_REPLY_TOKENS, parse_duration

DEFAULT_STATE_DIR = "/var/lib/hearth"
DEFAULT_CONFIG_DIR = "/etc/hearth"
DEFAULT_MODEL = "qwen2.5-coder"


def model_origin(model: str) -> str:
    """Where a host's model comes from, as a page names it: HEARTH_MODEL, or hearth's own default
    (a page naming HEARTH_MODEL when it is unset sends a person looking for a variable)."""
    return "HEARTH_MODEL" if model != DEFAULT_MODEL else "hearth's default; HEARTH_MODEL sets another"


SANDBOX_KINDS = ("auto", "bwrap", "landlock", "none")
TRIPWIRES = ("home", "workspace", "off")  # where decoys go: the sandbox home, also the workspace, nowhere
TRIPWIRE_ACTIONS = ("stop", "record")
LOG_LEVELS = ("", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


# A request queued in the evening can still be approved the next morning; waiting costs nothing
# while the run is suspended (no process, no slot), so only a person's day bounds it.
DEFAULT_APPROVAL_WAIT_S = 12 * 3600.0


@dataclass(frozen=True)
class Settings:
    state_dir: Path
    config_dir: Path
    # the model server, `[KIND+]URL` (agent/model/host.py): HEARTH_MODEL_HOST, else OLLAMA_HOST
    model_host: str
    model: str
    sandbox: str
    # how long a run waits for its server to begin answering, then for each chunk of a streamed reply
    # (HEARTH_MODEL_TIMEOUT_S; a host of router.toml may say its own), and the first retry's backoff
    model_timeout_s: float = DEFAULT_TIMEOUT_S
    model_backoff_s: float = 0.5
    model_hosts: str = ""  # HEARTH_MODEL_HOSTS: several hosts, `label=[KIND+]url,...` (hearth/run/hosts.py)
    # the server semantic recall embeds with (HEARTH_EMBED_HOST, `[KIND+]URL`): the model host unless named
    embed_host: str = ""
    # the most tokens one reply may have when the request and the profile do not say (HEARTH_REPLY_TOKENS)
    reply_tokens: int = DEFAULT_REPLY_TOKENS
    # an unusable reply asked again held to one step by the server's JSON schema (HEARTH_REASK: on | off)
    reask: bool = True
    credentials_dir: Path | None = None  # systemd's $CREDENTIALS_DIRECTORY
    # systemd's $STATE_DIRECTORY: in a hearth-agent@ unit, the run's workspace it made (StateDirectory=)
    unit_state_dirs: tuple[str, ...] = ()
    net_private_hosts: tuple[str, ...] = ()  # LAN hosts network tools may reach (HEARTH_NET_PRIVATE_HOSTS)
    # a SearXNG JSON endpoint web_search asks instead of ddgs (HEARTH_SEARCH_URL; "": ddgs)
    search_url: str = ""
    recall_chars: int = 2000  # auto-recall budget of the first message (HEARTH_RECALL_CHARS, 0: off)
    # semantic recall (agent/knowledge/semantic.py): the Ollama embedding model (HEARTH_EMBED_MODEL;
    # "off": by text only), and how much each way counts in the fusion (HEARTH_RECALL_TEXT_WEIGHT,
    # HEARTH_RECALL_MEANING_WEIGHT)
    embed_model: str = "nomic-embed-text"
    recall_text_weight: float = 1.0
    recall_meaning_weight: float = 1.0
    # how long an approval waits for a person before it is a deny (HEARTH_APPROVAL_WAIT, e.g. 12h):
    # a queued run that waits holds nothing (it suspends after `suspend_after_s`), so the wait is long
    approval_wait_s: float = DEFAULT_APPROVAL_WAIT_S
    suspend_after_s: float = 10.0  # HEARTH_SUSPEND_AFTER_S: a queued run waiting this long suspends
    auto_commands: tuple[str, ...] = ()  # command heads auto mode runs without asking
    mode: str = "auto"  # when neither the request nor the agent profile says
    max_iterations: int = 12
    queue_path: Path | None = None  # HEARTH_QUEUE_DIR; None means <state_dir>/queue
    max_local_runs: int = 4  # runs `hearth spawn --local` and `hearth watch` keep going at once
    launcher: str = "auto"  # how `hearth spawn` starts runs: auto | systemd | local | a registered row
    # the walls around commands (agent/safety/): read-only paths beyond the system's, the run's
    # caps (its cgroup: processes and memory; CPU seconds of all its commands), the tripwires
    sandbox_expose: tuple[str, ...] = ()  # HEARTH_SANDBOX_EXPOSE, e.g. /opt/tool:/srv/sdk
    command_max_procs: int = 256  # HEARTH_COMMAND_MAX_PROCS
    command_memory_mb: int = 1024  # HEARTH_COMMAND_MEMORY_MB
    command_cpu_s: int = 1800  # HEARTH_COMMAND_CPU_S
    tripwires: str = "home"  # HEARTH_TRIPWIRES: home | workspace | off
    tripwire_action: str = "stop"  # HEARTH_TRIPWIRE_ACTION: stop (status tripped) | record
    submitters_group: str = ""  # HEARTH_SUBMITTERS_GROUP: only its users (and hearth, root) may own requests
    log_level: str = ""  # HEARTH_LOG_LEVEL: libraries' logs on stderr at this level (always redacted)
    daily_tokens: int | None = None  # HEARTH_DAILY_TOKENS: the box's daily budget (hearth/leash/budget.py)
    web_url: str = ""  # HEARTH_WEB_URL: the command center's address, for links in alerts
    tool_set: str = "common"  # HEARTH_TOOL_SET: common | all, when neither request nor profile lists tools
    # delegation (hearth/run/delegate.py): how deep children of children may go (a child at the
    # depth is not given the tool), and how many children one run may start in all
    delegate_depth: int = 2  # HEARTH_DELEGATE_DEPTH (0: no run delegates)
    delegate_children: int = 4  # HEARTH_DELEGATE_CHILDREN
    # HEARTH_FLEET_OUTBOX: set by `hearth worker` for the watch it keeps; its runs record into this box's
    # audit and this outbox, which the worker sends to its hub (hearth/remote/outbox.py)
    fleet_outbox: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        return cls(
            state_dir=Path(env.get("HEARTH_STATE_DIR") or DEFAULT_STATE_DIR),
            config_dir=Path(env.get("HEARTH_CONFIG_DIR") or DEFAULT_CONFIG_DIR),
            model_host=_host(env, "HEARTH_MODEL_HOST", "OLLAMA_HOST") or "127.0.0.1:11434",
            model=env.get("HEARTH_MODEL") or DEFAULT_MODEL,
            sandbox=_sandbox(env),
            model_timeout_s=_number(
                env, _either(env, "HEARTH_MODEL_TIMEOUT_S", "HEARTH_OLLAMA_TIMEOUT_S"), DEFAULT_TIMEOUT_S
            ),
            model_backoff_s=_number(env, _either(env, "HEARTH_MODEL_BACKOFF_S", "HEARTH_OLLAMA_BACKOFF_S"), 0.5),
            model_hosts=env.get("HEARTH_MODEL_HOSTS") or env.get("HEARTH_OLLAMA_HOSTS", ""),
            embed_host=_host(env, "HEARTH_EMBED_HOST"),
            reply_tokens=_whole(env, "HEARTH_REPLY_TOKENS", DEFAULT_REPLY_TOKENS, MIN_REPLY_TOKENS, MAX_REPLY_TOKENS),
            reask=_choice(env, "HEARTH_REASK", ("on", "off"), "on") == "on",
            credentials_dir=Path(env["CREDENTIALS_DIRECTORY"]) if env.get("CREDENTIALS_DIRECTORY") else None,
            unit_state_dirs=tuple(p for p in env.get("STATE_DIRECTORY", "").split(":") if p),
            net_private_hosts=tuple(h.strip() for h in env.get("HEARTH_NET_PRIVATE_HOSTS", "").split(",") if h.strip()),
            search_url=_search_url(env),
            recall_chars=_count(env, "HEARTH_RECALL_CHARS", 2000),
            embed_model=_embed_model(env),
            recall_text_weight=_weight(env, "HEARTH_RECALL_TEXT_WEIGHT"),
            recall_meaning_weight=_weight(env, "HEARTH_RECALL_MEANING_WEIGHT"),
            approval_wait_s=_approval_wait(env),
            suspend_after_s=_number(env, "HEARTH_SUSPEND_AFTER_S", 10.0),
            auto_commands=_heads(env),
            mode=_choice(env, "HEARTH_MODE", MODES, "auto"),
            max_iterations=_whole(env, "HEARTH_MAX_ITERATIONS", 12, 1, MAX_ITERATIONS),
            queue_path=Path(env["HEARTH_QUEUE_DIR"]) if env.get("HEARTH_QUEUE_DIR") else None,
            max_local_runs=_whole(env, "HEARTH_MAX_LOCAL_RUNS", 4, 1, 64),
            launcher=_launcher(env),
            sandbox_expose=_paths(env, "HEARTH_SANDBOX_EXPOSE"),
            command_max_procs=_whole(env, "HEARTH_COMMAND_MAX_PROCS", 256, 8, 65_536),
            command_memory_mb=_whole(env, "HEARTH_COMMAND_MEMORY_MB", 1024, 64, 1 << 20),
            command_cpu_s=_whole(env, "HEARTH_COMMAND_CPU_S", 1800, 1, 1 << 24),
            tripwires=_choice(env, "HEARTH_TRIPWIRES", TRIPWIRES, "home"),
            tripwire_action=_choice(env, "HEARTH_TRIPWIRE_ACTION", TRIPWIRE_ACTIONS, "stop"),
            submitters_group=env.get("HEARTH_SUBMITTERS_GROUP", "").strip(),
            log_level=_log_level(env),
            daily_tokens=_tokens(env, "HEARTH_DAILY_TOKENS"),
            web_url=(env.get("HEARTH_WEB_URL") or "").strip().rstrip("/"),
            tool_set=_choice(env, "HEARTH_TOOL_SET", TOOL_SETS, "common"),
            delegate_depth=_whole(env, "HEARTH_DELEGATE_DEPTH", 2, 0, 8),
            delegate_children=_whole(env, "HEARTH_DELEGATE_CHILDREN", 4, 1, 64),
            fleet_outbox=Path(env["HEARTH_FLEET_OUTBOX"]) if env.get("HEARTH_FLEET_OUTBOX") else None,
        )

    @property
    def embedder_host(self) -> str:
        return self.embed_host or self.model_host

    @property
    def audit_path(self) -> Path:
        return self.state_dir / "audit.db"

    @property
    def knowledge_path(self) -> Path:
        return self.state_dir / "knowledge.db"

    @property
    def credentials_path(self) -> Path:
        return self.state_dir / "credentials.json"

    @property
    def runs_state_dir(self) -> Path:
        return self.state_dir / "state"

    @property
    def checkpoints_dir(self) -> Path:
        """hearth's own git directories of workspace histories (hearth/run/checkpoints.py)."""
        return self.state_dir / "checkpoints"

    @property
    def agents_dir(self) -> Path:
        return self.state_dir / "agents"

    @property
    def queue_dir(self) -> Path:
        return self.queue_path or self.state_dir / "queue"

    def writable_state_dir(self) -> Path:
        """The state directory, created if needed; a ConfigError naming HEARTH_STATE_DIR if unusable."""
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            probe_writable(self.state_dir)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise ConfigError(
                f"cannot write to the state directory {self.state_dir}: {reason}; "
                "set HEARTH_STATE_DIR to a directory you can write"
            ) from None
        return self.state_dir


def probe_writable(directory: Path) -> None:
    """Raise OSError unless a file can really be created in `directory` (root ignores modes)."""
    with tempfile.NamedTemporaryFile(dir=directory, prefix=".probe-"):
        pass


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    raw = env.get(name) or default
    if raw not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return raw


def _launcher(env: Mapping[str, str]) -> str:
    """A launcher's name; which names exist is the launchers' table's to say (hearth/dispatch/launchers/)."""
    raw = env.get("HEARTH_LAUNCHER") or "auto"
    if not re.fullmatch(r"[a-z][a-z0-9_-]{0,31}", raw):
        raise ConfigError(
            f"HEARTH_LAUNCHER must name a launcher (auto, systemd, local or a registered one), got {raw!r}"
        )
    return raw


def _whole(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    if not raw.strip().isdigit() or not low <= int(raw) <= high:
        raise ConfigError(f"{name} must be a whole number from {low} to {high}, got {raw!r}")
    return int(raw)


def _tokens(env: Mapping[str, str], name: str) -> int | None:
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise ConfigError(f"{name} must be a whole number of tokens, got {raw!r}")
    return int(raw)


def _search_url(env: Mapping[str, str]) -> str:
    url = (env.get("HEARTH_SEARCH_URL") or "").strip()
    if url and not re.match(r"https?://[^/?#\s]+", url):
        raise ConfigError(f"HEARTH_SEARCH_URL must be an http or https URL (a SearXNG /search), got {url[:80]!r}")
    return url


def _approval_wait(env: Mapping[str, str]) -> float:
    """HEARTH_APPROVAL_WAIT (a duration), else the older HEARTH_APPROVAL_TIMEOUT_S (seconds)."""
    raw = env.get("HEARTH_APPROVAL_WAIT")
    if not raw:
        return _number(env, "HEARTH_APPROVAL_TIMEOUT_S", DEFAULT_APPROVAL_WAIT_S)
    try:
        return parse_duration(raw)
    except ValueError as exc:
        raise ConfigError(f"HEARTH_APPROVAL_WAIT: {exc}") from None


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, got {raw!r}") from None
    if value < 0:
        raise ConfigError(f"{name} must not be negative, got {raw!r}")
    return value


def _embed_model(env: Mapping[str, str]) -> str:
    """HEARTH_EMBED_MODEL: an Ollama model name; `off` (or `none`) searches by text only."""
    raw = env.get("HEARTH_EMBED_MODEL")
    name = "nomic-embed-text" if raw is None else raw.strip()
    return "" if name.lower() in ("", "off", "none") else name


def _weight(env: Mapping[str, str], name: str) -> float:
    raw = env.get(name)
    try:
        value = 1.0 if not raw else float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 100:
        raise ConfigError(f"{name} must be a number from 0 to 100 (1 is the default), got {raw!r}")
    return value


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    if not raw.strip().isdigit():
        raise ConfigError(f"{name} must be a whole number of characters (0 turns it off), got {raw!r}")
    return int(raw)


def _log_level(env: Mapping[str, str]) -> str:
    level = (env.get("HEARTH_LOG_LEVEL") or "").strip().upper()
    if level not in LOG_LEVELS:
        raise ConfigError(f"HEARTH_LOG_LEVEL must be one of {', '.join(LOG_LEVELS[1:])}, got {level!r}")
    return level


def _sandbox(env: Mapping[str, str]) -> str:
    kind = (env.get("HEARTH_SANDBOX") or "auto").strip()
    if kind not in SANDBOX_KINDS:
        raise ConfigError(f"HEARTH_SANDBOX must be one of {', '.join(SANDBOX_KINDS)}, got {kind!r}")
    return kind


def _paths(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """A colon list of absolute paths (like PATH)."""
    paths = tuple(p.strip() for p in (env.get(name) or "").split(":") if p.strip())
    relative = [p for p in paths if not p.startswith("/")]
    if relative:
        raise ConfigError(
            f"{name} lists absolute paths separated by ':', like /opt/tool:/srv/sdk; {relative[0]!r} is not one"
        )
    return paths


def _heads(env: Mapping[str, str]) -> tuple[str, ...]:
    """HEARTH_AUTO_COMMANDS: a comma list of command heads, like `git,ls,pytest`."""
    heads = tuple(h.strip() for h in (env.get("HEARTH_AUTO_COMMANDS") or "").split(",") if h.strip())
    odd = [h for h in heads if any(c.isspace() or c in "$`;&|<>()*?[" for c in h)]
    if odd:
        raise ConfigError(f"HEARTH_AUTO_COMMANDS lists program names, like git,ls,pytest; {odd[0]!r} is not one")
    return heads


def tool_names(text: str, *, what: str = "--allowed-tools") -> list[str]:
    """A comma list of tool names from a flag, checked: the one way every edge reads a manifest."""
    return check_tool_names([name.strip() for name in text.split(",") if name.strip()], what=what)


def check_tool_names(names: list[str], *, what: str = "allowed tools") -> list[str]:
    """`names` if each is a tool hearth has; UsageError naming the first that is not (with a guess),
    or saying that an empty list allows nothing."""
    from agent.parsing import suggest_tool_name
    from agent.tools.builtin import TOOLS  # the whole tool table, only when a manifest is given

    if not names:
        raise UsageError(
            f"{what}: no tool named, so every call would be denied; name at least one "
            "(e.g. read_file,list_files), or leave it out for every tool"
        )
    for name in names:
        if name not in TOOLS:
            guess = suggest_tool_name(name, TOOLS)
            hint = f"; did you mean {guess}?" if guess else f"; the tools are {', '.join(sorted(TOOLS))}"
            raise UsageError(f"{what}: {name!r} is not a tool hearth has{hint}")
    return names


def _either(env: Mapping[str, str], name: str, older: str) -> str:
    """The variable's name, or the older one's where only that is set (OLLAMA_HOST before HEARTH_MODEL_HOST)."""
    return name if env.get(name) or not env.get(older) else older


def _host(env: Mapping[str, str], name: str, older: str = "") -> str:
    """A model server as written (`[KIND+]URL`), its kind checked here, at the edge."""
    key = _either(env, name, older) if older else name
    raw = (env.get(key) or "").strip()
    if raw:
        try:
            parse_host(raw)
        except ValueError as exc:
            raise ConfigError(f"{key}: {exc}") from None
    return raw
