"""What the appliance hands one run's tools: the knowledge store, the network guard, credentials.

Built once per run from settings and the request, closed when the run ends. The redactor is
filled with every credential value hearth could hand out before the run starts, so a value that
reaches an output by any path (a reflecting server, a file, an error) is redacted everywhere.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from agent.net.guard import NetGuard, NetRefused, Record
from agent.safety.redaction import Redactor, SecretFinder
from agent.safety.sandbox import SandboxPolicy
from agent.services import RunServices
from hearth.credentials import CredentialStore, RunCredentials
from hearth.errors import UsageError
from hearth.run.goal import GoalRequest
from hearth.run.recorder import Recorder
from hearth.settings import Settings

ServicesHook = Callable[[RunServices], None]


def credential_store(settings: Settings) -> CredentialStore:
    return CredentialStore(settings.credentials_path, settings.credentials_dir)


def load_redactor(settings: Settings) -> Redactor:
    return Redactor(credential_store(settings).values())


def check_egress(patterns: list[str]) -> None:
    try:
        NetGuard(egress=tuple(patterns))
    except NetRefused as exc:
        raise UsageError(f"bad egress entry: {exc}") from None


@contextlib.contextmanager
def run_services(
    request: GoalRequest,
    run_id: str,
    settings: Settings,
    sandbox: SandboxPolicy,
    redactor: Redactor,
    record: Record | None = None,
) -> Iterator[RunServices]:
    """The run's services; the knowledge store, if the run opened it, is closed when the block ends.

    `record` keeps the network guard's and the credentials' decisions in the run's audit."""
    store = credential_store(settings)
    services = RunServices(
        sandbox=sandbox,
        agent_name=request.agent_name,
        run_id=run_id,
        knowledge_path=settings.knowledge_path,
        net=NetGuard(
            egress=tuple(request.egress),
            private_hosts=frozenset(settings.net_private_hosts),
            secrets=SecretFinder(store.bindings()),
            record=record,
        ),
        credentials=RunCredentials(store, request.credentials, redactor, record),
        redact=redactor,
        config_repo=request.config_repo,
        ollama_host=settings.ollama_host,
        auto_commands=settings.auto_commands,
        protected=(str(settings.checkpoints_dir),),
    )
    try:
        yield services
    finally:
        if services.knowledge is not None:
            services.knowledge.close()


def recall_preface(services: RunServices, goal: str, settings: Settings, recorder: Recorder) -> str:
    """The auto-recall preface for the first user message; recorded as a step when there is one."""
    if settings.recall_chars <= 0 or not (services.knowledge or settings.knowledge_path.exists()):
        return ""  # nothing was ever stored: nothing to recall, and no file to create
    from agent.knowledge.recall import recall_context  # a knowledge base exists: only then is its code loaded
    from agent.knowledge.store import run_store

    store = run_store(services)
    if store is None:
        return ""

    preface = services.redact(recall_context(store, goal, services.agent_name, settings.recall_chars))
    if preface:
        recorder.note("recall", output=preface, detail=f"{len(preface)} characters recalled into the first message")
    return preface
