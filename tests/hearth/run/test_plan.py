"""Admission's plan: a queue Request copied once, resolved with its profile, frozen, nothing None."""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest

from hearth.queue.request import Request
from hearth.run.admission import goal_request, plan_of
from hearth.run.goal import RunPlan
from hearth.settings import Settings

# Every Request field and where the plan keeps it: (the plan's field, the value it must hold).
CARRIED: dict[str, tuple[str, Any]] = {
    "id": ("run_id", "req-1"),
    "goal": ("goal", "tidy the notes"),
    "model": ("model", "given-model:7b"),
    "agent_name": ("agent_name", "scout"),
    "label": ("label", "weekly tidy"),
    "mode": ("mode", "plan"),
    "allowed_tools": ("allowed_tools", ("read_file", "list_files")),
    "max_iterations": ("max_iters", 7),
    "timeout_s": ("timeout_s", 99.0),
    "approval_wait": ("approval_wait_s", 5400.0),
    "max_tokens": ("max_tokens", 1234),
    "credentials": ("credentials", ("TOKEN",)),
    "egress": ("egress", ("api.example.org",)),
    "network": ("network", True),
    "source": ("source", "timer"),
    "requested_by": ("requested_by", "cron"),
    "continues": ("continues", "earlier-run"),
    "child_of": ("parent_run", "swarm-1"),
    "think": ("think", "low"),
    "web_extract": ("web_extract", False),
}
# Fields that choose how claimed.py runs the request, or that only its row keeps: never in a plan.
NOT_A_RUNS = {
    "version",
    "created_at",
    "evolve",
    "marathon",
    "swarm",
    "research",
    "worker",
}  # long work and worker: routed by dispatch
# Fields carried into the plan that exclude `continues` (a request is one way to run): each is
# proved carried on its own below.
CARRIED_ALONE = {"heartbeat": ("heartbeat", "upkeep")}
REQUEST_VALUES = {
    "allowed_tools": ["read_file", "list_files"],
    "timeout_s": 99,
    "approval_wait": "90m",
    "credentials": ["TOKEN"],
    "egress": ["api.example.org"],
}


def _settings(tmp_path: Path, profiles: dict[str, str]) -> Settings:
    for name, toml in profiles.items():
        (tmp_path / "etc" / "agents" / name).mkdir(parents=True)
        (tmp_path / "etc" / "agents" / name / "agent.toml").write_text(toml)
    env = {"HEARTH_STATE_DIR": str(tmp_path / "state"), "HEARTH_CONFIG_DIR": str(tmp_path / "etc")}
    return Settings.from_env(env | {"HEARTH_MODEL": "host-model"})


def _plan(request: Request, settings: Settings) -> RunPlan:
    goal = goal_request(request, settings)
    return plan_of(goal, settings, None, goal.run_id or "")[0]


def test_every_request_field_is_carried_into_the_plan_or_named_as_not_a_runs() -> None:
    unaccounted = set(Request.model_fields) - set(CARRIED) - set(CARRIED_ALONE) - NOT_A_RUNS
    assert not unaccounted, f"Request fields not carried into RunPlan: {sorted(unaccounted)}; copy them in goal_request"


def test_a_heartbeat_arrives_as_a_heartbeat_of_its_role_in_the_roles_home(tmp_path: Path) -> None:
    settings = _settings(tmp_path, {"keeper": "home = true\n"})
    [(field, (name, value))] = CARRIED_ALONE.items()
    plan = _plan(Request.model_validate({"id": "hb-1", "goal": "g", "agent_name": "keeper", field: value}), settings)
    assert (getattr(plan, name), plan.kind, plan.role, plan.fresh) == (value, "heartbeat", "keeper", False)
    assert plan.workspace == settings.state_dir / "roles" / "keeper"


def test_a_request_with_every_field_set_arrives_in_the_plan_with_every_value(tmp_path: Path) -> None:
    settings = _settings(tmp_path, {"scout": 'model = "profile-model"\nmode = "auto"\nmax_iterations = 3\n'})
    body = {field: REQUEST_VALUES.get(field, value) for field, (_, value) in CARRIED.items()}
    request = Request.model_validate(body | {"created_at": "2026-01-31T09:30:00Z"})
    for field in CARRIED:  # each value differs from the field's default, so arriving proves it was carried
        assert getattr(request, field) != Request.model_fields[field].default, field
    plan = _plan(request, settings)
    arrived = {field: getattr(plan, name) for field, (name, _) in CARRIED.items()}
    assert arrived == {field: value for field, (_, value) in CARRIED.items()}
    assert (plan.link, plan.every_tool, plan.fresh) == ("child", False, True)
    assert plan.workspace == settings.agents_dir / "req-1"


def test_a_profile_fills_what_the_request_leaves_out_and_hearth_the_rest(tmp_path: Path) -> None:
    toml = (
        'model = "profile-model"\nmode = "plan"\nallowed_tools = ["read_file"]\nmax_iterations = 5\n'
        'network = true\negress = ["pypi.org"]\nmax_tokens = 500\napproval_wait = "2h"\n'
    )
    settings = _settings(tmp_path, {"scout": toml})
    plan = _plan(Request.model_validate({"id": "r1", "goal": "g", "agent_name": "scout"}), settings)
    assert (plan.model, plan.mode, plan.allowed_tools, plan.every_tool) == (
        "profile-model",
        "plan",
        ("read_file",),
        False,
    )
    assert (plan.max_iters, plan.network, plan.egress, plan.max_tokens) == (5, True, ("pypi.org",), 500)
    assert plan.approval_wait_s == 7200
    labelled = _plan(Request.model_validate({"id": "r2", "goal": "g", "label": "scout"}), settings)
    assert (labelled.agent_name, labelled.model, labelled.label) == ("scout", "profile-model", "scout")
    bare = _plan(Request.model_validate({"id": "r3", "goal": "g"}), settings)
    assert (bare.agent_name, bare.model, bare.mode, bare.max_iters) == ("default", "host-model", "auto", 12)
    assert (bare.every_tool, bare.allowed_tools, bare.network, bare.max_tokens) == (True, (), False, 0)
    assert (bare.label, bare.parent_run, bare.link, bare.continues, bare.timeout_s) == ("", "", "", "", 3600.0)
    assert bare.approval_wait_s == 12 * 3600  # the host's default


def test_the_plan_is_frozen_and_no_field_may_be_none(tmp_path: Path) -> None:
    hints = get_type_hints(RunPlan)
    assert set(hints) == {f.name for f in dataclasses.fields(RunPlan)}
    optional = [name for name, hint in hints.items() if hint is type(None) or type(None) in get_args(hint)]
    assert optional == [], f"RunPlan fields that may be None: {optional}"
    assert not any(isinstance(hint, types.UnionType) for hint in hints.values())
    plan = _plan(Request.model_validate({"id": "r1", "goal": "g"}), _settings(tmp_path, {}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.model = "other"  # type: ignore[misc]
    assert hash(plan) == hash(dataclasses.replace(plan))  # every value inside is immutable too


def test_a_plan_as_a_request_plans_to_the_same_plan(tmp_path: Path) -> None:
    """What a leg, a synthesis or a fallback starts from names every resolved value, so it keeps them."""
    settings = _settings(tmp_path, {"scout": 'model = "profile-model"\nmode = "plan"\nmax_tokens = 500\n'})
    plan = _plan(Request.model_validate({"id": "r1", "goal": "g", "agent_name": "scout", "network": True}), settings)
    assert plan_of(plan.as_request(), settings, None, plan.run_id)[0] == plan
