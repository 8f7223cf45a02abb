"""The audit: audit.db, every statement on it, and its migrations.

`AuditStore` (store.py) is the connection: it opens, migrates and writes the file, and refuses a
table or a column it does not know (SQL is never built from a name a caller passed in). Each table
has one owner module here that holds every statement on it; everything else, the command center's
reads included, calls the owner. tests/hearth/audit/test_owners.py holds this table to the code:

    table(s)                                                owner           what it keeps
    runs, runs_fts                                          runs.py         a run's row, from admitted to ended
    steps, conversation                                     steps.py        a run's timeline, what its model read
    checkpoints, connections, tripwires                     walls.py        what a run's walls kept and saw
    requests, rejections                                    requests.py     the queue's requests and refusals
    approvals                                               approvals.py    approvals asked, and their verdicts
    standing_rules                                          rules.py        standing approvals made from them
    alerts, alert_actions, alert_reminders                  alerts.py       alerts sent, links used, reminders
    api_keys, api_calls                                     keys.py         the /v1 door's keys and their calls
    fleet_workers, fleet_runs, fleet_events, fleet_door     fleet.py        the hub's workers and their runs
    eval_runs, eval_results                                 evals.py        evaluations and their cases' results
    skill_checks                                            skills.py       skills' checks: two evals, a verdict
    mcp_pins                                                pins.py         the MCP tools an operator approved
    proposals, proposal_decisions                           proposals.py    self-evolution proposals, decisions
    operator_actions                                        operator.py     what an operator changed, or tried
    research_plans, research_sources, research_snapshots    research.py     a research run's plan, pages, evidence
    research_evidence, research_claims                      research.py     and its report's claims
    users, memberships, user_tokens, channel_identities     users.py        who may do what, and who a sender is
    channel_updates, channel_chats, deliveries, channel_state   channels.py   the chats: what came, what went
    channel_attachments                                     channels.py     the files they brought
    run_rollup, run_value_rollup, run_error_rollup, tool_rollup   rollups.py   the report's per-day counts

rows.py is what they all stand on (`Rows`, the `Writer` the store is, the caps); reader.py the
read-only connection the command center reads through. Migrations are a list of small functions in
migrations/, one module per family. The knowledge base is a file of its own, which the engine keeps:
agent/knowledge/store.py (documents, chunks, lessons) and vectors.py (the embedding sets) own its
statements.
"""
