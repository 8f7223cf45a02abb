"""What admission asks of a role (hearth/run/admission.py): its run works in its home, and a role
that is switched off runs nothing. A request naming a profile that is not a role is left as it is."""

from __future__ import annotations

from dataclasses import replace

from hearth.errors import UsageError
from hearth.roles.home import home_of, prepare_home
from hearth.roles.switch import off_reason
from hearth.run.goal import GoalRequest, RunPlan
from hearth.run.profiles import SETTINGS_FILE, Profile
from hearth.settings import Settings


def as_role(request: GoalRequest, profile: Profile, settings: Settings) -> GoalRequest:
    """The request as its role runs it, in the role's home; UsageError (the run is recorded
    rejected with it) for a role switched off, or a heartbeat of a profile that is not a role."""
    if not profile.home:
        if request.heartbeat:
            raise UsageError(
                f"agent profile {profile.name!r} is not a role, so it has no heartbeat; "
                f"add home = true to its {SETTINGS_FILE}"
            )
        return request
    check_on(profile, settings)
    return replace(request, workspace=home_of(settings, profile.name))


def check_on(profile: Profile, settings: Settings) -> None:
    """UsageError, with the reason, when the profile is a role switched off."""
    off = off_reason(settings, profile.name, profile.enabled) if profile.home else ""
    if off:
        raise UsageError(f"{off}; its requests are refused while it is off")


def role_home(plan: RunPlan, settings: Settings) -> list[str]:
    """A role's home made ready for its run: the files made now from their templates."""
    if not plan.role:
        return []
    return prepare_home(settings, plan.role)[1]
