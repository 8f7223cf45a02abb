"""A request a command built from its flags, queued as `hearth continue` and `hearth research` queue
theirs: refused in one line (a UsageError, exit 2), submitted as the person at the terminal (the
one check every door asks: hearth/users/launch.py), its id printed (`{id, path}` with --json)."""

from __future__ import annotations

import getpass
import json
from typing import TYPE_CHECKING, Any

from hearth.dispatch.launchers import heal
from hearth.errors import UsageError
from hearth.settings import Settings

if TYPE_CHECKING:
    from hearth.queue.submit import Submitted


def queue_request(obj: dict[str, Any], settings: Settings, *, as_json: bool) -> Submitted:
    """`obj` checked as a version 1 request and queued; what was submitted."""
    from hearth.queue.intake import RequestRefused, build_request
    from hearth.users.access import login_user
    from hearth.users.launch import submit_as

    try:
        request = build_request(obj, file_id=None).request
    except RequestRefused as exc:
        raise UsageError(f"invalid request: {exc}") from None
    submitted = submit_as(request, settings, login_user(settings), requested_by=getpass.getuser(), heal=heal)
    print(json.dumps({"id": submitted.id, "path": str(submitted.path)}) if as_json else submitted.id, flush=True)
    return submitted
