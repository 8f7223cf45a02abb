"""`hearth doctor`: is this machine ready to run agents? Each finding is ok, info, warn or error.

An error is what makes runs fail or unsafe: an unusable state directory, a world-writable config
or queue, a broken profile or prompt file, an unknown placeholder, Ollama unreachable or a
configured model not pulled, no command sandbox, a credentials store others can read, a failed
hearth unit, a prompt that does not fit the window. A warning works but deserves a look. Info
says what was not checked and why. Only paths and modes are inspected for the queue and the
credentials store; nothing is created or changed.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent.context.prompt import FALLBACKS, unknown_placeholders
from agent.safety.sandbox import SandboxUnavailable, detect
from agent.tools.builtin import TOOLS
from hearth.errors import HearthError
from hearth.run.profiles import Profile, load_profile, profile_names
from hearth.run.prompting import SOUL_FILE, prompt_files, read_config_text
from hearth.settings import Settings

STATUSES = ("ok", "info", "warn", "error")


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok | info | warn | error
    message: str
    path: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return asdict(self)


def summary_counts(findings: Iterable[Finding]) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for finding in findings:
        counts[finding.status] += 1
    return counts


# --- files and permissions -------------------------------------------------------------------


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def loose_write(path: Path, check: str, what: str) -> list[Finding]:
    """An error if others may write `path`, a warning if its group may (symlinks are judged by their target)."""
    try:
        mode = mode_of(path)
    except OSError as exc:
        return [Finding(check, "warn", f"cannot inspect {what} {path}: {exc.strerror or exc}", str(path))]
    if mode & stat.S_IWOTH:
        return [
            Finding(
                check,
                "error",
                f"{what} {path} is writable by every user (mode {mode:04o}); run: chmod o-w {path}",
                str(path),
            )
        ]
    if mode & stat.S_IWGRP:
        return [Finding(check, "warn", f"{what} {path} is writable by its group (mode {mode:04o})", str(path))]
    return []


def check_state_dir(settings: Settings) -> list[Finding]:
    path = settings.state_dir
    if not path.exists():
        parent = next((p for p in path.parents if p.exists()), Path("/"))
        if os.access(parent, os.W_OK):
            return [Finding("state", "warn", f"{path} does not exist yet; the first run creates it", str(path))]
        return [
            Finding(
                "state",
                "error",
                f"{path} does not exist and {parent} is not writable; "
                "set HEARTH_STATE_DIR to a directory you can write",
                str(path),
            )
        ]
    if not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
        return [Finding("state", "error", f"{path} is not a writable directory; set HEARTH_STATE_DIR", str(path))]
    found = loose_write(path, "state", "the state directory")
    return found or [Finding("state", "ok", f"{path} is writable (mode {mode_of(path):04o})", str(path))]


def check_audit(settings: Settings) -> list[Finding]:
    path = settings.audit_path
    if not path.exists():
        return [Finding("audit", "info", f"no audit database yet at {path}; the first run creates it", str(path))]
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.Error as exc:
        return [Finding("audit", "error", f"cannot read the audit database {path}: {exc}", str(path))]
    if verdict != "ok":
        return [Finding("audit", "error", f"the audit database {path} is damaged: {verdict}", str(path))]
    return [Finding("audit", "ok", f"{path} reads and passes quick_check", str(path))]


def check_config_dir(settings: Settings) -> list[Finding]:
    path = settings.config_dir
    if not path.exists():
        return [
            Finding(
                "config",
                "info",
                f"no config directory at {path}: built-in profiles only, no prompts, "
                "no SOUL.md (set HEARTH_CONFIG_DIR)",
                str(path),
            )
        ]
    if not path.is_dir():
        return [Finding("config", "error", f"{path} is not a directory (HEARTH_CONFIG_DIR)", str(path))]
    found: list[Finding] = []
    for item in _config_tree(path):
        found += loose_write(item, "config", "config path")
    return found or [Finding("config", "ok", f"{path} and what it holds are writable only by their owner", str(path))]


def _config_tree(root: Path) -> list[Path]:
    """The config directory, its agents/ and prompts/ trees and SOUL.md: what shapes every prompt."""
    items = [root]
    for sub in (root / "agents", root / "prompts"):
        if sub.is_dir():
            items += [sub, *sorted(sub.rglob("*"))]
    return items + ([root / SOUL_FILE] if (root / SOUL_FILE).exists() else [])


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


# --- queue and credentials -------------------------------------------------------------------


def check_queue(settings: Settings) -> list[Finding]:
    path = settings.queue_dir
    if not path.exists():
        return [Finding("queue", "info", f"no queue directory yet at {path}", str(path))]
    if not path.is_dir():
        return [Finding("queue", "error", f"{path} is not a directory", str(path))]
    found: list[Finding] = []
    for item in [path, *sorted(p for p in path.iterdir() if p.is_dir())]:
        # its group writing is the design (the submitters, setgid 2770 on NixOS): only others matter
        found += [f for f in loose_write(item, "queue", "queue directory") if f.status == "error"]
    return found or [
        Finding("queue", "ok", f"{path} is not writable by every user (mode {mode_of(path):04o})", str(path))
    ]


def check_credentials(settings: Settings) -> list[Finding]:
    """The store (`credentials.json`, 0600), a `credentials/` directory if one exists (0700, files 0600),
    and systemd's $CREDENTIALS_DIRECTORY when set: by path and mode only, no value is read."""
    found = _systemd_credentials(settings.credentials_dir) if settings.credentials_dir else []
    store = settings.credentials_path
    if store.exists():
        found += _private(store, 0o600, "the credentials store") or [
            Finding("credentials", "ok", f"{store} is readable by its owner only (0600)", str(store))
        ]
    folder = settings.state_dir / "credentials"
    if folder.exists():
        loose = _private(folder, 0o700, "the credentials directory")
        for item in sorted(folder.rglob("*")):
            loose += _private(
                item, 0o700 if item.is_dir() else 0o600, "directory" if item.is_dir() else "credential file"
            )
        found += loose or [Finding("credentials", "ok", f"{folder} is 0700 and every file in it 0600", str(folder))]
    return found or [
        Finding("credentials", "info", f"no credentials store at {store} (hearth creds set makes one)", str(store))
    ]


def _systemd_credentials(path: Path) -> list[Finding]:
    ok = path.is_dir() and os.access(path, os.R_OK | os.X_OK)
    return [
        Finding(
            "credentials",
            "ok" if ok else "error",
            f"systemd credentials at {path}" + ("" if ok else " are not a readable directory"),
            str(path),
        )
    ]


def _private(path: Path, expected: int, what: str) -> list[Finding]:
    mode = stat.S_IMODE(path.lstat().st_mode)
    if path.is_symlink() or mode & 0o077:
        return [
            Finding(
                "credentials",
                "error",
                f"{what} {path} has mode {mode:04o}, expected {expected:04o}; run: chmod {expected:o} {path}",
                str(path),
            )
        ]
    return []


# --- the operator's leash: router, budgets, alerts, missions ---------------------------------


def check_leash(settings: Settings) -> list[Finding]:
    """router.toml, budget.toml, alerts.toml (and the credentials its URLs name), missions/*.toml."""
    from hearth.alerts import load_destinations
    from hearth.budget import load_budget
    from hearth.missions import load_missions
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
    missions, problems = load_missions(settings)
    found += [Finding("missions", "ok", f"mission {m.name}: {m.schedule}") for m in missions]
    found += [Finding("missions", "error", f"{p.line()}; skipped", str(p.path)) for p in problems]
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


# --- services --------------------------------------------------------------------------------


def check_ollama(host: str, models: dict[str, list[str]], probe: Callable[[str], list[str] | None]) -> list[Finding]:
    """`models`: model name -> the profiles that use it."""
    pulled = probe(host)
    if pulled is None:
        return [Finding("ollama", "error", f"cannot reach Ollama at {host}; is ollama.service running? (OLLAMA_HOST)")]
    found = [Finding("ollama", "ok", f"Ollama at {host} answers with {len(pulled)} model(s)")]
    for model, users in sorted(models.items()):
        if not any(has_model(model, p) for p in pulled):
            found.append(
                Finding(
                    "models",
                    "error",
                    f"model {model} (profiles: {', '.join(users)}) is not pulled; run: ollama pull {model}",
                )
            )
        else:
            found.append(Finding("models", "ok", f"model {model} is pulled (profiles: {', '.join(users)})"))
    return found


def has_model(wanted: str, pulled: str) -> bool:
    return pulled == wanted or (":" not in wanted and pulled == f"{wanted}:latest")


def check_sandbox(kind: str) -> list[Finding]:
    try:
        used = detect(kind)
    except SandboxUnavailable as exc:
        return [Finding("sandbox", "error", f"no command sandbox here ({exc}); run_command will refuse to run")]
    except ValueError as exc:
        return [Finding("sandbox", "error", f"HEARTH_SANDBOX: {exc}")]
    if used == "none":
        return [Finding("sandbox", "warn", "HEARTH_SANDBOX=none: commands run without an OS sandbox")]
    return [Finding("sandbox", "ok", f"commands run under {used}" + (" (asked: auto)" if kind == "auto" else ""))]


def check_git(which: Callable[[str], str | None]) -> list[Finding]:
    if which("git") is None:
        return [Finding("git", "warn", "git is not installed: runs get no workspace checkpoints")]
    return [Finding("git", "ok", "git is installed: workspaces get checkpoint commits")]


def check_systemd(pid1: str, systemctl: str = "systemctl") -> list[Finding]:
    if pid1 != "systemd":
        return [Finding("systemd", "info", f"systemd is not PID 1 (PID 1 is {pid1!r}): hearth units not checked")]
    try:
        proc = subprocess.run(
            [systemctl, "list-units", "hearth*", "--all", "--plain", "--no-legend", "--no-pager"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [Finding("systemd", "error", f"cannot ask systemd about hearth units: {exc}")]
    units = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    if not units:
        return [Finding("systemd", "warn", "no hearth units are loaded; is services.hearth enabled?")]
    failed = [u[0] for u in units if len(u) > 2 and u[2] == "failed"]
    if failed:
        return [
            Finding("systemd", "error", f"failed hearth units: {', '.join(failed)}; see: journalctl -u {failed[0]}")
        ]
    return [Finding("systemd", "ok", f"{len(units)} hearth unit(s) loaded, none failed")]


def pid1_name() -> str:
    try:
        return Path("/proc/1/comm").read_text().strip()
    except OSError:
        return "unknown"


# --- all together ----------------------------------------------------------------------------


def diagnose(
    settings: Settings,
    *,
    agent_name: str | None = None,
    probe: Callable[[str], list[str] | None],
    pid1: str | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> tuple[list[Finding], list[Profile]]:
    """Every finding, in the order an operator fixes things, and the profiles that loaded."""
    profile_findings, profiles = check_profiles(settings, agent_name)
    models: dict[str, list[str]] = {}
    for profile in profiles:
        models.setdefault(profile.model or settings.model, []).append(profile.name)
    findings = [
        *check_state_dir(settings),
        *check_audit(settings),
        *check_config_dir(settings),
        *profile_findings,
        *check_prompt_files(settings),
        *check_queue(settings),
        *check_credentials(settings),
        *check_leash(settings),
        *check_ollama(settings.ollama_host, models, probe),
        *check_sandbox(settings.sandbox),
        *check_git(which),
        *check_systemd(pid1 or pid1_name()),
    ]
    return findings, profiles
