"""`hearth-loop --self-test`: the real loop, tools, sandbox and audit against a scripted model.

No network and no Ollama. The script exercises a structured call (arguments as a JSON string),
a call written in text with malformed JSON, a path escape that must be refused, a failing
command that must earn a hint, and a final summary; then each check is printed as pass/fail.
"""

from __future__ import annotations

import io
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent.model.scripted import ScriptedModel
from agent.safety.policy import Decision
from hearth.audit.store import AuditStore, new_run_id
from hearth.errors import ConfigError
from hearth.queue.request import Request
from hearth.run.admission import goal_request
from hearth.run.runner import run_goal
from hearth.settings import Settings

PLAN = "# Plan\n1. write this file\n2. read it back\n"
GOAL = "Write notes/plan.md, read it back, check the sandbox and a missing command, then summarise."


def _last_tool_output(messages: list[dict[str, Any]]) -> str:
    return next((m["content"] for m in reversed(messages) if m["role"] == "tool"), "")


def _summary(messages: list[dict[str, Any]]) -> dict[str, Any]:
    hinted = "Hint:" in _last_tool_output(messages)
    return {
        "content": f"Wrote and re-read notes/plan.md; the escape was refused; the missing command "
        f"{'earned a hint' if hinted else 'gave no hint'}. Done."
    }


def script(last: Any = _summary) -> list[Any]:
    return [
        {
            "content": "",
            "tool_calls": [
                {
                    "function": {
                        "name": "write_file",
                        "arguments": json.dumps({"path": "notes/plan.md", "content": PLAN}),
                    }
                }
            ],
        },
        {
            "content": "Now I read it back.\n```json\n{'name': 'read_file', 'arguments': {'path': 'notes/plan.md',},}\n```"
        },
        {
            "content": "",
            "tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "../../../etc/hostname"}}}],
        },
        {
            "content": "",
            "tool_calls": [{"function": {"name": "run_command", "arguments": {"command": "frobnicate --version"}}}],
        },
        last,
    ]


def _approve(name: str, args: dict[str, Any], reason: str) -> Decision:
    return Decision(True, by="self-test", detail="the self-test approves its own scripted command")


def run_self_test(*, json_lines: bool = False, settings: Settings | None = None, out: Any = None) -> int:
    out = out or sys.stdout
    started = time.monotonic()
    settings = settings or Settings.from_env()
    with tempfile.TemporaryDirectory(prefix="hearth-self-test-") as scratch:
        settings = _usable(settings, Path(scratch))
        workspace = Path(scratch) / "workspace"
        run_id = new_run_id()
        state_file = settings.runs_state_dir / f"{run_id}.json"
        seen: list[str | None] = []  # the live state, as a reader saw it during the last model turn

        def last(messages: list[dict[str, Any]]) -> dict[str, Any]:
            seen.append(_state(state_file))
            return _summary(messages)

        model = ScriptedModel(script(last), model="self-test-script", tokens=(50, 10))
        # a queue request, copied as the queue copies one: the self-test proves that path too
        request = Request.model_validate(
            {"id": run_id, "goal": GOAL, "model": model.model, "agent_name": "self-test", "mode": "auto"}
            | {"source": "self-test", "max_iterations": 8}
        )
        goal = goal_request(request, settings, workspace=workspace)
        run_id, outcome = run_goal(goal, settings, model=model, approve=_approve, out=io.StringIO())
        with AuditStore(settings.audit_path) as audit:
            checks = _checks(outcome.status, workspace, audit, run_id, model, settings, seen)
    elapsed = time.monotonic() - started
    return _report(checks, run_id, elapsed, json_lines, out)


def _usable(settings: Settings, scratch: Path) -> Settings:
    """Record into the real state directory when we may; otherwise into a scratch one."""
    try:
        settings.writable_state_dir()
        return settings
    except ConfigError:
        return Settings(**{**settings.__dict__, "state_dir": scratch / "state"})


Check = tuple[str, bool, str]


def _checks(
    status: str,
    workspace: Path,
    audit: AuditStore,
    run_id: str,
    model: ScriptedModel,
    settings: Settings,
    seen: list[str | None],
) -> list[Check]:
    steps = audit.steps(run_id)
    tools = [s for s in steps if s["kind"] == "tool"]
    run = audit.run(run_id) or {}
    state_file = settings.runs_state_dir / f"{run_id}.json"
    return [
        *_tool_checks(workspace, tools),
        _check("run ended done with a final summary", status == "done" and "Done." in (run.get("summary") or "")),
        _check(
            "audit has the run, 5 model turns and 4 tool steps",
            run.get("status") == "done" and sum(s["kind"] == "model" for s in steps) == 5 and len(tools) == 4,
        ),
        _check(
            "command approval recorded with its approver",
            _nth(tools, 3).get("verdict") == "approved" and "self-test" in (_nth(tools, 3).get("detail") or ""),
        ),
        _check(
            "live state said thinking mid-run and went with the run",
            seen == ["thinking"] and not state_file.exists(),
        ),
        _check("system prompt identical in every request", len({r[0]["content"] for r in model.requests}) == 1),
        _check("every request extends the previous one", _prefix_stable(model.requests)),
    ]


def _tool_checks(workspace: Path, tools: list[dict[str, Any]]) -> list[Check]:
    """What each of the scripted calls did: wrote, was repaired, was refused, earned a hint."""
    plan = workspace / "notes" / "plan.md"
    read, escape, command = _nth(tools, 1), _nth(tools, 2), _nth(tools, 3)
    return [
        _check("structured call with string arguments wrote the file", plan.is_file() and plan.read_text() == PLAN),
        _check(
            "malformed call written in text was repaired and run",
            read.get("tool") == "read_file" and read.get("ok") == 1 and "# Plan" in read.get("output", ""),
        ),
        _check("path escape was refused", escape.get("ok") == 0 and "outside" in escape.get("output", "")),
        _check("failing command earned a hint", command.get("ok") == 0 and "Hint:" in command.get("output", "")),
    ]


def _nth(tools: list[dict[str, Any]], i: int) -> dict[str, Any]:
    """The i-th tool step, or an empty one when the run made fewer calls."""
    return tools[i] if len(tools) > i else {}


def _check(name: str, ok: bool, detail: str = "") -> Check:
    return (name, bool(ok), detail)


def _state(path: Path) -> str | None:
    try:
        return json.loads(path.read_text()).get("state")
    except (OSError, ValueError):
        return None


def _prefix_stable(requests: list[list[dict[str, Any]]]) -> bool:
    return all(later[: len(earlier)] == earlier for earlier, later in zip(requests, requests[1:]))


def _report(checks: list[Check], run_id: str, elapsed: float, json_lines: bool, out: Any) -> int:
    passed = all(ok for _, ok, _ in checks)
    if json_lines:
        for name, ok, _ in checks:
            print(json.dumps({"check": name, "pass": ok}), file=out)
        print(
            json.dumps({"self_test": "pass" if passed else "fail", "run_id": run_id, "seconds": round(elapsed, 3)}),
            file=out,
        )
    else:
        for name, ok, _ in checks:
            print(f"{'pass' if ok else 'FAIL'}  {name}", file=out)
        print(f"self-test {'passed' if passed else 'FAILED'} in {elapsed:.2f}s (run {run_id})", file=out)
    return 0 if passed else 1
