"""Migrations of audit.db: a list of small functions, applied once each, in order.

Each lives in the module of the tables it makes or changes (runs.py, approvals.py ...); this list
is the order they apply in. Never edit a shipped migration; add a new one at the end. Their names
are recorded in `_migrations`, so a rename re-runs it (and a move between modules does not).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hearth.audit.migrations.alerts import m091_alerts, m122_alert_actions
from hearth.audit.migrations.approvals import m010_approvals, m121_standing_rules
from hearth.audit.migrations.channels import m232_channels, m233_channel_attachments
from hearth.audit.migrations.evals import m180_evals
from hearth.audit.migrations.fleet import m201_fleet
from hearth.audit.migrations.keys import m160_api_keys, m161_api_calls, m211_api_key_ids, m231_api_key_users
from hearth.audit.migrations.mcp import m130_mcp_pins, m210_mcp_drift_index
from hearth.audit.migrations.operator import m155_operator_actions
from hearth.audit.migrations.proposals import m040_proposals, m157_proposal_decisions
from hearth.audit.migrations.queue import m030_queue_requests, m031_queue_rejections
from hearth.audit.migrations.research import m220_research
from hearth.audit.migrations.rollups import m200_rollups
from hearth.audit.migrations.runs import (
    m001_runs_and_steps,
    m051_step_data,
    m052_run_links,
    m070_step_called_as,
    m071_run_allowances,
    m090_run_routing_and_labels,
    m100_long_work,
    m110_runs_search,
    m120_conversation,
    m140_run_think_and_extract,
    m150_run_lists_indexed,
    m158_runs_by_requester,
    m190_run_model_host,
)
from hearth.audit.migrations.skills import m240_skills
from hearth.audit.migrations.users import m230_users
from hearth.audit.migrations.walls import (
    m050_checkpoints,
    m060_connections,
    m061_tripwires,
    m062_checkpoint_git_dir,
    m156_security_indexes,
)

if TYPE_CHECKING:
    import sqlite_utils


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
    m210_mcp_drift_index,
    m211_api_key_ids,
    m220_research,
    m230_users,
    m231_api_key_users,
    m232_channels,
    m233_channel_attachments,
    m240_skills,
]
