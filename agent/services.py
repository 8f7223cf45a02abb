"""What a run's tools may use besides their arguments, handed in by the appliance.

The workspace carries one of these (`Workspace.services`), so a tool stays a function of
(args, workspace) while the appliance decides the sandbox, the network and the stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.sandbox import SandboxPolicy


@dataclass
class RunServices:
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    command_timeout_s: int = 60
    auto_commands: tuple[str, ...] = ()  # command heads auto mode runs without asking (git, ls, pytest)
