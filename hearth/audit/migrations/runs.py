"""Runs, their steps and their conversation: the run's row as it grew (links, allowances, routing,
long work, think), its full-text index, the indexes the lists read by.

Part of the list in hearth/audit/migrations/__init__.py. Never edit a shipped migration: its
name is recorded in each audit.db's `_migrations` as applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


# the columns of `runs` as m001 made them (later migrations add more)
_M001_RUNS: dict[str, type] = {
    "id": str,
    "agent_name": str,
    "model": str,
    "goal": str,
    "mode": str,
    "source": str,
    "requested_by": str,
    "workspace": str,
    "sandbox": str,
    "status": str,
    "started_at": str,
    "ended_at": str,
    "iterations": int,
    "tokens_in": int,
    "tokens_out": int,
    "latency_ms": int,
    "duration_ms": int,
    "error": str,
    "summary": str,
}


# the columns of `steps` as m001 made them
_M001_STEPS: dict[str, type] = {
    "id": int,
    "run_id": str,
    "seq": int,
    "at": str,
    "kind": str,
    "iteration": int,
    "tool": str,
    "arguments": str,
    "output": str,
    "ok": int,
    "duration_ms": int,
    "verdict": str,
    "tokens_in": int,
    "tokens_out": int,
    "detail": str,
}


def m001_runs_and_steps(db: sqlite_utils.Database) -> None:
    db.table("runs").create(_M001_RUNS, pk="id")
    db.table("runs").create_index(["started_at"])
    db.table("runs").create_index(["status"])
    db.table("steps").create(_M001_STEPS, pk="id", foreign_keys=[("run_id", "runs", "id")])
    db.table("steps").create_index(["run_id", "seq"], unique=True)


def m051_step_data(db: sqlite_utils.Database) -> None:
    """Structured details of a step as JSON (a compaction's sizes, a context file's flags)."""
    db.table("steps").add_column("data", str)


def m052_run_links(db: sqlite_utils.Database) -> None:
    """Runs made from other runs: `parent_run` names the run this one continues or belongs to, and
    `link` says how (follow-up, leg, child, synthesis, escalation, fallback; see RUN_LINKS)."""
    db.table("runs").add_column("parent_run", str)
    db.table("runs").add_column("link", str)
    db.table("runs").create_index(["parent_run"])


def m070_step_called_as(db: sqlite_utils.Database) -> None:
    """The tool name as the model wrote it, when the loop repaired it (case, separators, a prefix)."""
    db.table("steps").add_column("called_as", str)


def m071_run_allowances(db: sqlite_utils.Database) -> None:
    """What a run was allowed, as it started: network, egress, credentials and their hosts, tools,
    limits, and the hearth that ran it (the sandbox kind is the m001 column `sandbox`)."""
    runs = db.table("runs")
    for column, kind in (
        ("network", int),
        ("egress", str),  # JSON list of host patterns; [] means any public host
        ("credentials", str),  # JSON object: name -> the host patterns it is bound to
        ("allowed_tools", str),  # JSON list, or null for every tool
        ("max_iterations", int),
        ("timeout_s", float),
        ("num_ctx", int),
        ("hearth_version", str),
    ):
        runs.add_column(column, kind)


def m090_run_routing_and_labels(db: sqlite_utils.Database) -> None:
    """The operator's label of a run (the command center's `name`), the model it asked for
    (`auto` when the router chose) and why the chosen one was used (a rule's name, `default`,
    `fallback`, `escalation`, `tag`); and steps by time, for the day's token spend (hearth/leash/budget.py)."""
    db.table("runs").add_column("label", str)
    db.table("runs").add_column("model_requested", str)
    db.table("runs").add_column("model_reason", str)
    db.table("steps").create_index(["at"])


def m100_long_work(db: sqlite_utils.Database) -> None:
    """Long work (hearth/run/long/followup.py, marathon.py, swarm.py): `kind` says a run is a marathon or
    a swarm (empty for a plain run, a leg, a child); `prompt` keeps, as JSON, the placeholder values
    a run's system prompt was frozen with and its sha256, so a follow-up renders the same bytes."""
    db.table("runs").add_column("kind", str)
    db.table("runs").add_column("prompt", str)
    db.table("runs").create_index(["kind"])


def m110_runs_search(db: sqlite_utils.Database) -> None:
    """`hearth runs --search`: a full-text index over each run's goal and summary, kept by triggers
    (a run's row is written by several processes, and the triggers keep every writer honest)."""
    db.execute("create virtual table runs_fts using fts5(goal, summary, content='runs', content_rowid='rowid')")
    db.execute(
        "create trigger runs_fts_insert after insert on runs begin "
        "insert into runs_fts(rowid, goal, summary) values (new.rowid, new.goal, new.summary); end"
    )
    db.execute(
        "create trigger runs_fts_update after update of goal, summary on runs begin "
        "insert into runs_fts(runs_fts, rowid, goal, summary) values ('delete', old.rowid, old.goal, old.summary); "
        "insert into runs_fts(rowid, goal, summary) values (new.rowid, new.goal, new.summary); end"
    )
    db.execute(
        "create trigger runs_fts_delete after delete on runs begin "
        "insert into runs_fts(runs_fts, rowid, goal, summary) values ('delete', old.rowid, old.goal, old.summary); end"
    )
    db.execute("insert into runs_fts(runs_fts) values ('rebuild')")


def m120_conversation(db: sqlite_utils.Database) -> None:
    """What a run's model has read, message by message, so a new process can go on with it
    (a run resumed after it waited for a person, or after a restart: hearth/run/resume.py).

    `generation` counts compactions (each writes the whole new history once); `seq` orders a
    generation's messages; `worked_ms` is the time the run had worked when the message was kept.
    A started step keeps the key its run chose for it (`opens`), so a later process closes it."""
    db.table("conversation").create(
        {
            "run_id": str,
            "generation": int,
            "seq": int,
            "iteration": int,
            "message": str,
            "worked_ms": int,
            "at": str,
        },
        pk=("run_id", "generation", "seq"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("steps").add_column("opens", str)


def m140_run_think_and_extract(db: sqlite_utils.Database) -> None:
    """What the model was asked to do besides the chat (issue 25): `think`, Ollama's option as
    sent ("true", "false", "low", "medium", "high"; null: not sent), and `web_extract`, whether
    web_fetch answered through the no-tools extractor (1) or gave the enveloped page (0)."""
    runs = db.table("runs")
    runs.add_column("think", str)
    runs.add_column("web_extract", int)


def m150_run_lists_indexed(db: sqlite_utils.Database) -> None:
    """A run page's "continued by" list, filtered and ordered by one index (on its own, the
    planner of a big audit preferred scanning runs by time over the parent index), and the runs
    list's agent choices read from an index like the other filters' (hearth/web/reader.py)."""
    db.table("runs").create_index(["parent_run", "started_at"], if_not_exists=True)
    db.table("runs").create_index(["agent_name"], if_not_exists=True)


def m158_runs_by_requester(db: sqlite_utils.Database) -> None:
    """A mission's last runs (requested_by `mission:NAME`, the missions page) read by index."""
    db.table("runs").create_index(["requested_by", "started_at"], if_not_exists=True)


def m190_run_model_host(db: sqlite_utils.Database) -> None:
    """The Ollama hosts that answered a run's turns, in the order it first used them (`gpu1,gpu2`
    after a switch), when it had several to choose from (hearth/run/hosts.py); each turn's host is
    also on its `model` step's data."""
    db.table("runs").add_column("model_host", str)
