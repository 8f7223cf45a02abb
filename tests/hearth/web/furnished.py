"""A command center's state with real data on every page, made once for the page tests that look at
them all (tests/hearth/web/test_accessibility.py): runs made by hearth's own commands against a
fake model (a marathon and its legs, a swarm, its children and synthesis, runs that failed, one
that waits for a person and one a person denied, with reasons), the alerts hearth sent and failed
to send, an eval, missions, budgets, a router, an MCP server, a worker of the fleet, a proposal and
the knowledge base; and sixty older runs, so the lists page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.knowledge.store import KnowledgeStore
from hearth.audit.evals import Item, record_eval, record_score
from hearth.audit.store import AuditStore, RunRecord
from hearth.evolve import Proposal, record_proposal
from hearth.remote import hub
from hearth.settings import Settings
from tests.alert_support import write_alerts_toml
from tests.conftest import run_cli
from tests.fake_ollama import final_answer, tool_call
from tests.mcp_servers.declare import declare
from tests.mcp_servers.support import served
from tests.web_support import free_port, seed_runs

LONG_COMMAND = (
    "du -sh /var/log/journal /var/cache/apt /home/ana/projects/hearth/.venv && "
    "find /home/ana/projects -name '*.log' -size +10M -mtime +30 -print"
)
WAITS = "Find what fills the disk: APPROVE-ME, and report the ten biggest directories under /var and /home."
DENIED = "Clean the build caches of every project under /home/ana/projects: APPROVE-ME and DENY-ME."
MISSION = """\
schedule = "*-*-* 06:00:00"
goal = "Summarise yesterday's runs and the failures among them, with the reason each failed"
agent = "default"
max_iterations = 5
"""
BUDGET = "daily = 2000000\n[per_agent]\ndefault = 500000\nnotes = 100000\n"
ROUTER = """\
default = "qwen2.5-coder"
fallbacks = ["llama3.2"]
[[rule]]
name = "tests"
model = "qwen2.5-coder:7b"
goal = "(?i)\\\\btests?\\\\b"
fallbacks = ["llama3.2:3b"]
escalate = true
"""


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """One fake model for every run here: it answers by who asks and how far the run has got."""
    system = body["messages"][0]["content"]
    first = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
    turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if system.startswith("You judge whether"):
        return final_answer(
            json.dumps({"done": False, "reason": "The notes are half written.", "next": "Finish them."})
        )
    if system.startswith("You split a goal"):
        return final_answer(json.dumps(["Review the parser module and list its bugs.", "Review the CLI module."]))
    if "APPROVE-ME" in first and turns == 0:
        return tool_call("run_command", {"command": LONG_COMMAND})
    if "leg " in first and turns == 0:
        return tool_call("write_file", {"path": "notes.md", "content": f"notes {len(first)}\n"})
    return final_answer("Reviewed what was asked; the details are in the workspace.")


def furnish(root: Path, ollama_url: str) -> dict[str, str]:
    """Every page's data in `root/state` and `root/config`; the environment that names them."""
    env = {
        "HEARTH_STATE_DIR": str(root / "state"),
        "HEARTH_CONFIG_DIR": str(root / "config"),
        "OLLAMA_HOST": ollama_url,
        "HEARTH_OLLAMA_BACKOFF_S": "0.01",
        "HEARTH_SUSPEND_AFTER_S": "0",
    }
    state, config = root / "state", root / "config"
    seed_runs(state, 60, steps=3)
    _config(config, root)
    _long_work(env)
    _approvals(env)
    _stored(state, Settings.from_env(env))
    return env


def _config(config: Path, root: Path) -> None:
    (config / "missions").mkdir(parents=True, exist_ok=True)
    (config / "missions" / "nightly.toml").write_text(MISSION)
    (config / "budget.toml").write_text(BUDGET)
    (config / "router.toml").write_text(ROUTER)
    nobody = f"json://127.0.0.1:{free_port()}/nobody-listens-here"
    write_alerts_toml(config, ("phone", nobody, ["failed", "budget_exceeded", "approval"]), ("desk", nobody, None))
    declare(config, description=served(root), extra='[tools.echo]\nrisk = "safe"\n')


def _long_work(env: dict[str, str]) -> None:
    cli = {**env, "HEARTH_SUSPEND_AFTER_S": "600"}
    assert run_cli(
        "hearth-loop", "--marathon", "2", "Write the release notes for 2.4 into notes.md", env=cli
    ).returncode
    swarm = ["enqueue", "Review the parser and the CLI modules for bugs", "--swarm", "2"]
    assert run_cli("hearth", *swarm, env=cli).returncode == 0
    assert run_cli("hearth", "spawn", "--local", "--concurrency", "3", env=cli).returncode == 0
    assert run_cli("hearth-loop", "--model", "qwen2.5-codr", "Tidy the notes", env=cli).returncode == 4
    assert run_cli("hearth", "alerts", "test", env=cli).returncode != 0  # nobody listens: recorded failed


def _approvals(env: dict[str, str]) -> None:
    for goal in (WAITS, DENIED):
        assert run_cli("hearth", "enqueue", goal, "--mode", "auto", env=env).returncode == 0
    assert run_cli("hearth", "spawn", "--local", env=env).returncode == 0
    pending = json.loads(run_cli("hearth", "approvals", "--json", env=env).stdout)
    [denied] = [a for a in pending if a["run_id"] == run_of(env, DENIED)]
    reason = "Not the caches of every project at once: start with the one that is biggest, and ask again."
    assert run_cli("hearth", "deny", denied["id"], "--reason", reason, env=env).returncode == 0
    assert run_cli("hearth", "spawn", "--local", env=env).returncode == 0


def run_of(env: dict[str, str], goal: str) -> str:
    listed = json.loads(run_cli("hearth", "runs", "--json", "--limit", "200", env=env).stdout)
    return str(next(r["id"] for r in listed if r["goal"] == goal))


def _stored(state: Path, settings: Settings) -> None:
    with KnowledgeStore(state / "knowledge.db") as store:
        store.add("Releases are cut on Tuesdays after the tests pass.", title="Release process", source="docs/r.md")
        store.remember("Run pytest before reporting success.", tags="tests")
    diff = "diff --git a/flake.nix b/flake.nix\n--- a/flake.nix\n+++ b/flake.nix\n@@ -1 +1 @@\n-old\n+new\n"
    record_proposal(
        settings, Proposal("evolve-1", "tidy flake", "/etc/nixos", "hearth/evolve-1", "abc123", "proposed", diff=diff)
    )
    with AuditStore(state / "audit.db") as audit:
        gpu1 = hub.identify(audit, "Bearer " + hub.add_worker(audit, "gpu1", ["gpu"], "test"))
        hub.heartbeat(audit, gpu1, ["qwen2.5-coder:7b"], [{"run_id": "seed-00001", "state": "thinking"}])
        _eval(audit)


def _eval(audit: AuditStore) -> None:
    """An eval of two cases on two models, scored as hearth scores one (its runs are in the runs list)."""
    eval_id = "ev-20261202T050000-abc123"
    cases, models = ("hello", "count"), ("qwen2.5-coder:7b", "llama3.1:8b")
    items = [
        Item(f"{eval_id}-{n:03d}", c, m, 1, {}, {})
        for n, (c, m) in enumerate(((c, m) for c in cases for m in models), 1)
    ]
    row = {"id": eval_id, "suite": "chores", "created_at": "2026-12-02T05:00:00.000Z", "requested_by": "cli:ana"}
    record_eval(audit, {**row, "models": list(models), "repeat": 1, "trigger": "cli"}, items)
    for item in items:
        passed = item.model == models[0]
        audit.start_run(
            RunRecord(item.run_id, "default", item.model, f"the {item.case_name} chore", "bypass", source="eval")
        )
        audit.finish_run(item.run_id, status="done" if passed else "iteration_limit", iterations=2, tokens_in=120)
        checks = [{"check": "files", "passed": passed, "detail": "hello.txt is there" if passed else "no hello.txt"}]
        facts = {"iterations": 2, "tokens": 120, "model_ms": 300, "wall_ms": 900, "approvals": 0}
        record_score(audit, item.run_id, passed, checks, facts)
    audit.conn.execute("update eval_runs set status = 'done', pass_rate = 0.5 where id = ?", [eval_id])
