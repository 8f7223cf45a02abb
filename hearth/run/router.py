"""The model router: which Ollama model a run gets when its request says `auto` (or nothing).

    $HEARTH_CONFIG_DIR/router.toml       (on NixOS: services.hearth.router)
        default = "qwen2.5-coder"        when no rule matches; absent: HEARTH_MODEL
        fallbacks = ["llama3.2"]         tried, in order, after any rule's own
        [[rule]]                         matched in order; the first that matches wins
        name = "code"                    recorded as the reason the model was chosen
        model = "qwen2.5-coder:7b"       required
        agents = ["builder"]             the agent profile is one of these
        modes = ["auto", "bypass"]       the mode is one of these
        tools = ["run_command"]          the run may use one of these (a run with every tool may)
        sources = ["timer"]              the request came from one of these
        goal = "(?i)\\btests?\\b"        a regular expression found in the goal
        goal_min_chars = 0               the goal's length bounds
        goal_max_chars = 2000
        fallbacks = ["qwen2.5-coder:3b"] the next models, in order
        escalate = true                  a run ending iteration_limit, stuck or failed is retried once on the next
        host = "gpu1"                    the run's turns go only to the Ollama host of this label
        [[host]]                         several Ollama hosts (hearth/run/hosts.py); none: OLLAMA_HOST
        url = "http://10.0.0.5:11434"
        label = "gpu1"                   optional; weight = 2.0 takes twice the load

Precedence: a model the request names, then the agent profile's, then the rules, then the default.
Against the models Ollama has pulled (`/api/tags`), a name resolves exactly, or by tag
(`qwen2.5-coder` runs `qwen2.5-coder:latest`, else the only pulled tag of that name); a model that
is not pulled gives way to the next fallback, and an `auto` run with none pulled takes the first
pulled model. Each choice says why: the rule's name, `default`, `request`, `profile`, `tag`,
`fallback` or `escalation` (a linked run).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from agent.model.tags import resolve_tag
from agent.safety.policy import MODES
from hearth.errors import ConfigError, HearthError
from hearth.run.goal import GoalRequest, RunPlan
from hearth.run.profiles import Chosen, Profile
from hearth.settings import Settings
from hearth.tomlcheck import known_table, read_toml

AUTO = "auto"
ROUTER_FILE = "router.toml"
RULE_KEYS = (
    "name",
    "model",
    "agents",
    "modes",
    "tools",
    "sources",
    "goal",
    "goal_min_chars",
    "goal_max_chars",
    "fallbacks",
    "escalate",
    "host",
)
TOP_KEYS = ("default", "fallbacks", "escalate", "rule", "host")
_LISTS = ("agents", "modes", "tools", "sources", "fallbacks")


@dataclass(frozen=True)
class Facts:
    """What a rule may look at."""

    agent: str
    mode: str
    tools: tuple[str, ...] | None  # None: every tool
    source: str
    goal: str


@dataclass(frozen=True)
class Rule:
    name: str
    model: str
    agents: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    goal: re.Pattern[str] | None = None
    goal_min_chars: int | None = None
    goal_max_chars: int | None = None
    fallbacks: tuple[str, ...] = ()
    escalate: bool = False
    host: str = ""  # an Ollama host's label: the run's turns go only there

    def matches(self, facts: Facts) -> bool:
        tools_ok = not self.tools or facts.tools is None or any(t in facts.tools for t in self.tools)
        return (
            (not self.agents or facts.agent in self.agents)
            and (not self.modes or facts.mode in self.modes)
            and tools_ok
            and (not self.sources or facts.source in self.sources)
            and (self.goal is None or self.goal.search(facts.goal) is not None)
            and (self.goal_min_chars is None or len(facts.goal) >= self.goal_min_chars)
            and (self.goal_max_chars is None or len(facts.goal) <= self.goal_max_chars)
        )


@dataclass(frozen=True)
class Router:
    rules: tuple[Rule, ...] = ()
    default: str | None = None  # None: the host's (HEARTH_MODEL)
    fallbacks: tuple[str, ...] = ()
    escalate: bool = False


@dataclass(frozen=True)
class Route:
    """The model a run uses, what was asked, why, and what comes next if it fails."""

    requested: str  # a model name, or `auto`
    model: str
    reason: str
    fallbacks: tuple[str, ...] = ()
    escalate: bool = False
    problem: str = ""  # set when nothing usable is pulled: the run ends model_unavailable with it
    host: str = ""  # the label of the Ollama host a rule pinned, else any host that has the model
    pulled: tuple[str, ...] | None = field(default=None, compare=False)


def is_auto(model: str | None) -> bool:
    name = (model or "").strip()
    return not name or name == AUTO


def load_router(config_dir: Path) -> Router:
    """The router of `config_dir/router.toml`; no file is no rules. ConfigError names the file and field."""
    path = config_dir / ROUTER_FILE
    if not path.exists():
        return Router()
    data = read_toml(path)
    unknown = sorted(set(data) - set(TOP_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r}; the keys are {', '.join(TOP_KEYS)}")
    rules = data.get("rule", [])
    if not isinstance(rules, list):
        raise ConfigError(f"{path}: rule must be a list of tables ([[rule]])")
    return Router(
        rules=tuple(_rule(path, i, r) for i, r in enumerate(rules)),
        default=_model(path, "default", data["default"]) if "default" in data else None,
        fallbacks=_models(path, "fallbacks", data.get("fallbacks", [])),
        escalate=_bool(path, "escalate", data.get("escalate", False)),
    )


def _rule(path: Path, index: int, raw: Any) -> Rule:
    where = f"rule[{index}]"
    raw = known_table(path, where, raw, RULE_KEYS)
    if "model" not in raw:
        raise ConfigError(f'{path}: {where} names no model; add model = "NAME"')
    name = raw.get("name", f"rule-{index}")
    if not (isinstance(name, str) and name.strip()):
        raise ConfigError(f"{path}: {where}.name must be a non-empty string, got {name!r}")
    lists = {key: _strings(path, f"{where}.{key}", raw.get(key, [])) for key in _LISTS}
    bad_mode = next((m for m in lists["modes"] if m not in MODES), None)
    if bad_mode:
        raise ConfigError(f"{path}: {where}.modes: {bad_mode!r} is not one of {', '.join(MODES)}")
    return Rule(
        name=name.strip(),
        model=_model(path, f"{where}.model", raw["model"]),
        goal=_pattern(path, f"{where}.goal", raw.get("goal")),
        goal_min_chars=_count(path, f"{where}.goal_min_chars", raw.get("goal_min_chars")),
        goal_max_chars=_count(path, f"{where}.goal_max_chars", raw.get("goal_max_chars")),
        escalate=_bool(path, f"{where}.escalate", raw.get("escalate", False)),
        host=_label(path, f"{where}.host", raw.get("host", "")),
        **{**lists, "fallbacks": tuple(_model(path, f"{where}.fallbacks", m) for m in lists["fallbacks"])},
    )


def _strings(path: Path, where: str, value: Any) -> tuple[str, ...]:
    if not (isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)):
        raise ConfigError(f"{path}: {where} must be a list of names, got {value!r}")
    return tuple(v.strip() for v in value)


def _model(path: Path, where: str, value: Any) -> str:
    if not (isinstance(value, str) and value.strip()) or is_auto(value):
        raise ConfigError(f"{path}: {where} must be a model name such as qwen2.5-coder:7b, got {value!r}")
    return value.strip()


def _models(path: Path, where: str, value: Any) -> tuple[str, ...]:
    return tuple(_model(path, where, m) for m in _strings(path, where, value))


def _label(path: Path, where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{path}: {where} must be the label of a [[host]], got {value!r}")
    return value.strip()


def _pattern(path: Path, where: str, value: Any) -> re.Pattern[str] | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{path}: {where} must be a regular expression (a string), got {value!r}")
    try:
        return re.compile(value)
    except re.error as exc:
        raise ConfigError(f"{path}: {where} is not a valid regular expression: {exc}") from None


def _count(path: Path, where: str, value: Any) -> int | None:
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise ConfigError(f"{path}: {where} must be a whole number of characters (0 or more), got {value!r}")
    return value


def _bool(path: Path, where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: {where} must be true or false, got {value!r}")
    return value


# -- choosing -------------------------------------------------------------------------------------
def route(
    router: Router,
    facts: Facts,
    *,
    requested: str | None,
    profile_model: str | None,
    profile_fallbacks: tuple[str, ...] = (),
    profile_escalate: bool | None = None,
    host_default: str,
) -> Route:
    """The model before it meets Ollama: the request's, the profile's, a rule's or the default."""
    tail = (*profile_fallbacks, *router.fallbacks)
    escalate = router.escalate if profile_escalate is None else profile_escalate
    if not is_auto(requested):
        return Route(requested or "", (requested or "").strip(), "request", tail, escalate)
    if not is_auto(profile_model):
        return Route(AUTO, (profile_model or "").strip(), "profile", tail, escalate)
    rule = next((r for r in router.rules if r.matches(facts)), None)
    if rule is not None:
        return Route(AUTO, rule.model, rule.name, (*rule.fallbacks, *tail), rule.escalate or escalate, host=rule.host)
    return Route(AUTO, router.default or host_default, "default", tail, escalate)


def against_pulled(chosen: Route, pulled: list[str] | None) -> Route:
    """The route checked against the pulled models: by tag, else the next fallback (None: unknown, as is)."""
    if pulled is None:
        return chosen
    candidates = [chosen.model, *chosen.fallbacks]
    for index, name in enumerate(candidates):
        found = resolve_tag(name, pulled)
        if found is None:
            continue
        reason = chosen.reason if index == 0 else "fallback"
        if found != name and index == 0:
            reason = "tag"
        return replace(chosen, model=found, reason=reason, fallbacks=_dedupe(candidates[index + 1 :], found, pulled))
    if chosen.requested == AUTO and pulled:
        return replace(chosen, model=pulled[0], reason="fallback", fallbacks=())
    return replace(chosen, problem=not_pulled(chosen.model, pulled), pulled=tuple(pulled))


def _dedupe(rest: list[str], chosen: str, pulled: list[str]) -> tuple[str, ...]:
    """The fallbacks still worth trying after `chosen`: pulled, resolved, each once."""
    out: list[str] = []
    for name in rest:
        found = resolve_tag(name, pulled)
        if found and found != chosen and found not in out:
            out.append(found)
    return tuple(out)


def not_pulled(name: str, pulled: list[str]) -> str:
    """`model X is not pulled; pulled models: ...; did you mean Y?` (one line)."""
    shown = ", ".join(pulled) if pulled else "none"
    return f"model {name} is not pulled; pulled models: {shown}; {pull_hint(name, pulled)}"


def pull_hint(name: str, pulled: list[str]) -> str:
    """`did you mean Y?` for a pulled model close to `name`, else `run: ollama pull NAME`."""
    import difflib

    near = difflib.get_close_matches(name, pulled, n=1, cutoff=0.5) or difflib.get_close_matches(
        name.split(":", 1)[0], [p.split(":", 1)[0] for p in pulled], n=1, cutoff=0.5
    )
    return f"did you mean {_full(near[0], pulled)}?" if near else f"run: ollama pull {name}"


def _full(near: str, pulled: list[str]) -> str:
    return near if near in pulled else next(p for p in pulled if p.split(":", 1)[0] == near)


def route_request(
    request: GoalRequest, profile: Profile, chosen: Chosen, settings: Settings, pulled: list[str] | None
) -> tuple[Route, str]:
    """The route of a request with its profile applied (`chosen`), and a warning when router.toml
    is broken (its rules are then not used; a run never fails for it)."""
    if request.model_reason:  # a linked run: its model was chosen by the run before it
        given = Route(request.model_requested or AUTO, request.model or "", request.model_reason)
        return replace(given, fallbacks=request.fallbacks, escalate=request.escalate), ""
    try:
        router, warning = load_router(settings.config_dir), ""
    except HearthError as exc:
        router, warning = Router(), str(exc)
    facts = Facts(request.agent_name, chosen.mode, chosen.allowed_tools, request.source, request.goal)
    routed = route(
        router,
        facts,
        requested=request.model,
        profile_model=profile.model,
        profile_fallbacks=profile.fallbacks,
        profile_escalate=profile.escalate,
        host_default=settings.model,
    )
    return against_pulled(routed, pulled), warning


# -- the run after ---------------------------------------------------------------------------------
class _Runs(Protocol):
    def run(self, run_id: str) -> dict[str, Any] | None: ...


def linked_request(
    plan: RunPlan, chosen: Route, status: str, run_id: str, root: Path, audit: _Runs
) -> GoalRequest | None:
    """The linked run that follows one that ended `status` (its `plan`): on the next model, in the same workspace.

    `model_unavailable` falls back to the next model; `iteration_limit`, `stuck` or `failed` escalates to it
    once when the route says `escalate`; anything else, or no next model, ends the chain.
    """
    if not chosen.fallbacks:
        return None
    if status == "model_unavailable":
        link = "fallback"
    elif status in ("iteration_limit", "stuck", "failed") and chosen.escalate:
        link = "escalation"
    else:
        return None
    return replace(
        plan.as_request(),
        model=chosen.fallbacks[0],
        model_reason=link,
        model_requested=chosen.requested,
        fallbacks=chosen.fallbacks[1:],
        escalate=chosen.escalate and link != "escalation",
        run_id=_linked_id(run_id, link, audit),
        parent_run=run_id,
        link=link,
        workspace=root,
    )


def _linked_id(parent: str, link: str, audit: _Runs) -> str:
    """`<parent>.<link>`, numbered when taken, within the 64 characters of an id."""
    for n in range(1, 100):
        suffix = f".{link}" + (f"{n}" if n > 1 else "")
        candidate = parent[: 64 - len(suffix)] + suffix
        if audit.run(candidate) is None:
            return candidate
    raise ConfigError(f"run {parent} has too many linked runs")
