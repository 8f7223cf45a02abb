"""The doctor's checks of what the operator wrote: agent profiles, prompt files and SOUL.md (their
placeholders), and the leash (router.toml, budget.toml, alerts.toml and its credentials, missions, eval
suites).

Its own room because these checks load the files the way a run would (the same loaders, the same
errors), where files.py looks only at paths and modes and host.py at what the machine provides.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.context.prompt import FALLBACKS, unknown_placeholders
from agent.tools.builtin import TOOLS
from hearth.doctor.finding import Finding
from hearth.errors import HearthError
from hearth.run.profiles import Profile, load_profile, profile_names
from hearth.run.prompting import SOUL_FILE, prompt_files, read_config_text
from hearth.settings import Settings

# --- profiles and prompt files ---------------------------------------------------------------


def check_profiles(settings: Settings, agent_name: str | None) -> tuple[list[Finding], list[Profile]]:
    names = [agent_name] if agent_name else profile_names(settings.config_dir)
    findings: list[Finding] = []
    profiles: list[Profile] = []
    for name in names:
        try:
            profile = load_profile(settings.config_dir, name)
        except HearthError as exc:
            findings.append(Finding(f"profile {name}", "error", str(exc)))
            continue
        profiles.append(profile)
        findings += _profile_findings(profile)
    return findings, profiles


def _profile_findings(profile: Profile) -> list[Finding]:
    check = f"profile {profile.name}"
    if profile.builtin:
        return [Finding(check, "ok", "built in (no directory): no role prompt, hearth's defaults")]
    found = []
    if profile.role_path is None:
        found.append(
            Finding(
                check,
                "warn",
                f"{profile.directory}/AGENTS.md is missing: the agent has no role prompt",
                str(profile.directory),
            )
        )
    else:
        found += placeholder_findings(check, profile.role_path, profile.role)
    unknown = sorted(set(profile.allowed_tools or ()) - set(TOOLS))
    if unknown:
        found.append(
            Finding(
                check,
                "warn",
                f"allowed_tools names tools hearth does not have: {', '.join(unknown)}",
                str(profile.directory),
            )
        )
    return found or [
        Finding(check, "ok", f"{profile.directory}: role prompt and settings read", str(profile.directory))
    ]


def placeholder_findings(check: str, path: Path, text: str) -> list[Finding]:
    found = []
    unknown = unknown_placeholders(text)
    if unknown:
        names = ", ".join(dict.fromkeys("{{" + n + "}}" for n in unknown))
        known = ", ".join("{{" + n + "}}" for n in FALLBACKS)
        found.append(Finding(check, "error", f"{path} has unknown placeholders {names}; known: {known}", str(path)))
    if not text.strip():
        found.append(Finding(check, "warn", f"{path} is empty", str(path)))
    return found


def check_prompt_files(settings: Settings) -> list[Finding]:
    try:
        paths = prompt_files(settings.config_dir)
    except HearthError as exc:
        return [Finding("prompts", "error", str(exc))]
    soul = settings.config_dir / SOUL_FILE
    paths += [soul] if soul.exists() else []
    found: list[Finding] = []
    for path in paths:
        try:
            found += placeholder_findings("prompts", path, read_config_text(path))
        except HearthError as exc:
            found.append(Finding("prompts", "error", str(exc), str(path)))
    if not paths:
        return [Finding("prompts", "info", f"no {settings.config_dir}/prompts/*.md and no SOUL.md: base prompt only")]
    return found or [Finding("prompts", "ok", f"{len(paths)} prompt file(s) read, every placeholder known")]


# --- the operator's leash: router, budgets, alerts, missions ---------------------------------


def check_leash(settings: Settings) -> list[Finding]:
    """router.toml, budget.toml, alerts.toml (and the credentials its URLs name), missions/*.toml."""
    from hearth.leash.alerts import load_destinations
    from hearth.leash.budget import load_budget
    from hearth.leash.missions import load_missions
    from hearth.run.router import load_router

    found: list[Finding] = []
    for check, load in (
        ("router", lambda: load_router(settings.config_dir)),
        ("budget", lambda: load_budget(settings.config_dir, settings.daily_tokens)),
    ):
        try:
            load()
        except HearthError as exc:
            found.append(Finding(check, "error", str(exc)))
    try:
        destinations = load_destinations(settings.config_dir)
    except HearthError as exc:
        destinations = []
        found.append(Finding("alerts", "error", f"{exc}; no alerts are sent"))
    found += _alert_credentials(settings, destinations)
    found += [
        Finding(
            "alerts",
            "info",
            f"alert destination {d.name} is local = true: the address policy lets it reach this machine or the LAN",
        )
        for d in destinations
        if d.local
    ]
    missions, problems = load_missions(settings)
    found += [Finding("missions", "ok", f"mission {m.name}: {m.schedule}") for m in missions]
    found += [Finding("missions", "error", f"{p.line()}; skipped", str(p.path)) for p in problems]
    return found + _eval_findings(settings, [m.eval for m in missions if m.eval])


def _eval_findings(settings: Settings, watched: list[str]) -> list[Finding]:
    """evals/*.toml (hearth/eval/suite.py), and each suite a mission's regression watch names."""
    from hearth.eval.suite import load_suite, suite_names

    found: list[Finding] = []
    names = suite_names(settings.config_dir)
    for name in names:
        try:
            suite = load_suite(settings.config_dir, name)
        except HearthError as exc:
            found.append(Finding("evals", "error", f"{exc}; `hearth eval run {name}` refuses it"))
            continue
        found.append(Finding("evals", "ok", f"suite {name}: {len(suite.cases)} case(s)"))
    for name in sorted(set(watched) - set(names)):
        found.append(Finding("evals", "warn", f"a mission watches suite {name}, but there is no evals/{name}.toml"))
    return found


def _alert_credentials(settings: Settings, destinations: list[Any]) -> list[Finding]:
    from hearth.credentials import CredentialStore

    store = CredentialStore(settings.credentials_path, settings.credentials_dir)
    found = []
    for destination in destinations:
        for name in destination.credentials:
            try:
                known = store.value(name) is not None
            except HearthError:
                known = False
            if not known:
                message = (
                    f"alert destination {destination.name} names credential {name!r}, which the store does not have"
                )
                found.append(Finding("alerts", "error", message))
    if destinations and not found:
        found.append(Finding("alerts", "ok", f"{len(destinations)} alert destination(s)"))
    return found
