"""What a run's tools may use besides their arguments, handed in by the appliance.

The workspace carries one of these (`Workspace.services`), so a tool stays a function of
(args, workspace) while the appliance decides the sandbox, the network and the stores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.redaction import no_redaction
from agent.sandbox import SandboxPolicy

if TYPE_CHECKING:
    from agent.knowledge import KnowledgeStore
    from agent.netguard import NetGuard


@dataclass
class RunServices:
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    command_timeout_s: int = 60
    # Knowledge, memory and the web (issue 4). None means: not available to this run.
    agent_name: str = "default"
    run_id: str = ""
    knowledge: KnowledgeStore | None = None
    net: NetGuard | None = None  # None: the default guard (public addresses only, system DNS)
    credentials: Callable[[str, str], str] | None = None  # (name, host) -> value, or CredentialRefused
    redact: Callable[[str], str] = no_redaction  # applied to every tool result by call_tool
    search_backend: Any = None  # an object with ddgs' `text(query, max_results=)`; None: ddgs itself
