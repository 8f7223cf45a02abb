-- An audit.db as hearth made it up to m201_fleet, when every migration was in one file: its
-- schema in the order SQLite holds it, the migrations it records, and one run with a step.
-- tests/hearth/audit/test_migrations.py opens it as today's hearth would.
CREATE TABLE _migrations (name text primary key, applied_at text);
CREATE TABLE "runs" (
   "id" TEXT PRIMARY KEY,
   "agent_name" TEXT,
   "model" TEXT,
   "goal" TEXT,
   "mode" TEXT,
   "source" TEXT,
   "requested_by" TEXT,
   "workspace" TEXT,
   "sandbox" TEXT,
   "status" TEXT,
   "started_at" TEXT,
   "ended_at" TEXT,
   "iterations" INTEGER,
   "tokens_in" INTEGER,
   "tokens_out" INTEGER,
   "latency_ms" INTEGER,
   "duration_ms" INTEGER,
   "error" TEXT,
   "summary" TEXT
, "parent_run" TEXT, "link" TEXT, "network" INTEGER, "egress" TEXT, "credentials" TEXT, "allowed_tools" TEXT, "max_iterations" INTEGER, "timeout_s" REAL, "num_ctx" INTEGER, "hearth_version" TEXT, "label" TEXT, "model_requested" TEXT, "model_reason" TEXT, "kind" TEXT, "prompt" TEXT, "think" TEXT, "web_extract" INTEGER, "model_host" TEXT, "worker" TEXT);
CREATE INDEX "idx_runs_started_at"
    ON "runs" ("started_at");
CREATE INDEX "idx_runs_status"
    ON "runs" ("status");
CREATE TABLE "steps" (
   "id" INTEGER PRIMARY KEY,
   "run_id" TEXT REFERENCES "runs"("id"),
   "seq" INTEGER,
   "at" TEXT,
   "kind" TEXT,
   "iteration" INTEGER,
   "tool" TEXT,
   "arguments" TEXT,
   "output" TEXT,
   "ok" INTEGER,
   "duration_ms" INTEGER,
   "verdict" TEXT,
   "tokens_in" INTEGER,
   "tokens_out" INTEGER,
   "detail" TEXT
, "data" TEXT, "called_as" TEXT, "opens" TEXT);
CREATE UNIQUE INDEX "idx_steps_run_id_seq"
    ON "steps" ("run_id", "seq");
CREATE TABLE "approvals" (
   "id" TEXT PRIMARY KEY,
   "run_id" TEXT REFERENCES "runs"("id"),
   "tool" TEXT,
   "arguments" TEXT,
   "call_hash" TEXT,
   "reason" TEXT,
   "via" TEXT,
   "status" TEXT,
   "requested_at" TEXT,
   "expires_at" TEXT,
   "timeout_s" REAL,
   "decided_at" TEXT,
   "decided_by" TEXT,
   "note" TEXT
);
CREATE INDEX "idx_approvals_status"
    ON "approvals" ("status");
CREATE INDEX "idx_approvals_run_id"
    ON "approvals" ("run_id");
CREATE TABLE "requests" (
   "id" TEXT PRIMARY KEY,
   "shape" TEXT,
   "file" TEXT,
   "size" INTEGER,
   "sha256" TEXT,
   "source" TEXT,
   "requested_by" TEXT,
   "created_at" TEXT,
   "claimed_at" TEXT,
   "body" TEXT
);
CREATE INDEX "idx_runs_source"
    ON "runs" ("source");
CREATE INDEX "idx_runs_model"
    ON "runs" ("model");
CREATE TABLE "rejections" (
   "id" INTEGER PRIMARY KEY,
   "run_id" TEXT REFERENCES "runs"("id"),
   "at" TEXT,
   "file" TEXT,
   "request_id" TEXT,
   "size" INTEGER,
   "sha256" TEXT,
   "reason" TEXT,
   "kept_as" TEXT
);
CREATE INDEX "idx_rejections_at"
    ON "rejections" ("at");
CREATE TABLE "proposals" (
   "id" TEXT PRIMARY KEY,
   "goal" TEXT,
   "repo" TEXT,
   "branch" TEXT,
   "base_commit" TEXT,
   "status" TEXT,
   "run_status" TEXT,
   "head_commit" TEXT,
   "check_passed" INTEGER,
   "check_log" TEXT,
   "diff" TEXT,
   "diffstat" TEXT,
   "security_flag" INTEGER,
   "security_reasons" TEXT,
   "created_at" TEXT
);
CREATE INDEX "idx_proposals_created_at"
    ON "proposals" ("created_at");
CREATE TABLE "checkpoints" (
   "id" INTEGER PRIMARY KEY,
   "run_id" TEXT REFERENCES "runs"("id"),
   "at" TEXT,
   "phase" TEXT,
   "status" TEXT,
   "commit_sha" TEXT,
   "tag" TEXT,
   "files" INTEGER,
   "detail" TEXT,
   "workspace" TEXT
, "git_dir" TEXT);
CREATE INDEX "idx_checkpoints_run_id"
    ON "checkpoints" ("run_id");
CREATE INDEX "idx_runs_parent_run"
    ON "runs" ("parent_run");
CREATE TABLE "connections" (
   "id" INTEGER PRIMARY KEY,
   "run_id" TEXT REFERENCES "runs"("id"),
   "at" TEXT,
   "host" TEXT,
   "port" INTEGER,
   "method" TEXT,
   "allowed" INTEGER,
   "reason" TEXT,
   "bytes_up" INTEGER,
   "bytes_down" INTEGER
);
CREATE INDEX "idx_connections_run_id"
    ON "connections" ("run_id");
CREATE TABLE "tripwires" (
   "id" INTEGER PRIMARY KEY,
   "run_id" TEXT REFERENCES "runs"("id"),
   "at" TEXT,
   "decoy" TEXT,
   "how" TEXT,
   "tool" TEXT,
   "action" TEXT
);
CREATE INDEX "idx_tripwires_run_id"
    ON "tripwires" ("run_id");
CREATE INDEX "idx_steps_at"
    ON "steps" ("at");
CREATE TABLE "alerts" (
   "id" INTEGER PRIMARY KEY,
   "at" TEXT,
   "event" TEXT,
   "run_id" TEXT,
   "destination" TEXT,
   "status" TEXT,
   "attempts" INTEGER,
   "error" TEXT,
   "title" TEXT,
   "body" TEXT
);
CREATE INDEX "idx_alerts_at"
    ON "alerts" ("at");
CREATE INDEX "idx_runs_kind"
    ON "runs" ("kind");
CREATE VIRTUAL TABLE runs_fts using fts5(goal, summary, content='runs', content_rowid='rowid');
CREATE TRIGGER runs_fts_insert after insert on runs begin insert into runs_fts(rowid, goal, summary) values (new.rowid, new.goal, new.summary); end;
CREATE TRIGGER runs_fts_update after update of goal, summary on runs begin insert into runs_fts(runs_fts, rowid, goal, summary) values ('delete', old.rowid, old.goal, old.summary); insert into runs_fts(rowid, goal, summary) values (new.rowid, new.goal, new.summary); end;
CREATE TRIGGER runs_fts_delete after delete on runs begin insert into runs_fts(runs_fts, rowid, goal, summary) values ('delete', old.rowid, old.goal, old.summary); end;
CREATE TABLE "conversation" (
   "run_id" TEXT REFERENCES "runs"("id"),
   "generation" INTEGER,
   "seq" INTEGER,
   "iteration" INTEGER,
   "message" TEXT,
   "worked_ms" INTEGER,
   "at" TEXT,
   PRIMARY KEY ("run_id", "generation", "seq")
);
CREATE TABLE "standing_rules" (
   "id" TEXT PRIMARY KEY,
   "profile" TEXT,
   "tool" TEXT,
   "head" TEXT,
   "arguments" TEXT,
   "made_by" TEXT,
   "made_at" TEXT,
   "approval_id" TEXT,
   "removed_by" TEXT,
   "removed_at" TEXT
);
CREATE INDEX "idx_standing_rules_profile_tool"
    ON "standing_rules" ("profile", "tool");
CREATE TABLE "alert_actions" (
   "digest" TEXT PRIMARY KEY,
   "approval_id" TEXT,
   "decision" TEXT,
   "used_at" TEXT,
   "used_by" TEXT
);
CREATE TABLE "alert_reminders" (
   "approval_id" TEXT,
   "kind" TEXT,
   "at" TEXT,
   PRIMARY KEY ("approval_id", "kind")
);
CREATE TABLE "mcp_pins" (
   "server" TEXT,
   "tool" TEXT,
   "sha256" TEXT,
   "description" TEXT,
   "schema" TEXT,
   "approved_by" TEXT,
   "approved_at" TEXT,
   PRIMARY KEY ("server", "tool")
);
CREATE INDEX "idx_runs_parent_run_started_at"
    ON "runs" ("parent_run", "started_at");
CREATE INDEX "idx_runs_agent_name"
    ON "runs" ("agent_name");
CREATE TABLE "operator_actions" (
   "id" INTEGER PRIMARY KEY,
   "at" TEXT,
   "by" TEXT,
   "area" TEXT,
   "action" TEXT,
   "subject" TEXT,
   "ok" INTEGER,
   "detail" TEXT
);
CREATE INDEX "idx_operator_actions_at"
    ON "operator_actions" ("at");
CREATE INDEX idx_steps_denied on steps(id) where verdict = 'denied';
CREATE INDEX idx_steps_credential on steps(id) where kind = 'credential';
CREATE INDEX "idx_connections_at"
    ON "connections" ("at");
CREATE INDEX "idx_tripwires_at"
    ON "tripwires" ("at");
CREATE TABLE "proposal_decisions" (
   "proposal_id" TEXT PRIMARY KEY,
   "decision" TEXT,
   "decided_by" TEXT,
   "decided_at" TEXT,
   "reason" TEXT
);
CREATE INDEX "idx_runs_requested_by_started_at"
    ON "runs" ("requested_by", "started_at");
CREATE TABLE "api_keys" (
   "name" TEXT PRIMARY KEY,
   "digest" TEXT,
   "agents" TEXT,
   "budget_tokens" INTEGER,
   "rate_per_min" INTEGER,
   "created_at" TEXT,
   "created_by" TEXT
);
CREATE UNIQUE INDEX "idx_api_keys_digest"
    ON "api_keys" ("digest");
CREATE TABLE "api_calls" (
   "id" INTEGER PRIMARY KEY,
   "key" TEXT,
   "at" TEXT,
   "run_id" TEXT,
   "conversation" TEXT
);
CREATE INDEX "idx_api_calls_key_at"
    ON "api_calls" ("key", "at");
CREATE INDEX "idx_api_calls_key_conversation"
    ON "api_calls" ("key", "conversation");
CREATE TABLE "eval_runs" (
   "id" TEXT PRIMARY KEY,
   "suite" TEXT,
   "created_at" TEXT,
   "requested_by" TEXT,
   "models" TEXT,
   "repeat" INTEGER,
   "trigger" TEXT,
   "fingerprint" TEXT,
   "alert_drop" REAL,
   "status" TEXT,
   "finished_at" TEXT,
   "pass_rate" REAL
);
CREATE INDEX "idx_eval_runs_suite_created_at"
    ON "eval_runs" ("suite", "created_at");
CREATE TABLE "eval_results" (
   "run_id" TEXT PRIMARY KEY,
   "eval_id" TEXT REFERENCES "eval_runs"("id"),
   "case_name" TEXT,
   "model" TEXT,
   "repeat" INTEGER,
   "start" TEXT,
   "spec" TEXT,
   "passed" INTEGER,
   "checks" TEXT,
   "iterations" INTEGER,
   "tokens" INTEGER,
   "model_ms" INTEGER,
   "wall_ms" INTEGER,
   "approvals" INTEGER,
   "scored_at" TEXT
);
CREATE INDEX "idx_eval_results_eval_id"
    ON "eval_results" ("eval_id");
CREATE TABLE run_rollup (day text not null, status text not null, model text not null,
            agent_name text not null, source text not null, model_reason text not null, sandbox text not null,
            kind text not null, link text not null, runs integer not null, tokens_in integer not null,
            tokens_out integer not null, duration_ms integer not null, primary key (day, status, model, agent_name, source, model_reason, sandbox, kind, link)) without rowid;
CREATE TABLE run_value_rollup (day text not null, status text not null,
            measure text not null, value integer not null, runs integer not null,
            primary key (day, status, measure, value)) without rowid;
CREATE TABLE run_error_rollup (day text not null, status text not null,
            error text not null, runs integer not null, primary key (day, status, error)) without rowid;
CREATE TABLE tool_rollup (day text not null, tool text not null, verdict text not null,
            ok integer not null, calls integer not null, primary key (day, tool, verdict, ok)) without rowid;
CREATE TRIGGER runs_rollup_insert after insert on runs begin insert into run_rollup (day, status, model, agent_name, source, model_reason, sandbox, kind, link, runs, tokens_in, tokens_out, duration_ms)
            values (substr(coalesce(new.started_at, ''), 1, 10), coalesce(new.status, ''), coalesce(new.model, ''), coalesce(new.agent_name, ''), coalesce(new.source, ''), coalesce(new.model_reason, ''), coalesce(new.sandbox, ''), coalesce(new.kind, ''), coalesce(new.link, ''), +1, +coalesce(new.tokens_in, 0), +coalesce(new.tokens_out, 0),
                    +coalesce(new.duration_ms, 0))
            on conflict (day, status, model, agent_name, source, model_reason, sandbox, kind, link) do update set runs = runs + excluded.runs,
                tokens_in = tokens_in + excluded.tokens_in, tokens_out = tokens_out + excluded.tokens_out,
                duration_ms = duration_ms + excluded.duration_ms;
insert into run_value_rollup (day, status, measure, value, runs)
            select substr(coalesce(new.started_at, ''), 1, 10), coalesce(new.status, ''), 'duration_ms', case when cast(new.duration_ms as integer) < 100 then cast(new.duration_ms as integer) when cast(new.duration_ms as integer) < 1000 then ((cast(new.duration_ms as integer) + 9) / 10) * 10 when cast(new.duration_ms as integer) < 10000 then ((cast(new.duration_ms as integer) + 99) / 100) * 100 when cast(new.duration_ms as integer) < 100000 then ((cast(new.duration_ms as integer) + 999) / 1000) * 1000 when cast(new.duration_ms as integer) < 1000000 then ((cast(new.duration_ms as integer) + 9999) / 10000) * 10000 when cast(new.duration_ms as integer) < 10000000 then ((cast(new.duration_ms as integer) + 99999) / 100000) * 100000 when cast(new.duration_ms as integer) < 100000000 then ((cast(new.duration_ms as integer) + 999999) / 1000000) * 1000000 when cast(new.duration_ms as integer) < 1000000000 then ((cast(new.duration_ms as integer) + 9999999) / 10000000) * 10000000 when cast(new.duration_ms as integer) < 10000000000 then ((cast(new.duration_ms as integer) + 99999999) / 100000000) * 100000000 when cast(new.duration_ms as integer) < 100000000000 then ((cast(new.duration_ms as integer) + 999999999) / 1000000000) * 1000000000 else cast(new.duration_ms as integer) end, +1 where new.duration_ms is not null
            on conflict (day, status, measure, value) do update set runs = runs + excluded.runs;
insert into run_value_rollup (day, status, measure, value, runs)
            select substr(coalesce(new.started_at, ''), 1, 10), coalesce(new.status, ''), 'iterations', new.iterations, +1 where new.iterations is not null
            on conflict (day, status, measure, value) do update set runs = runs + excluded.runs;
insert into run_error_rollup (day, status, error, runs)
            select substr(coalesce(new.started_at, ''), 1, 10), coalesce(new.status, ''), substr(ltrim(coalesce(new.error, ''), ' ' || char(9, 10, 11, 12, 13)), 1, 400), +1
            where coalesce(new.status, '') not in ('running', 'done')
            on conflict (day, status, error) do update set runs = runs + excluded.runs; end;
CREATE TRIGGER runs_rollup_update after update of started_at, status, model, agent_name, source, model_reason, sandbox, kind, link, tokens_in, tokens_out, duration_ms, iterations, error on runs begin insert into run_rollup (day, status, model, agent_name, source, model_reason, sandbox, kind, link, runs, tokens_in, tokens_out, duration_ms)
            values (substr(coalesce(old.started_at, ''), 1, 10), coalesce(old.status, ''), coalesce(old.model, ''), coalesce(old.agent_name, ''), coalesce(old.source, ''), coalesce(old.model_reason, ''), coalesce(old.sandbox, ''), coalesce(old.kind, ''), coalesce(old.link, ''), -1, -coalesce(old.tokens_in, 0), -coalesce(old.tokens_out, 0),
                    -coalesce(old.duration_ms, 0))
            on conflict (day, status, model, agent_name, source, model_reason, sandbox, kind, link) do update set runs = runs + excluded.runs,
                tokens_in = tokens_in + excluded.tokens_in, tokens_out = tokens_out + excluded.tokens_out,
                duration_ms = duration_ms + excluded.duration_ms;
insert into run_value_rollup (day, status, measure, value, runs)
            select substr(coalesce(old.started_at, ''), 1, 10), coalesce(old.status, ''), 'duration_ms', case when cast(old.duration_ms as integer) < 100 then cast(old.duration_ms as integer) when cast(old.duration_ms as integer) < 1000 then ((cast(old.duration_ms as integer) + 9) / 10) * 10 when cast(old.duration_ms as integer) < 10000 then ((cast(old.duration_ms as integer) + 99) / 100) * 100 when cast(old.duration_ms as integer) < 100000 then ((cast(old.duration_ms as integer) + 999) / 1000) * 1000 when cast(old.duration_ms as integer) < 1000000 then ((cast(old.duration_ms as integer) + 9999) / 10000) * 10000 when cast(old.duration_ms as integer) < 10000000 then ((cast(old.duration_ms as integer) + 99999) / 100000) * 100000 when cast(old.duration_ms as integer) < 100000000 then ((cast(old.duration_ms as integer) + 999999) / 1000000) * 1000000 when cast(old.duration_ms as integer) < 1000000000 then ((cast(old.duration_ms as integer) + 9999999) / 10000000) * 10000000 when cast(old.duration_ms as integer) < 10000000000 then ((cast(old.duration_ms as integer) + 99999999) / 100000000) * 100000000 when cast(old.duration_ms as integer) < 100000000000 then ((cast(old.duration_ms as integer) + 999999999) / 1000000000) * 1000000000 else cast(old.duration_ms as integer) end, -1 where old.duration_ms is not null
            on conflict (day, status, measure, value) do update set runs = runs + excluded.runs;
insert into run_value_rollup (day, status, measure, value, runs)
            select substr(coalesce(old.started_at, ''), 1, 10), coalesce(old.status, ''), 'iterations', old.iterations, -1 where old.iterations is not null
            on conflict (day, status, measure, value) do update set runs = runs + excluded.runs;
insert into run_error_rollup (day, status, error, runs)
            select substr(coalesce(old.started_at, ''), 1, 10), coalesce(old.status, ''), substr(ltrim(coalesce(old.error, ''), ' ' || char(9, 10, 11, 12, 13)), 1, 400), -1
            where coalesce(old.status, '') not in ('running', 'done')
            on conflict (day, status, error) do update set runs = runs + excluded.runs; insert into run_rollup (day, status, model, agent_name, source, model_reason, sandbox, kind, link, runs, tokens_in, tokens_out, duration_ms)
            values (substr(coalesce(new.started_at, ''), 1, 10), coalesce(new.status, ''), coalesce(new.model, ''), coalesce(new.agent_name, ''), coalesce(new.source, ''), coalesce(new.model_reason, ''), coalesce(new.sandbox, ''), coalesce(new.kind, ''), coalesce(new.link, ''), +1, +coalesce(new.tokens_in, 0), +coalesce(new.tokens_out, 0),
                    +coalesce(new.duration_ms, 0))
            on conflict (day, status, model, agent_name, source, model_reason, sandbox, kind, link) do update set runs = runs + excluded.runs,
                tokens_in = tokens_in + excluded.tokens_in, tokens_out = tokens_out + excluded.tokens_out,
                duration_ms = duration_ms + excluded.duration_ms;
insert into run_value_rollup (day, status, measure, value, runs)
            select substr(coalesce(new.started_at, ''), 1, 10), coalesce(new.status, ''), 'duration_ms', case when cast(new.duration_ms as integer) < 100 then cast(new.duration_ms as integer) when cast(new.duration_ms as integer) < 1000 then ((cast(new.duration_ms as integer) + 9) / 10) * 10 when cast(new.duration_ms as integer) < 10000 then ((cast(new.duration_ms as integer) + 99) / 100) * 100 when cast(new.duration_ms as integer) < 100000 then ((cast(new.duration_ms as integer) + 999) / 1000) * 1000 when cast(new.duration_ms as integer) < 1000000 then ((cast(new.duration_ms as integer) + 9999) / 10000) * 10000 when cast(new.duration_ms as integer) < 10000000 then ((cast(new.duration_ms as integer) + 99999) / 100000) * 100000 when cast(new.duration_ms as integer) < 100000000 then ((cast(new.duration_ms as integer) + 999999) / 1000000) * 1000000 when cast(new.duration_ms as integer) < 1000000000 then ((cast(new.duration_ms as integer) + 9999999) / 10000000) * 10000000 when cast(new.duration_ms as integer) < 10000000000 then ((cast(new.duration_ms as integer) + 99999999) / 100000000) * 100000000 when cast(new.duration_ms as integer) < 100000000000 then ((cast(new.duration_ms as integer) + 999999999) / 1000000000) * 1000000000 else cast(new.duration_ms as integer) end, +1 where new.duration_ms is not null
            on conflict (day, status, measure, value) do update set runs = runs + excluded.runs;
insert into run_value_rollup (day, status, measure, value, runs)
            select substr(coalesce(new.started_at, ''), 1, 10), coalesce(new.status, ''), 'iterations', new.iterations, +1 where new.iterations is not null
            on conflict (day, status, measure, value) do update set runs = runs + excluded.runs;
insert into run_error_rollup (day, status, error, runs)
            select substr(coalesce(new.started_at, ''), 1, 10), coalesce(new.status, ''), substr(ltrim(coalesce(new.error, ''), ' ' || char(9, 10, 11, 12, 13)), 1, 400), +1
            where coalesce(new.status, '') not in ('running', 'done')
            on conflict (day, status, error) do update set runs = runs + excluded.runs; delete from run_rollup where runs = 0; delete from run_value_rollup where runs = 0; delete from run_error_rollup where runs = 0; end;
CREATE TRIGGER runs_rollup_delete after delete on runs begin insert into run_rollup (day, status, model, agent_name, source, model_reason, sandbox, kind, link, runs, tokens_in, tokens_out, duration_ms)
            values (substr(coalesce(old.started_at, ''), 1, 10), coalesce(old.status, ''), coalesce(old.model, ''), coalesce(old.agent_name, ''), coalesce(old.source, ''), coalesce(old.model_reason, ''), coalesce(old.sandbox, ''), coalesce(old.kind, ''), coalesce(old.link, ''), -1, -coalesce(old.tokens_in, 0), -coalesce(old.tokens_out, 0),
                    -coalesce(old.duration_ms, 0))
            on conflict (day, status, model, agent_name, source, model_reason, sandbox, kind, link) do update set runs = runs + excluded.runs,
                tokens_in = tokens_in + excluded.tokens_in, tokens_out = tokens_out + excluded.tokens_out,
                duration_ms = duration_ms + excluded.duration_ms;
insert into run_value_rollup (day, status, measure, value, runs)
            select substr(coalesce(old.started_at, ''), 1, 10), coalesce(old.status, ''), 'duration_ms', case when cast(old.duration_ms as integer) < 100 then cast(old.duration_ms as integer) when cast(old.duration_ms as integer) < 1000 then ((cast(old.duration_ms as integer) + 9) / 10) * 10 when cast(old.duration_ms as integer) < 10000 then ((cast(old.duration_ms as integer) + 99) / 100) * 100 when cast(old.duration_ms as integer) < 100000 then ((cast(old.duration_ms as integer) + 999) / 1000) * 1000 when cast(old.duration_ms as integer) < 1000000 then ((cast(old.duration_ms as integer) + 9999) / 10000) * 10000 when cast(old.duration_ms as integer) < 10000000 then ((cast(old.duration_ms as integer) + 99999) / 100000) * 100000 when cast(old.duration_ms as integer) < 100000000 then ((cast(old.duration_ms as integer) + 999999) / 1000000) * 1000000 when cast(old.duration_ms as integer) < 1000000000 then ((cast(old.duration_ms as integer) + 9999999) / 10000000) * 10000000 when cast(old.duration_ms as integer) < 10000000000 then ((cast(old.duration_ms as integer) + 99999999) / 100000000) * 100000000 when cast(old.duration_ms as integer) < 100000000000 then ((cast(old.duration_ms as integer) + 999999999) / 1000000000) * 1000000000 else cast(old.duration_ms as integer) end, -1 where old.duration_ms is not null
            on conflict (day, status, measure, value) do update set runs = runs + excluded.runs;
insert into run_value_rollup (day, status, measure, value, runs)
            select substr(coalesce(old.started_at, ''), 1, 10), coalesce(old.status, ''), 'iterations', old.iterations, -1 where old.iterations is not null
            on conflict (day, status, measure, value) do update set runs = runs + excluded.runs;
insert into run_error_rollup (day, status, error, runs)
            select substr(coalesce(old.started_at, ''), 1, 10), coalesce(old.status, ''), substr(ltrim(coalesce(old.error, ''), ' ' || char(9, 10, 11, 12, 13)), 1, 400), -1
            where coalesce(old.status, '') not in ('running', 'done')
            on conflict (day, status, error) do update set runs = runs + excluded.runs; delete from run_rollup where runs = 0; delete from run_value_rollup where runs = 0; delete from run_error_rollup where runs = 0; end;
CREATE TRIGGER steps_rollup_insert after insert on steps begin insert into tool_rollup (day, tool, verdict, ok, calls)
               select coalesce((select substr(coalesce(runs.started_at, ''), 1, 10) from runs where id = new.run_id), ''), coalesce(new.tool, ''), coalesce(new.verdict, ''), coalesce(new.ok, -1), +1 where new.kind = 'tool'
               on conflict (day, tool, verdict, ok) do update set calls = calls + excluded.calls; end;
CREATE TRIGGER steps_rollup_update after update of kind, tool, verdict, ok on steps begin insert into tool_rollup (day, tool, verdict, ok, calls)
               select coalesce((select substr(coalesce(runs.started_at, ''), 1, 10) from runs where id = old.run_id), ''), coalesce(old.tool, ''), coalesce(old.verdict, ''), coalesce(old.ok, -1), -1 where old.kind = 'tool'
               on conflict (day, tool, verdict, ok) do update set calls = calls + excluded.calls; insert into tool_rollup (day, tool, verdict, ok, calls)
               select coalesce((select substr(coalesce(runs.started_at, ''), 1, 10) from runs where id = new.run_id), ''), coalesce(new.tool, ''), coalesce(new.verdict, ''), coalesce(new.ok, -1), +1 where new.kind = 'tool'
               on conflict (day, tool, verdict, ok) do update set calls = calls + excluded.calls; delete from tool_rollup where calls = 0; end;
CREATE TRIGGER steps_rollup_delete after delete on steps begin insert into tool_rollup (day, tool, verdict, ok, calls)
               select coalesce((select substr(coalesce(runs.started_at, ''), 1, 10) from runs where id = old.run_id), ''), coalesce(old.tool, ''), coalesce(old.verdict, ''), coalesce(old.ok, -1), -1 where old.kind = 'tool'
               on conflict (day, tool, verdict, ok) do update set calls = calls + excluded.calls; delete from tool_rollup where calls = 0; end;
CREATE INDEX idx_steps_started on steps(id) where verdict = 'started';
CREATE TABLE "fleet_workers" (
   "name" TEXT PRIMARY KEY,
   "digest" TEXT,
   "labels" TEXT,
   "models" TEXT,
   "running" TEXT,
   "seen_at" REAL,
   "created_at" TEXT,
   "created_by" TEXT
);
CREATE UNIQUE INDEX "idx_fleet_workers_digest"
    ON "fleet_workers" ("digest");
CREATE TABLE "fleet_runs" (
   "run_id" TEXT PRIMARY KEY,
   "queue" TEXT,
   "model" TEXT,
   "label" TEXT,
   "sent_at" REAL,
   "worker" TEXT,
   "claimed_at" REAL,
   "stop_by" TEXT,
   "stop_status" TEXT,
   "refused" INTEGER DEFAULT 0,
   "lost" TEXT
);
CREATE TABLE "fleet_events" (
   "id" TEXT PRIMARY KEY,
   "run_id" TEXT,
   "worker" TEXT,
   "at" REAL,
   "kind" TEXT,
   "lag_ms" REAL
);
CREATE TABLE "fleet_door" (
   "id" INTEGER PRIMARY KEY,
   "up_since" REAL,
   "alive_at" REAL
);
insert into _migrations values ('m001_runs_and_steps', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m010_approvals', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m030_queue_requests', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m031_queue_rejections', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m040_proposals', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m050_checkpoints', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m051_step_data', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m052_run_links', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m060_connections', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m061_tripwires', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m062_checkpoint_git_dir', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m070_step_called_as', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m071_run_allowances', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m090_run_routing_and_labels', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m091_alerts', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m100_long_work', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m110_runs_search', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m120_conversation', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m121_standing_rules', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m122_alert_actions', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m130_mcp_pins', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m140_run_think_and_extract', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m150_run_lists_indexed', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m155_operator_actions', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m156_security_indexes', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m157_proposal_decisions', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m158_runs_by_requester', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m160_api_keys', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m161_api_calls', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m180_evals', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m190_run_model_host', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m200_rollups', '2025-01-02T03:04:05.000Z');
insert into _migrations values ('m201_fleet', '2025-01-02T03:04:05.000Z');
insert into runs (id, agent_name, model, goal, mode, source, status, started_at, ended_at, iterations, summary) values ('20250102T030405-abc123', 'default', 'qwen2.5-coder:7b', 'list the files', 'auto', 'cli', 'done', '2025-01-02T03:04:05.000Z', '2025-01-02T03:04:09.000Z', 1, 'listed them');
insert into steps (run_id, seq, at, kind, tool, ok, verdict) values ('20250102T030405-abc123', 1, '2025-01-02T03:04:06.000Z', 'tool', 'list_dir', 1, 'allowed');
