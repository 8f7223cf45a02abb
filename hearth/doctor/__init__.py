"""`hearth doctor`: is this machine ready to run agents? Each finding is ok, info, warn or error.

An error is what makes runs fail or unsafe: an unusable state directory, a world-writable config
or queue, a broken profile or prompt file, an unknown placeholder, Ollama unreachable or no model
pulled that a profile's runs could use, no command sandbox, a credentials store others can read, a failed
hearth unit, a prompt that does not fit the window. A warning works but deserves a look (a
profile's model not pulled, whose runs take another: the line says which, and the name likely
meant). Models are resolved as runs resolve them (`qwen2.5-coder` is pulled as `:7b`). Info
says what was not checked and why. Only paths and modes are inspected for the queue and the
credentials store; nothing is created or changed.

finding.py   Finding (one check's verdict) and the counts of each status
files.py     the state directory, the audit, the config tree, the queue, the credentials store
config.py    profiles, prompt files and their placeholders, router, budget, alerts, missions
host.py      Ollama and its models, the command sandbox, whether nobody reaches hearth's venv,
             git, systemd's hearth units
roles.py     each role's contract: its home, record, inbox and prompts
entities.py  the entity types' file, and each role's records: ids, required fields, declared files
mcp.py       the declared MCP servers: their files, and drift of the tools approved
recall.py    semantic recall: the embedding model pulled, sqlite-vec loadable, the vectors current

This module runs them all, in the order an operator fixes things (`diagnose`); `hearth doctor`
(hearth/cli/commands/doctor.py) prints them and sets the exit code.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable

from hearth.doctor.config import check_leash, check_profiles, check_prompt_files
from hearth.doctor.entities import check_entities
from hearth.doctor.files import check_audit, check_config_dir, check_credentials, check_queue, check_state_dir
from hearth.doctor.finding import Finding
from hearth.doctor.host import (
    check_cgroups,
    check_git,
    check_ollama,
    check_reach,
    check_sandbox,
    check_systemd,
    hearth_places,
    pid1_name,
)
from hearth.doctor.hosts import check_hosts, named_hosts
from hearth.doctor.mcp import check_mcp
from hearth.doctor.recall import check_recall
from hearth.doctor.roles import check_roles
from hearth.errors import HearthError
from hearth.run.profiles import Profile
from hearth.settings import Settings


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
    default = _default_model(settings)
    for profile in profiles:
        models.setdefault(profile.model or default, []).append(profile.name)
    findings = [
        *check_state_dir(settings),
        *check_audit(settings),
        *check_config_dir(settings),
        *profile_findings,
        *check_roles(settings, profiles),
        *check_entities(settings, profiles),
        *check_prompt_files(settings),
        *check_queue(settings),
        *check_credentials(settings),
        *check_leash(settings),
        *check_mcp(settings),
        *(check_hosts(settings, models) if named_hosts(settings) else check_ollama(settings.model_host, models, probe)),
        *check_recall(settings, probe),
        *check_sandbox(settings.sandbox),
        *check_reach(hearth_places(sys.prefix if sys.prefix != sys.base_prefix else "", settings.sandbox_expose)),
        *check_git(which),
        *check_systemd(pid1 or pid1_name()),
        *check_cgroups(),
    ]
    return findings, profiles


def _default_model(settings: Settings) -> str:
    """The model of a run that names none, when no rule picks one: router.toml's default, else
    HEARTH_MODEL (a broken router.toml is check_leash's to report; runs then ignore it too)."""
    from hearth.run.router import load_router

    try:
        return load_router(settings.config_dir).default or settings.model
    except HearthError:
        return settings.model
