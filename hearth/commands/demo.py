"""`hearth demo`: run hearth's main job once, on a real model if Ollama answers, else a scripted one."""

from __future__ import annotations

import argparse
from typing import Any

from agent.model.scripted import ScriptedModel
from agent.safety.policy import Decision
from hearth.demo import GOAL, demo_script, pick_real_model
from hearth.run.goal import GoalRequest
from hearth.run.runner import exit_code, run_goal
from hearth.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser("demo", help="run the demo goal (scripted model unless Ollama answers)")
    demo.add_argument("--scripted", action="store_true", help="use the scripted model even if Ollama answers")
    demo.add_argument("--json", action="store_true", help="print events as JSON lines")
    demo.set_defaults(handler=run_demo)


def _approve(name: str, args: dict[str, Any], reason: str) -> Decision:
    print(f"[demo] approving {name} {args} ({reason})")
    return Decision(True, by="demo", detail="the demo approves its commands; they still run in the sandbox")


def run_demo(args: argparse.Namespace, settings: Settings) -> int:
    real = None if args.scripted else pick_real_model(settings.ollama_host, settings.model)
    model = None if real else ScriptedModel(demo_script(), model="demo-script")
    name = real or "demo-script"
    where = (
        f"Ollama at {settings.ollama_host}"
        if real
        else f"the scripted demo model (no Ollama at {settings.ollama_host})"
    )
    print(f"hearth demo: goal for {name}, using {where}\n  {GOAL}\n")
    request = GoalRequest(goal=GOAL, model=name, agent_name="demo", source="demo")
    run_id, outcome = run_goal(request, settings, model=model, approve=_approve, json_lines=args.json)
    print(f"\nrecorded as run {run_id} in {settings.audit_path}")
    print(f"replay it with: hearth show {run_id}    list runs with: hearth runs")
    return exit_code(outcome.status)
