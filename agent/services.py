"""What a run's tools may use besides their arguments, handed in by the appliance.

The workspace carries one of these (`Workspace.services`), so a tool stays a function of
(args, workspace) while the appliance decides the sandbox, the network and the stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent.sandbox import SandboxPolicy


@dataclass
class RunServices:
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    command_timeout_s: int = 60
    # the self-knowledge tools (agent/tools/selfknow.py): the config repository they may read and
    # write (None: they refuse), the Ollama server system_health probes, the host's root (tests
    # point it at a fake NixOS tree) and how long nix_check may take
    config_repo: Path | None = None
    ollama_host: str = ""
    host_root: Path = Path("/")
    nix_check_timeout_s: int = 600
