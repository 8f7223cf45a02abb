"""What a run's tools may use besides their arguments, handed in by the appliance.

The workspace carries one of these (`Workspace.services`), so a tool stays a function of
(args, workspace) while the appliance decides the sandbox, the network and the stores.

On the safety floor, beside the workspace that carries it: it names no module of agent/net/ or
agent/knowledge/ (both sit above). The knowledge base and the network guard it holds are typed
where they are taken out: `run_store` (agent/knowledge/store.py), `run_guard` (agent/net/guard.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agent.context.envelope import Envelope
from agent.safety.redaction import no_redaction
from agent.safety.sandbox import ProxyPort, SandboxPolicy


class Closable(Protocol):
    """The run's knowledge base as the services hold it (an agent.knowledge.store.KnowledgeStore):
    opened on first use by `run_store`, closed by the appliance when the run ends."""

    def close(self) -> None: ...


@dataclass
class RunServices:
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    command_timeout_s: int = 60
    # the walls the appliance raised for the run's commands (hearth/run/walls.py): the proxy that is
    # their only network (when granted), and the CPU seconds all of them may use (None: no budget)
    command_proxy: ProxyPort | None = None
    command_cpu_s: float | None = None
    command_cpu_used_s: float = 0.0
    protected: tuple[str, ...] = ()  # paths file tools never write (hearth's checkpoint histories)
    deadline: float | None = None  # time.monotonic() at which the run's time limit ends (None: none)
    auto_commands: tuple[str, ...] = ()  # command heads auto mode runs without asking (git, ls, pytest)
    # the config-repository and system tools (agent/tools/config_repo.py, system.py): the repository they may read and
    # write (None: they refuse), the Ollama server system_health probes, the host's root (tests
    # point it at a fake NixOS tree) and how long nix_check may take
    config_repo: Path | None = None
    model_host: str = ""
    host_root: Path = Path("/")
    nix_check_timeout_s: int = 600
    # Knowledge, memory and the web (issue 4). None means: not available to this run.
    agent_name: str = "default"
    run_id: str = ""
    knowledge: Closable | None = None
    knowledge_path: Path | None = None  # opened there on first use when `knowledge` is not given
    # semantic recall (agent/knowledge/semantic.py): an Embedder and its model (None: by text only),
    # the fusion weights (an agent.knowledge.semantic.Fusion; None: its defaults), and who hears,
    # once, why search went lexical (the appliance records it as the run's `recall` step)
    embedder: Any = None
    embed_model: str = "nomic-embed-text"
    recall_fusion: Any = None
    on_lexical: Callable[[str], None] | None = None
    net: object | None = None  # a NetGuard, read through agent.net.guard.run_guard; None: the default guard
    credentials: Callable[[str, str], str] | None = None  # (name, host) -> value, or CredentialRefused
    redact: Callable[[str], str] = no_redaction  # applied to every tool result by call_tool
    search_backend: Any = None  # an object with ddgs' `text(query, max_results=)`; None: ddgs itself
    # what the run's tools keep between calls: how many times a capped tool ran (kb_add, remember),
    # and the sha256 of each config file as the run last read or wrote it (write_self_config)
    counts: dict[str, int] = field(default_factory=dict)
    config_seen: dict[str, str] = field(default_factory=dict)
    # more tools the appliance gives this run besides hearth's own: the approved tools of MCP servers
    # (hearth/mcp/offer.py), each an agent.tools.registry.Tool that the gate shows and runs as its own
    # (typed where the gate takes them out: agent/tools/gate.py's `tools_of`)
    tools: tuple[Any, ...] = ()
    # what came from outside reaches the model in this run's envelope (agent/context/envelope.py);
    # with `extract` (agent/context/extractor.py: url, question, page -> answer) web_fetch hands
    # the page to a no-tools model call and the agent reads only its answer
    envelope: Envelope = field(default_factory=Envelope)
    extract: Callable[[str, str, str], str] | None = None
    # (goal, profile, directory) -> the child run's summary (agent/tools/delegate.py); the appliance
    # gives it only to a run that can suspend while its child works (hearth/run/delegate.py)
    delegate: Callable[[str, str, str], str] | None = None
    # the skills this run is offered (agent/tools/skills.py): its read-only copy, a folder per skill
    # (None: none, and load_skill is not shown)
    skills: Path | None = None
