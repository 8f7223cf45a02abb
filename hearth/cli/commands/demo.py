"""`hearth demo`: run hearth's main job once, on a real model if Ollama answers, else a scripted one.

The demo is hands-off: it approves every command the model proposes (each still runs in the
sandbox) and says so before it starts; `--ask` puts each decision to you instead. It ends with
the commands that show what it recorded, written to work when pasted into any shell, whatever
that shell's environment: the program by its path and the state directory given with
--state-dir, both relative to where the demo ran when they lie below it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hearth.render import JSON_EVENTS_HELP, visible_line
from hearth.settings import Settings

if TYPE_CHECKING:
    from agent.safety.policy import Approver


def register(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser("demo", help="run the demo goal (scripted model unless Ollama answers)")
    demo.add_argument("--scripted", action="store_true", help="use the scripted model even if Ollama answers")
    demo.add_argument("--ask", action="store_true", help="ask before each command instead of approving it")
    demo.add_argument("--json", action="store_true", help=JSON_EVENTS_HELP)
    demo.set_defaults(handler=run_demo)


def _approver(say: Callable[[str], None]) -> Approver:
    from agent.safety.policy import Decision

    def approve(name: str, args: dict[str, Any], reason: str) -> Decision:
        say(visible_line(f"[demo] approving {name} {args} ({reason})"))
        return Decision(True, by="demo", detail="the demo approves its commands; they still run in the sandbox")

    return approve


def run_demo(args: argparse.Namespace, settings: Settings) -> int:
    from agent.model.scripted import ScriptedModel
    from hearth.demo import GOAL, demo_script, pick_real_model
    from hearth.run.exits import exit_code
    from hearth.run.goal import GoalRequest
    from hearth.run.runner import run_goal

    real = None if args.scripted else pick_real_model(settings.model_host, settings.model)
    model = None if real else ScriptedModel(demo_script(), model="demo-script", counted=True)
    name = real or "demo-script"
    where = (
        f"Ollama at {settings.model_host}" if real else f"the scripted demo model (no Ollama at {settings.model_host})"
    )
    say: Callable[[str], None] = print if not args.json else _to_stderr
    say(f"hearth demo: goal for {name}, using {where}\n  {GOAL}")
    if args.ask:
        say("hearth demo: each command the model proposes waits for your answer (--ask)\n")
    else:
        say(
            "hearth demo: hands-off: it approves every command the model proposes (each still runs in "
            "the sandbox, and is recorded); run `hearth demo --ask` to decide each one yourself\n"
        )
    request = GoalRequest(goal=GOAL, model=name, agent_name="demo", source="demo")
    approve = None if args.ask else _approver(say)
    run_id, outcome = run_goal(request, settings, model=model, approve=approve, json_lines=args.json)
    for line in next_steps(run_id, settings):
        say(line)
    return exit_code(outcome.status)


def next_steps(run_id: str, settings: Settings) -> list[str]:
    """Where the run is and the commands to look at it, ready to paste."""
    state = f"--state-dir {shlex.quote(_shown(settings.state_dir))}"
    hearth, loop = f"{_program('hearth')} {state}", f"{_program('hearth-loop')} {state}"
    commands = [
        (f"{hearth} show {run_id}", "this run, step by step"),
        (f"{hearth} runs", "every run recorded there"),
        (f"{loop} --self-test", "the whole path, checked with a scripted model"),
    ]
    width = max(len(command) for command, _ in commands)
    return [
        f"\nrecorded as run {run_id} in {_shown(settings.audit_path)}; next, paste:",
        *(f"  {command.ljust(width)}   # {what}" for command, what in commands),
    ]


def _program(name: str) -> str:
    """How to call `name` from here: bare when it is the one on PATH, else by its path (this
    interpreter's, as a virtualenv has it)."""
    path = Path(sys.executable).parent / name
    on_path = shutil.which(name)
    if on_path and path.exists() and os.path.samefile(on_path, path):
        return name
    return shlex.quote(_shown(path if path.exists() else Path(name)))


def _shown(path: Path) -> str:
    """`path` relative to the working directory when it lies below it, else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(Path.cwd())
    except ValueError:
        return str(absolute)
    return str(relative) if str(relative) != "." else "."


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
