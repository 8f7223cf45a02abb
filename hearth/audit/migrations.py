"""Migrations of audit.db: a list of small functions, applied once each, in order.

Never edit a shipped migration; add a new one at the end. Their names are recorded in
`_migrations`, so a rename re-runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def m001_runs_and_steps(db: sqlite_utils.Database) -> None:
    db.table("runs").create(
        {
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
        },
        pk="id",
    )
    db.table("runs").create_index(["started_at"])
    db.table("runs").create_index(["status"])
    db.table("steps").create(
        {
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
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("steps").create_index(["run_id", "seq"], unique=True)


def m010_approvals(db: sqlite_utils.Database) -> None:
    """One row per approval asked: the exact call (its hash binds the decision to it) and the verdict."""
    db.table("approvals").create(
        {
            "id": str,
            "run_id": str,
            "tool": str,
            "arguments": str,
            "call_hash": str,
            "reason": str,
            "via": str,
            "status": str,
            "requested_at": str,
            "expires_at": str,
            "timeout_s": float,
            "decided_at": str,
            "decided_by": str,
            "note": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("approvals").create_index(["status"])
    db.table("approvals").create_index(["run_id"])


def m030_queue_requests(db: sqlite_utils.Database) -> None:
    """Every request accepted from the queue, body included: the file is removed once it ran."""
    db.table("requests").create(
        {
            "id": str,
            "shape": str,
            "file": str,
            "size": int,
            "sha256": str,
            "source": str,
            "requested_by": str,
            "created_at": str,
            "claimed_at": str,
            "body": str,
        },
        pk="id",
    )
    db.table("runs").create_index(["source"])
    db.table("runs").create_index(["model"])


def m031_queue_rejections(db: sqlite_utils.Database) -> None:
    """A file the queue refused: what it was and why; its run row has status `rejected`."""
    db.table("rejections").create(
        {
            "id": int,
            "run_id": str,
            "at": str,
            "file": str,
            "request_id": str,
            "size": int,
            "sha256": str,
            "reason": str,
            "kept_as": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("rejections").create_index(["at"])


def m040_proposals(db: sqlite_utils.Database) -> None:
    """Self-evolution proposals (hearth/evolve.py): one row per `hearth evolve`, keyed by its run id."""
    db.table("proposals").create(
        {
            "id": str,
            "goal": str,
            "repo": str,
            "branch": str,
            "base_commit": str,
            "status": str,
            "run_status": str,
            "head_commit": str,
            "check_passed": int,
            "check_log": str,
            "diff": str,
            "diffstat": str,
            "security_flag": int,
            "security_reasons": str,
            "created_at": str,
        },
        pk="id",
    )
    db.table("proposals").create_index(["created_at"])


def m050_checkpoints(db: sqlite_utils.Database) -> None:
    """Workspace checkpoints (hearth/run/checkpoints.py): one row per phase of a run, commit or not."""
    db.table("checkpoints").create(
        {
            "id": int,
            "run_id": str,
            "at": str,
            "phase": str,
            "status": str,
            "commit_sha": str,
            "tag": str,
            "files": int,
            "detail": str,
            "workspace": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("checkpoints").create_index(["run_id"])


def m051_step_data(db: sqlite_utils.Database) -> None:
    """Structured details of a step as JSON (a compaction's sizes, a context file's flags)."""
    db.table("steps").add_column("data", str)


def m052_run_links(db: sqlite_utils.Database) -> None:
    """Runs made from other runs: `parent_run` names the run this one continues or belongs to, and
    `link` says how (follow-up, leg, child, synthesis, escalation, fallback; see RUN_LINKS)."""
    db.table("runs").add_column("parent_run", str)
    db.table("runs").add_column("link", str)
    db.table("runs").create_index(["parent_run"])


def m060_connections(db: sqlite_utils.Database) -> None:
    """Every connection a command made through the run's proxy (agent/net/cmdproxy.py), allowed or not."""
    db.table("connections").create(
        {
            "id": int,
            "run_id": str,
            "at": str,
            "host": str,
            "port": int,
            "method": str,
            "allowed": int,
            "reason": str,
            "bytes_up": int,
            "bytes_down": int,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("connections").create_index(["run_id"])


def m061_tripwires(db: sqlite_utils.Database) -> None:
    """What touched which decoy secret and how (hearth/run/walls.py), and what the run did about it."""
    db.table("tripwires").create(
        {"id": int, "run_id": str, "at": str, "decoy": str, "how": str, "tool": str, "action": str},
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("tripwires").create_index(["run_id"])


def m062_checkpoint_git_dir(db: sqlite_utils.Database) -> None:
    """Where a checkpoint's history lives when it is hearth's own git directory, not the workspace's."""
    db.table("checkpoints").add_column("git_dir", str)


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


def m100_long_work(db: sqlite_utils.Database) -> None:
    """Long work (hearth/run/long/followup.py, marathon.py, swarm.py): `kind` says a run is a marathon or
    a swarm (empty for a plain run, a leg, a child); `prompt` keeps, as JSON, the placeholder values
    a run's system prompt was frozen with and its sha256, so a follow-up renders the same bytes."""
    db.table("runs").add_column("kind", str)
    db.table("runs").add_column("prompt", str)
    db.table("runs").create_index(["kind"])


def m090_run_routing_and_labels(db: sqlite_utils.Database) -> None:
    """The operator's label of a run (the command center's `name`), the model it asked for
    (`auto` when the router chose) and why the chosen one was used (a rule's name, `default`,
    `fallback`, `escalation`, `tag`); and steps by time, for the day's token spend (hearth/leash/budget.py)."""
    db.table("runs").add_column("label", str)
    db.table("runs").add_column("model_requested", str)
    db.table("runs").add_column("model_reason", str)
    db.table("steps").create_index(["at"])


def m091_alerts(db: sqlite_utils.Database) -> None:
    """Every alert hearth tried to send (hearth/leash/alerts.py): to which destination, for what, and
    whether it was sent or failed with the error."""
    db.table("alerts").create(
        {
            "id": int,
            "at": str,
            "event": str,
            "run_id": str,
            "destination": str,
            "status": str,
            "attempts": int,
            "error": str,
            "title": str,
            "body": str,
        },
        pk="id",
    )
    db.table("alerts").create_index(["at"])


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


def m121_standing_rules(db: sqlite_utils.Database) -> None:
    """Standing approvals (hearth/leash/rules.py): a profile's tool, and for a command its one simple
    command (the head and the argument words as JSON), who made it from which approval and when;
    a removed rule keeps its row, with who removed it and when."""
    db.table("standing_rules").create(
        {
            "id": str,
            "profile": str,
            "tool": str,
            "head": str,
            "arguments": str,
            "made_by": str,
            "made_at": str,
            "approval_id": str,
            "removed_by": str,
            "removed_at": str,
        },
        pk="id",
    )
    db.table("standing_rules").create_index(["profile", "tool"])


def m122_alert_actions(db: sqlite_utils.Database) -> None:
    """Each signed alert link that decided an approval (hearth/leash/actions.py): the SHA-256 of the
    token (never the token: it was a capability), its approval and decision, when and by whom it was
    used. A token whose digest is here is refused: a link decides once.

    `alert_reminders` claims each reminder of a waiting approval (`after`: still undecided after the
    reminder interval; `before`: shortly before it expires) before it is sent, so two sweeps in two
    processes send it once; what was sent is in `alerts` as any alert."""
    db.table("alert_actions").create(
        {"digest": str, "approval_id": str, "decision": str, "used_at": str, "used_by": str},
        pk="digest",
    )
    db.table("alert_reminders").create({"approval_id": str, "kind": str, "at": str}, pk=("approval_id", "kind"))


def m130_mcp_pins(db: sqlite_utils.Database) -> None:
    """The MCP tools an operator approved (hearth/mcp/pins.py): per server and tool, the SHA-256 of
    its name, description and input schema as approved, that description and schema, who and when.
    Approving again replaces the row."""
    db.table("mcp_pins").create(
        {
            "server": str,
            "tool": str,
            "sha256": str,
            "description": str,
            "schema": str,
            "approved_by": str,
            "approved_at": str,
        },
        pk=("server", "tool"),
    )


def m140_run_think_and_extract(db: sqlite_utils.Database) -> None:
    """What the model was asked to do besides the chat (issue 25): `think`, Ollama's option as
    sent ("true", "false", "low", "medium", "high"; null: not sent), and `web_extract`, whether
    web_fetch answered through the no-tools extractor (1) or gave the enveloped page (0)."""
    runs = db.table("runs")
    runs.add_column("think", str)
    runs.add_column("web_extract", int)


def m155_operator_actions(db: sqlite_utils.Database) -> None:
    """What an operator changed or tried to change from the command center's operator pages
    (hearth/web/routes/): budgets, missions, alerts' test sends, proposals' decisions. `ok` 0 is a
    refused change, with the one-line reason in `detail`; `subject` names what it was about."""
    db.table("operator_actions").create(
        {"id": int, "at": str, "by": str, "area": str, "action": str, "subject": str, "ok": int, "detail": str},
        pk="id",
    )
    db.table("operator_actions").create_index(["at"])


def m156_security_indexes(db: sqlite_utils.Database) -> None:
    """The security page's reads across runs (hearth/web/routes/security.py): denied calls and
    credential uses, each a partial index holding only those steps, so it costs nothing per other
    step and the page reads no full table; connections and tripwires by time."""
    db.execute("create index if not exists idx_steps_denied on steps(id) where verdict = 'denied'")
    db.execute("create index if not exists idx_steps_credential on steps(id) where kind = 'credential'")
    db.table("connections").create_index(["at"], if_not_exists=True)
    db.table("tripwires").create_index(["at"], if_not_exists=True)


def m157_proposal_decisions(db: sqlite_utils.Database) -> None:
    """A person's decision on a self-evolution proposal (hearth/web/routes/decisions.py): accepted
    (to apply by hand: hearth never applies one) or rejected, by whom, when and why; one per proposal."""
    db.table("proposal_decisions").create(
        {"proposal_id": str, "decision": str, "decided_by": str, "decided_at": str, "reason": str},
        pk="proposal_id",
    )


def m158_runs_by_requester(db: sqlite_utils.Database) -> None:
    """A mission's last runs (requested_by `mission:NAME`, the missions page) read by index."""
    db.table("runs").create_index(["requested_by", "started_at"], if_not_exists=True)


def m190_run_model_host(db: sqlite_utils.Database) -> None:
    """The Ollama hosts that answered a run's turns, in the order it first used them (`gpu1,gpu2`
    after a switch), when it had several to choose from (hearth/run/hosts.py); each turn's host is
    also on its `model` step's data."""
    db.table("runs").add_column("model_host", str)


def m180_evals(db: sqlite_utils.Database) -> None:
    """Evaluations (hearth/eval/): `eval_runs` holds one row per `hearth eval run` (its suite, the
    models, repeats, who asked, why: the CLI or a mission's regression watch, with the
    configuration's fingerprint it ran under and the pass-rate drop that alerts), `eval_results` one
    row per case, model and repeat, keyed by the ordinary audited run that did it (`runs.id`, whose
    `requested_by` is `eval:EVAL_ID`), with each check's outcome once the run is scored."""
    db.table("eval_runs").create(
        {
            "id": str,
            "suite": str,
            "created_at": str,
            "requested_by": str,
            "models": str,
            "repeat": int,
            "trigger": str,
            "fingerprint": str,
            "alert_drop": float,
            "status": str,
            "finished_at": str,
            "pass_rate": float,
        },
        pk="id",
    )
    db.table("eval_runs").create_index(["suite", "created_at"])
    db.table("eval_results").create(
        {
            "run_id": str,
            "eval_id": str,
            "case_name": str,
            "model": str,
            "repeat": int,
            "start": str,
            "spec": str,
            "passed": int,
            "checks": str,
            "iterations": int,
            "tokens": int,
            "model_ms": int,
            "wall_ms": int,
            "approvals": int,
            "scored_at": str,
        },
        pk="run_id",
        foreign_keys=[("eval_id", "eval_runs", "id")],
    )
    db.table("eval_results").create_index(["eval_id"])


def m160_api_keys(db: sqlite_utils.Database) -> None:
    """The keys of hearth's OpenAI-compatible door (hearth/doors/keys.py): per name, the SHA-256 of the
    key (never the key: it is printed once), the profiles it may use (JSON, empty: any), its daily
    token budget and its requests per minute (0: no limit), who made it and when."""
    db.table("api_keys").create(
        {
            "name": str,
            "digest": str,
            "agents": str,
            "budget_tokens": int,
            "rate_per_min": int,
            "created_at": str,
            "created_by": str,
        },
        pk="name",
    )
    db.table("api_keys").create_index(["digest"], unique=True)


def m161_api_calls(db: sqlite_utils.Database) -> None:
    """Each call a key made that queued a run: when, the run, and the conversation it belongs to (a
    client's next turn continues the conversation's latest run). The rate limit counts these rows."""
    db.table("api_calls").create(
        {"id": int, "key": str, "at": str, "run_id": str, "conversation": str},
        pk="id",
    )
    db.table("api_calls").create_index(["key", "at"])
    db.table("api_calls").create_index(["key", "conversation"])


def m150_run_lists_indexed(db: sqlite_utils.Database) -> None:
    """A run page's "continued by" list, filtered and ordered by one index (on its own, the
    planner of a big audit preferred scanning runs by time over the parent index), and the runs
    list's agent choices read from an index like the other filters' (hearth/web/reader.py)."""
    db.table("runs").create_index(["parent_run", "started_at"], if_not_exists=True)
    db.table("runs").create_index(["agent_name"], if_not_exists=True)


# -- m200: the report's and /metrics' rollups ---------------------------------------------------
# Written here in full (not imported), as a shipped migration must not change when other code does.
_DAY = "substr(coalesce({r}.started_at, ''), 1, 10)"  # the day a run started, as the rollups key it
_RUN_KEY = (
    _DAY + ", coalesce({r}.status, ''), coalesce({r}.model, ''), "
    "coalesce({r}.agent_name, ''), coalesce({r}.source, ''), coalesce({r}.model_reason, ''), "
    "coalesce({r}.sandbox, ''), coalesce({r}.kind, ''), coalesce({r}.link, '')"
)
_RUN_DIMS = "day, status, model, agent_name, source, model_reason, sandbox, kind, link"
# a duration rounded up to two significant figures (1234 ms -> 1300): a day's durations fold into
# a few rows, and every bound of /metrics' histogram (1 s, 5 s ... 3600 s) stays exact
CEIL2_SQL = (
    "case when {v} < 100 then {v} "
    + " ".join(f"when {{v}} < {10 ** (k + 2)} then (({{v}} + {10**k - 1}) / {10**k}) * {10**k}" for k in range(1, 10))
    + " else {v} end"
)
ERROR_KEY_SQL = "substr(ltrim(coalesce({r}.error, ''), ' ' || char(9, 10, 11, 12, 13)), 1, 400)"
_TOOL_KEY = "coalesce({s}.tool, ''), coalesce({s}.verdict, ''), coalesce({s}.ok, -1)"


def _run_rollup_sql(r: str, sign: str) -> list[str]:
    """The statements that add (sign "+") or take away ("-") one run row, `r` being new or old."""
    key = _RUN_KEY.format(r=r)
    day, status = _DAY.format(r=r), f"coalesce({r}.status, '')"
    duration = CEIL2_SQL.format(v=f"cast({r}.duration_ms as integer)")
    return [
        f"""insert into run_rollup ({_RUN_DIMS}, runs, tokens_in, tokens_out, duration_ms)
            values ({key}, {sign}1, {sign}coalesce({r}.tokens_in, 0), {sign}coalesce({r}.tokens_out, 0),
                    {sign}coalesce({r}.duration_ms, 0))
            on conflict ({_RUN_DIMS}) do update set runs = runs + excluded.runs,
                tokens_in = tokens_in + excluded.tokens_in, tokens_out = tokens_out + excluded.tokens_out,
                duration_ms = duration_ms + excluded.duration_ms""",
        f"""insert into run_value_rollup (day, status, measure, value, runs)
            select {day}, {status}, 'duration_ms', {duration}, {sign}1 where {r}.duration_ms is not null
            on conflict (day, status, measure, value) do update set runs = runs + excluded.runs""",
        f"""insert into run_value_rollup (day, status, measure, value, runs)
            select {day}, {status}, 'iterations', {r}.iterations, {sign}1 where {r}.iterations is not null
            on conflict (day, status, measure, value) do update set runs = runs + excluded.runs""",
        f"""insert into run_error_rollup (day, status, error, runs)
            select {day}, {status}, {ERROR_KEY_SQL.format(r=r)}, {sign}1
            where coalesce({r}.status, '') not in ('running', 'done')
            on conflict (day, status, error) do update set runs = runs + excluded.runs""",
    ]


def _tool_rollup_sql(s: str, sign: str) -> str:
    day = f"coalesce((select {_DAY.format(r='runs')} from runs where id = {s}.run_id), '')"
    return f"""insert into tool_rollup (day, tool, verdict, ok, calls)
               select {day}, {_TOOL_KEY.format(s=s)}, {sign}1 where {s}.kind = 'tool'
               on conflict (day, tool, verdict, ok) do update set calls = calls + excluded.calls"""


_EMPTIED = (
    "delete from run_rollup where runs = 0; delete from run_value_rollup where runs = 0; "
    "delete from run_error_rollup where runs = 0;"
)


def m200_rollups(db: sqlite_utils.Database) -> None:
    """What the report and /metrics count, kept per day as the runs and their tool steps are
    written: `run_rollup` (runs and tokens by day and the columns they are counted by),
    `run_value_rollup` (each finished measure's values: iterations exactly, durations rounded up to
    two significant figures), `run_error_rollup` (a failed or rejected run's error, its first 400
    characters) and `tool_rollup` (tool calls by the day their run started, verdict and ok). Triggers
    keep them, so every writer (a run, settle, the queue, a replay) counts alike and a report over
    a month reads a month of rows, not its runs (hearth/audit/rollups.py reads them)."""
    db.execute(
        f"""create table if not exists run_rollup (day text not null, status text not null, model text not null,
            agent_name text not null, source text not null, model_reason text not null, sandbox text not null,
            kind text not null, link text not null, runs integer not null, tokens_in integer not null,
            tokens_out integer not null, duration_ms integer not null, primary key ({_RUN_DIMS})) without rowid"""
    )
    db.execute(
        """create table if not exists run_value_rollup (day text not null, status text not null,
            measure text not null, value integer not null, runs integer not null,
            primary key (day, status, measure, value)) without rowid"""
    )
    db.execute(
        """create table if not exists run_error_rollup (day text not null, status text not null,
            error text not null, runs integer not null, primary key (day, status, error)) without rowid"""
    )
    db.execute(
        """create table if not exists tool_rollup (day text not null, tool text not null, verdict text not null,
            ok integer not null, calls integer not null, primary key (day, tool, verdict, ok)) without rowid"""
    )
    columns = (
        "started_at, status, model, agent_name, source, model_reason, sandbox, kind, link, "
        "tokens_in, tokens_out, duration_ms, iterations, error"
    )
    add, take = ";\n".join(_run_rollup_sql("new", "+")), ";\n".join(_run_rollup_sql("old", "-"))
    db.execute(f"create trigger if not exists runs_rollup_insert after insert on runs begin {add}; end")
    db.execute(
        f"create trigger if not exists runs_rollup_update after update of {columns} on runs "
        f"begin {take}; {add}; {_EMPTIED} end"
    )
    db.execute(f"create trigger if not exists runs_rollup_delete after delete on runs begin {take}; {_EMPTIED} end")
    tool_add, tool_take = _tool_rollup_sql("new", "+"), _tool_rollup_sql("old", "-")
    db.execute(f"create trigger if not exists steps_rollup_insert after insert on steps begin {tool_add}; end")
    db.execute(
        "create trigger if not exists steps_rollup_update after update of kind, tool, verdict, ok on steps "
        f"begin {tool_take}; {tool_add}; delete from tool_rollup where calls = 0; end"
    )
    db.execute(
        "create trigger if not exists steps_rollup_delete after delete on steps "
        f"begin {tool_take}; delete from tool_rollup where calls = 0; end"
    )
    # what was written before: counted once, as the triggers would have
    duration = CEIL2_SQL.format(v="cast(r.duration_ms as integer)")
    day, status = _DAY.format(r="r"), "coalesce(r.status, '')"
    db.execute(
        f"""insert into run_rollup ({_RUN_DIMS}, runs, tokens_in, tokens_out, duration_ms)
            select {_RUN_KEY.format(r="r")}, count(*), coalesce(sum(r.tokens_in), 0), coalesce(sum(r.tokens_out), 0),
                   coalesce(sum(r.duration_ms), 0)
            from runs r group by 1, 2, 3, 4, 5, 6, 7, 8, 9"""
    )
    for measure, value in (("duration_ms", duration), ("iterations", "r.iterations")):
        db.execute(
            f"""insert into run_value_rollup (day, status, measure, value, runs)
                select {day}, {status}, '{measure}', {value}, count(*) from runs r
                where r.{measure} is not null group by 1, 2, 4"""
        )
    db.execute(
        f"""insert into run_error_rollup (day, status, error, runs)
            select {day}, {status}, {ERROR_KEY_SQL.format(r="r")}, count(*) from runs r
            where coalesce(r.status, '') not in ('running', 'done') group by 1, 2, 3"""
    )
    db.execute(
        f"""insert into tool_rollup (day, tool, verdict, ok, calls)
            select {day}, {_TOOL_KEY.format(s="s")}, count(*)
            from steps s left join runs r on r.id = s.run_id where s.kind = 'tool' group by 1, 2, 3, 4"""
    )
    # a call still `started` (waiting, running or never run) is read live by /metrics: few rows
    db.execute("create index if not exists idx_steps_started on steps(id) where verdict = 'started'")


def m201_fleet(db: sqlite_utils.Database) -> None:
    """Runs on other boxes (hearth/fleet/): `fleet_workers` one row per worker the hub knows (the
    SHA-256 of its token, never the token; its labels; what its last heartbeat said: the models its
    Ollama hosts have, the runs it holds, when), `fleet_runs` one row per request sent to Celery
    (its queue, the worker that claimed it, a stop asked of it and the status it ends with,
    redeliveries refused), and
    `fleet_events` the id of every event a worker sent that the hub wrote (a repeat is ignored), its
    kind and its lag (written here against its stamp on the worker, for bench/fleet.py and /metrics),
    `fleet_door` since when the hub's /fleet door has been up, and when it last said so.
    `runs.worker` names the worker a run ran on (null: this box)."""
    db.table("runs").add_column("worker", str)
    db.table("fleet_workers").create(
        {
            "name": str,
            "digest": str,
            "labels": str,
            "models": str,
            "running": str,
            "seen_at": float,
            "created_at": str,
            "created_by": str,
        },
        pk="name",
    )
    db.table("fleet_workers").create_index(["digest"], unique=True)
    db.table("fleet_runs").create(
        {
            "run_id": str,
            "queue": str,
            "model": str,
            "label": str,
            "sent_at": float,
            "worker": str,
            "claimed_at": float,
            "stop_by": str,
            "stop_status": str,
            "refused": int,
            "lost": str,
        },
        pk="run_id",
        defaults={"refused": 0},
    )
    db.table("fleet_events").create(
        {"id": str, "run_id": str, "worker": str, "at": float, "kind": str, "lag_ms": float}, pk="id"
    )
    db.table("fleet_door").create({"id": int, "up_since": float, "alive_at": float}, pk="id")


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    m001_runs_and_steps,
    m010_approvals,
    m030_queue_requests,
    m031_queue_rejections,
    m040_proposals,
    m050_checkpoints,
    m051_step_data,
    m052_run_links,
    m060_connections,
    m061_tripwires,
    m062_checkpoint_git_dir,
    m070_step_called_as,
    m071_run_allowances,
    m090_run_routing_and_labels,
    m091_alerts,
    m100_long_work,
    m110_runs_search,
    m120_conversation,
    m121_standing_rules,
    m122_alert_actions,
    m130_mcp_pins,
    m140_run_think_and_extract,
    m150_run_lists_indexed,
    m155_operator_actions,
    m156_security_indexes,
    m157_proposal_decisions,
    m158_runs_by_requester,
    m160_api_keys,
    m161_api_calls,
    m180_evals,
    m190_run_model_host,
    m200_rollups,
    m201_fleet,
]
