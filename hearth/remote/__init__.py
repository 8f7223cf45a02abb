"""Runs on other machines, whichever engine put them there: how each reports back to its hub.

A launcher whose runs execute elsewhere (hearth/dispatch/launchers/: the `Remote` Protocol) says
that its runs report through `DOOR`, and the hub's command center mounts it. Every engine shares
what is here; only how a request reaches the other machine, and how that machine's process is
stopped and asked after, is the launcher's own:

    hub.py      the hub's side, on its audit: the names and tokens of the machines that run its
                requests (`hearth fleet add NAME`), a run's claim (the first one wins, a second
                is refused: never run twice), heartbeats, and `accept`, which writes a batch of
                a run's events through the hub's own recorder, each once
    door.py     `/fleet` on the hub's `hearth serve`: the HTTP face of hub.py, a token per call
    client.py   the other machine's calls to the door
    outbox.py   the other machine's outbox: each event of its run on its disk until the hub has
                written it (`RemoteRecorder`, `Sender`)
    job.py      one request run on this machine and reported to the hub: what a job engine's
                task runs (a Nomad dispatch, a Kubernetes Job; docs/fleet.md), and what the
                test launcher (tests/remote_launcher.py) runs in a subprocess

The Celery launcher and `hearth worker` (hearth/fleet/) are one engine over these: a worker keeps
a warm `hearth watch` and one outbox for all its runs, where a job is one run in one process.
"""

from __future__ import annotations

import re

DOOR = "/fleet"  # the path of the hub's door on its command center (hearth/remote/door.py's routes)
NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")  # a machine's name at the hub, and each label
