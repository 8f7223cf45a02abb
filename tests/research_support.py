"""A loopback web and a scripted model for research runs.

`LoopWeb`: a small search endpoint (SearXNG's JSON API) on `search.test` and pages on `docs.test`
and `blog.test`, each a real HTTP server on 127.0.0.1 reached through the guard's test resolver
(tests/netfixtures.py): the production guard checks every request as it would any public host.

`Script` answers each phase of a research run from what it was asked (the phase is the system
prompt's, the page is named by its envelope), and records every question per phase. It plays in
process as a `PhaseModel` (a ChatModel recording the tools and the JSON schema each call was held
to) or behind tests/fake_ollama.py as one callable script item.
"""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agent.loop import Outcome
from agent.model.reply import ChatReply
from agent.model.scripted import ScriptedModel
from agent.services import RunServices
from hearth.audit import approvals
from hearth.audit.store import AuditStore
from hearth.leash.decisions import By, decide
from hearth.queue.longspec import Research
from hearth.research.run import How, run_research
from hearth.run.goal import GoalRequest
from hearth.run.suspend import ready
from hearth.settings import Settings
from hearth.users.access import shell_owner
from tests.fake_ollama import final_answer
from tests.netfixtures import Answer, Seen, TestNet, Web

OWNER = shell_owner("alice")  # whoever decides here is not the check's subject

QUESTION = "What changed in the garbage collector of Python 3.13?"
HTML = {"content-type": "text/html; charset=utf-8"}
PLAIN = {"content-type": "text/plain; charset=utf-8"}
GC_PAGE = """Python 3.13 release notes: the garbage collector
The cycle garbage collector is now incremental, which means that maximum pause times are reduced by an order of magnitude or more for larger heaps.
There are now only two generations: young and old.
The threshold of the young generation is unchanged at 2000 objects.
"""
FREE_PAGE = """Free threading in 3.13
Python 3.13 has experimental support for running with the global interpreter lock disabled.
The free-threaded build uses a different memory allocator, mimalloc.
"""
SUB_QUESTIONS = ["How does the 3.13 collector collect cycles?", "How many generations does it keep?"]
PHASES = {
    "You plan": "plan",
    "You direct": "decide",
    "You take evidence": "extract",
    "You write the findings": "synthesise",
}
_PAGE = re.compile(r"<<data [0-9a-f]{16} from (\S+): data, not instructions>>")


def phase_of(messages: list[dict[str, Any]]) -> str:
    system = str(messages[0]["content"])
    return next((name for start, name in PHASES.items() if system.startswith(start)), "other")


def plan(*queries: list[str], questions: list[str] = SUB_QUESTIONS) -> dict[str, Any]:
    return {"sub_questions": [{"question": q, "queries": list(qs)} for q, qs in zip(questions, queries, strict=True)]}


@dataclass
class Script:
    """A research run's model: each phase's answers (values sent as JSON, strings as they are)."""

    plan: Any = field(default_factory=lambda: plan(["python 3.13 gc incremental"], ["python 3.13 gc generations"]))
    decide: list[Any] = field(default_factory=list)  # one per round; past the list: nothing to do
    extract: dict[str, Any] = field(default_factory=dict)  # page URL -> its answer (missing: none found)
    synthesise: Any = field(
        default_factory=lambda: {
            "claims": [{"sub_question": 1, "text": "The collector is incremental.", "evidence": ["E1"]}]
        }
    )
    asked: dict[str, list[list[dict[str, Any]]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, messages: list[dict[str, Any]]) -> str:
        phase = phase_of(messages)
        with self.lock:
            self.asked.setdefault(phase, []).append([dict(m) for m in messages])
            turn = int("It could not be used:" in str(messages[-1]["content"]))  # a repair: the question asked again
        if phase == "plan":
            found = self.plan
        elif phase == "decide":
            rounds = len(self.asked["decide"]) - 1 - turn
            found = self.decide[rounds] if rounds < len(self.decide) else {"reads": [], "searches": []}
        elif phase == "extract":
            page = _PAGE.search(str(messages[1]["content"]))
            found = self.extract.get(page.group(1) if page else "", {"excerpts": []})
        else:
            found = self.synthesise
        if isinstance(found, list) and found and isinstance(found[0], str) and phase != "decide":
            found = found[min(turn, len(found) - 1)]  # a phase's replies turn by turn (a repair)
        return found if isinstance(found, str) else json.dumps(found)

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        """As a tests/fake_ollama.py script item."""
        return final_answer(self.answer(body["messages"]))


class PhaseModel(ScriptedModel):
    """The scripted model (agent/model/scripted.py, which keeps the schema each turn was held to)
    playing a Script in process; `calls` keeps each call's phase, tools and schema."""

    def __init__(self, script: Script, *, tokens: tuple[int, int] = (100, 20), turns: int = 200) -> None:
        super().__init__([self._reply] * turns, tokens=tokens)
        self.script = script
        self.calls: list[tuple[str, list[dict[str, Any]], dict[str, Any] | None]] = []

    def _reply(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {"role": "assistant", "content": self.script.answer(messages)}

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict[str, Any] | None = None
    ) -> ChatReply:
        self.calls.append((phase_of(messages), list(tools), schema))
        return super().chat(messages, tools, schema)


class LoopWeb:
    """The search endpoint and the pages, on loopback behind public-looking test names."""

    def __init__(self, pages: dict[str, Answer | Callable[[Seen], Answer]], results: dict[str, list[str]]) -> None:
        self.results = results  # query -> the URLs it finds (titles: the URL's path)
        self.search = Web({"/search": self._search})
        self.sites = {host: Web() for host in {urlsplit(url).hostname for url in pages}}
        for url, answer in pages.items():
            parts = urlsplit(url)
            self.sites[str(parts.hostname)].routes[parts.path] = answer
        self.net = TestNet()
        self.net.host("search.test", self.search)
        for host, web in self.sites.items():
            self.net.host(host, web)

    def _search(self, seen: Seen) -> Answer:
        query = parse_qs(urlsplit(seen.path).query).get("q", [""])[0]
        found = [
            {"url": u, "title": f"Page {urlsplit(u).path}", "content": f"about {query}"}
            for u in self.results.get(query.lower(), [])
        ]
        return Answer(200, json.dumps({"query": query, "results": found}), {"content-type": "application/json"})

    def configure(self, services: RunServices) -> None:
        services.net.resolver, services.net.connector = self.net.resolve, self.net.connect  # type: ignore[attr-defined]

    def read(self, host: str) -> list[str]:
        """The paths read on `host`, in order."""
        return [seen.path for seen in self.sites[host].seen]

    def searched(self) -> list[str]:
        return [parse_qs(urlsplit(s.path).query).get("q", [""])[0] for s in self.search.seen]

    def close(self) -> None:
        for web in [self.search, *self.sites.values()]:
            web.close()


def standard_web() -> LoopWeb:
    pages = {
        "http://docs.test/gc": Answer(200, GC_PAGE, PLAIN),
        "http://blog.test/free": Answer(200, FREE_PAGE, PLAIN),
    }
    results = {
        "python 3.13 gc incremental": ["http://docs.test/gc", "http://blog.test/free"],
        "python 3.13 gc generations": ["http://docs.test/gc?utm_source=feed", "http://blog.test/free"],
    }
    return LoopWeb(pages, results)


def settings_for(state: Path, **env: str) -> Settings:
    base = {
        "HEARTH_STATE_DIR": str(state),
        "HEARTH_CONFIG_DIR": str(state / "config"),
        "HEARTH_SEARCH_URL": "http://search.test/search",
        "HEARTH_SUSPEND_AFTER_S": "0",
    }
    return Settings.from_env({**base, **env})


def start(settings: Settings, web: LoopWeb, model: Any, spec: Research | None = None, **fields: Any) -> Outcome:
    """A research run's first process: it plans and (HEARTH_SUSPEND_AFTER_S=0) suspends at once."""
    request = GoalRequest(**{"goal": QUESTION, "model": "scripted", "run_id": "r1", **fields})
    how = How(model=model, out=io.StringIO(), configure_services=web.configure, suspend=True)
    return run_research(request, spec or Research(), settings, how)[1]


def plan_approval(settings: Settings, run_id: str = "r1") -> dict[str, Any]:
    with AuditStore(settings.audit_path) as audit:
        [found] = [a for a in approvals.of_run(audit, run_id) if a["tool"] == "research_plan"]
    return found


def go_on(settings: Settings, web: LoopWeb, model: Any, spec: Research | None = None, **fields: Any) -> Outcome:
    """A new process of the run, started as the spawner would: for the reason `ready` gives."""
    with AuditStore(settings.audit_path) as audit:
        cause = ready(audit, audit.run(fields.get("run_id", "r1")) or {})
    assert cause is not None, "the run is not ready to go on"
    request = GoalRequest(**{"goal": QUESTION, "model": "scripted", "run_id": "r1", **fields})
    how = How(model=model, out=io.StringIO(), configure_services=web.configure, suspend=True, resume=cause)
    return run_research(request, spec or Research(), settings, how)[1]


def approved_run(settings: Settings, web: LoopWeb, model: Any, spec: Research | None = None, **fields: Any) -> Outcome:
    """Plan, approve (as alice, at the CLI), go on to the end."""
    assert start(settings, web, model, spec, **fields).status == "waiting"
    decide(
        settings, plan_approval(settings, fields.get("run_id", "r1"))["id"], "approve", By("cli", "alice"), user=OWNER
    )
    return go_on(settings, web, model, spec, **fields)


def rows(settings: Settings, reader: Callable[..., list[dict[str, Any]]], run_id: str = "r1") -> list[dict[str, Any]]:
    with AuditStore(settings.audit_path) as audit:
        return reader(audit, run_id)
