"""Imported once by the fork server of local runs (`hearth spawn --local`, `hearth watch`).

Each local run is a fork of that server, so per-process setup done here is done once instead of
once per run: the command sandbox probe (it runs bwrap), the model client's lazily imported HTTP
stack and its TLS context, the UTF-8 decoder requests are read with. Nothing here touches the
network or the state directory.
"""

from __future__ import annotations

import codecs

from agent.model.backends import client_for
from agent.safety.sandbox import SandboxUnavailable, detect
from hearth.errors import ConfigError
from hearth.settings import Settings


def warm() -> None:
    try:
        detect(Settings.from_env().sandbox)
    except (SandboxUnavailable, ConfigError, ValueError):
        pass  # each run meets the same problem and records it itself
    client_for("127.0.0.1:1", "warm-up").close()  # builds the client (both backends' code); sends nothing
    codecs.lookup("utf-8")


warm()
