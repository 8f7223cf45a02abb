"""What the appliance hands one run's tools: the knowledge store, the network guard, credentials.

Built once per run from settings and the run's plan, closed when the run ends. The redactor is
filled with every credential value hearth could hand out before the run starts, so a value that
reaches an output by any path (a reflecting server, a file, an error) is redacted everywhere.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agent.net.guard import NetGuard, NetRefused, Record
from agent.safety.redaction import Redactor, SecretFinder
from agent.safety.sandbox import SandboxPolicy
from agent.services import RunServices
from agent.tools.mcp.names import SEPARATOR
from agent.tools.websearch import SearchEndpoint
from hearth.credentials import CredentialStore, RunCredentials
from hearth.errors import UsageError
from hearth.knowledge import embedder_for, fusion_for
from hearth.mcp.config import mcp_dir
from hearth.roles.entity_tools import role_tools
from hearth.run.goal import RunPlan
from hearth.run.recorder import Recorder
from hearth.settings import Settings
from hearth.skills.offer import exposed

if TYPE_CHECKING:
    from hearth.mcp.offer import Offered

ServicesHook = Callable[[RunServices], None]


def credential_store(settings: Settings) -> CredentialStore:
    return CredentialStore(settings.credentials_path, settings.credentials_dir)


def load_redactor(settings: Settings) -> Redactor:
    return Redactor(credential_store(settings).values())


def check_egress(patterns: Sequence[str]) -> None:
    try:
        NetGuard(egress=tuple(patterns))
    except NetRefused as exc:
        raise UsageError(f"bad egress entry: {exc}") from None


@contextlib.contextmanager
def run_services(
    plan: RunPlan,
    run_id: str,
    settings: Settings,
    sandbox: SandboxPolicy,
    redactor: Redactor,
    record: Record | None = None,
) -> Iterator[RunServices]:
    """The run's services; the knowledge store, if the run opened it, is closed when the block ends,
    and the MCP servers the run started (hearth/mcp/offer.py) are stopped.

    `record` keeps the network guard's and the credentials' decisions in the run's audit."""
    services, guard = _services(plan, run_id, settings, sandbox, redactor, record)
    # asked when a server starts: by then the run's walls (cgroup, decoy home) are up
    offered = mcp_tools(plan, settings, lambda: services.sandbox, record, guard)
    services.tools = (tuple(offered.tools) if offered else ()) + role_tools(plan.role, settings.config_dir)
    try:
        yield services
    finally:
        if offered:
            offered.close()
        if services.knowledge is not None:
            services.knowledge.close()


def _services(
    plan: RunPlan,
    run_id: str,
    settings: Settings,
    sandbox: SandboxPolicy,
    redactor: Redactor,
    record: Record | None,
) -> tuple[RunServices, NetGuard]:
    """The run's services before its MCP tools (credentials, knowledge, search), and its network guard."""
    store = credential_store(settings)
    guard = NetGuard(
        egress=plan.egress,
        private_hosts=frozenset(settings.net_private_hosts),
        secrets=SecretFinder(store.bindings()),
        record=record,
    )
    services = RunServices(
        sandbox=sandbox,
        agent_name=plan.agent_name,
        run_id=run_id,
        knowledge_path=settings.knowledge_path,
        net=guard,
        credentials=RunCredentials(store, plan.credentials, redactor, record),
        redact=redactor,
        config_repo=Path(plan.config_repo) if plan.config_repo else None,
        model_host=settings.model_host,
        auto_commands=settings.auto_commands,
        protected=(str(settings.checkpoints_dir),),
        embedder=embedder_for(settings),
        embed_model=settings.embed_model,
        recall_fusion=fusion_for(settings),
        search_backend=search_endpoint(settings, guard),
        skills=Path(exposed(settings, run_id)[0]) if exposed(settings, run_id) else None,
    )
    return services, guard


def search_endpoint(settings: Settings, guard: NetGuard) -> SearchEndpoint | None:
    """The operator's search endpoint (HEARTH_SEARCH_URL), asked through the run's guard; None: ddgs."""
    return SearchEndpoint(settings.search_url, guard) if settings.search_url else None


def mcp_tools(
    plan: RunPlan,
    settings: Settings,
    sandbox: SandboxPolicy | Callable[[], SandboxPolicy],
    record: Record | None,
    guard: NetGuard,
) -> Offered | None:
    """The approved tools of the declared MCP servers, when the run may have any (every tool, or a
    manifest naming a `<server>__<tool>`); their servers run in the sandbox, in the run's workspace,
    an http one is reached through the run's network guard (a test's hook may still adjust it).
    None when no server is declared: then MCP's code (its SDK, the command proxy) is never loaded."""
    if not (plan.every_tool or any(SEPARATOR in name for name in plan.allowed_tools)):
        return None
    if not _declared(settings):
        return None
    from hearth.mcp.offer import offer

    return offer(settings, plan.workspace, sandbox, record, plan.run_id, guard)


def _declared(settings: Settings) -> bool:
    try:
        return any(p.suffix == ".toml" for p in mcp_dir(settings.config_dir).iterdir())
    except FileNotFoundError:
        return False
    except OSError:
        return True  # unreadable: offer() says why, once, in the run's record


def recall_preface(services: RunServices, goal: str, settings: Settings, recorder: Recorder) -> str:
    """The auto-recall preface for the first user message; recorded as a step when there is one,
    with what it holds (ids, scores, ways). Why search went lexical, if it did (now or in a later
    kb_search or recall), is recorded once, as a `recall` step of its own."""
    services.on_lexical = lambda why: recorder.note(
        "recall", verdict="lexical", detail=f"searching by text only: {why}; see: hearth doctor"
    )
    if settings.recall_chars <= 0 or not (services.knowledge or settings.knowledge_path.exists()):
        return ""  # nothing was ever stored: nothing to recall, and no file to create
    from agent.knowledge.recall import recall_for  # a knowledge base exists: only then is its code loaded
    from agent.knowledge.store import run_store

    store = run_store(services)
    if store is None:
        return ""
    recalled = recall_for(store, goal, services.agent_name, settings.recall_chars, wrap=services.envelope.wrap)
    preface = services.redact(recalled.text)
    if preface:
        detail = f"{len(preface)} characters recalled into the first message"
        recorder.note("recall", output=preface, detail=detail, arguments={"items": recalled.items})
    return preface
