"""Each role's contract (docs/roles.md): its home a real, writable directory; its record's
frontmatter valid (last_strategic_review empty or a time); its inbox and prompts readable text.
Nothing is made or changed: a home or file not made yet is made from its template at the role's
next run, which an info line says."""

from __future__ import annotations

import os
from pathlib import Path

from hearth.doctor.finding import Finding
from hearth.errors import ConfigError
from hearth.roles.home import HEARTBEAT_PROMPT, INBOX, RECORD, REVIEW_PROMPT, home_of, read_markdown, read_record
from hearth.roles.switch import off_reason
from hearth.run.profiles import Profile
from hearth.settings import Settings

CHECK = "role"


def check_roles(settings: Settings, profiles: list[Profile]) -> list[Finding]:
    """One or more findings per role among the profiles that loaded."""
    findings: list[Finding] = []
    for profile in profiles:
        if profile.home:
            findings += _role(settings, profile)
    return findings


def _role(settings: Settings, profile: Profile) -> list[Finding]:
    name, home = profile.name, home_of(settings, profile.name)
    if home.is_symlink() or (home.exists() and not home.is_dir()):
        return [
            Finding(CHECK, "error", f"role {name}: its home {home} is not a real directory; move it away", str(home))
        ]
    if not home.exists():
        return [
            Finding(CHECK, "info", f"role {name}: no home yet; its first run makes {home} from templates", str(home))
        ]
    if not os.access(home, os.W_OK | os.X_OK):
        return [Finding(CHECK, "error", f"role {name}: its home {home} is not writable by this user", str(home))]
    problems = [line for line in (_file(home, name, relative) for relative in _FILES) if line]
    found = [Finding(CHECK, "error", line, str(home)) for line in problems]
    off = off_reason(settings, name, profile.enabled)
    state = (
        f"switched off: {off}" if off else (f"heartbeat {profile.heartbeat}" if profile.heartbeat else "no heartbeat")
    )
    return found or [Finding(CHECK, "ok", f"role {name}: home {home}, record and inbox read; {state}", str(home))]


_FILES = (RECORD, INBOX, HEARTBEAT_PROMPT, REVIEW_PROMPT)


def _file(home: Path, name: str, relative: str) -> str:
    """The one-line problem of one file of the home ("" when it is fine or not made yet)."""
    path = home / relative
    if not path.exists():
        return ""  # made from its template at the role's next run
    try:
        if relative == RECORD:
            read_record(home)
        else:
            read_markdown(path, front_required=False)
    except ConfigError as exc:
        return f"role {name}: {exc}"
    return ""
