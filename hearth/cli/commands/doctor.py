"""`hearth doctor`: check state, config, profiles, prompts, queue, Ollama, sandbox, credentials, units."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.model import DEFAULT_NUM_CTX
from hearth.errors import HearthError, UsageError
from hearth.render import print_json
from hearth.settings import Settings

if TYPE_CHECKING:
    from hearth.doctor.finding import Finding
    from hearth.run.profiles import Profile

EPILOG = """\
exit codes: 0 no errors (warnings allowed), 1 at least one error, 2 bad usage.
An error is what makes runs fail or unsafe; a warning works but deserves a look.
The prompt size is judged against --num-ctx: a warning past 50% of it, an error past 90%."""
WARN_SHARE, ERROR_SHARE = 0.5, 0.9


def register(sub: argparse._SubParsersAction) -> None:
    doctor = sub.add_parser(
        "doctor",
        help="check that this machine is ready to run agents",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    doctor.add_argument(
        "--agent-name",
        "--agent",
        dest="agent_name",
        metavar="NAME",
        help="check only this profile (and show its prompt with --context)",
    )
    doctor.add_argument(
        "--context",
        action="store_true",
        help="print each part of the system prompt with its source and size, and the total",
    )
    doctor.add_argument("--workspace", type=Path, help="with --context: include this workspace's context file")
    doctor.add_argument(
        "--num-ctx",
        type=int,
        default=DEFAULT_NUM_CTX,
        help=f"the model's context window in tokens (default {DEFAULT_NUM_CTX})",
    )
    doctor.add_argument("--json", action="store_true")
    doctor.set_defaults(handler=run_doctor)


def run_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from agent.model.backends import probe
    from hearth.doctor import diagnose
    from hearth.doctor.finding import summary_counts

    if args.workspace is not None and not args.workspace.is_dir():
        raise UsageError(f"workspace {args.workspace} is not a directory")
    findings, profiles = diagnose(settings, agent_name=args.agent_name, probe=probe)
    previews = {p.name: _preview(settings, p, args) for p in profiles}
    findings += [_size_finding(name, shown, args.num_ctx) for name, shown in previews.items() if shown]
    chosen = args.agent_name or "default"
    context = _context_report(chosen, previews.get(chosen), args.num_ctx) if args.context else None
    counts = summary_counts(findings)
    if args.json:
        print_json(
            {
                "ok": counts["error"] == 0,
                "counts": counts,
                "findings": [f.as_dict() for f in findings],
                **({"context": context} if args.context else {}),
            }
        )
    else:
        _print_findings(settings, findings, counts)
        if args.context:
            _print_context(chosen, context)
    return 1 if counts["error"] else 0


def _preview(settings: Settings, profile: Profile, args: argparse.Namespace) -> dict[str, Any] | None:
    from hearth.run.prompting import preview

    workspace = args.workspace if args.context and profile.name == (args.agent_name or "default") else None
    try:
        prompt, schemas = preview(settings, profile, num_ctx=args.num_ctx, workspace=workspace)
    except (HearthError, ValueError):
        return None  # the file problem is already a finding of its own
    parts = [{"label": p.label, "source": p.source, "chars": p.chars, "text": p.text} for p in prompt.parts]
    tools = [{"name": s["function"]["name"], "chars": len(json.dumps(s))} for s in schemas]
    # json.dumps of the list: what the schemas cost as a whole, separators included
    schema_chars = len(json.dumps(schemas))
    return {"parts": parts, "prompt_chars": len(prompt.text), "tool_schema_chars": schema_chars, "tools": tools}


def _tokens(shown: dict[str, Any]) -> int:
    from agent.context.compaction import CHARS_PER_TOKEN

    return (shown["prompt_chars"] + shown["tool_schema_chars"]) // CHARS_PER_TOKEN


def _size_finding(name: str, shown: dict[str, Any], num_ctx: int) -> Finding:
    from hearth.doctor.finding import Finding

    tokens = _tokens(shown)
    share = tokens / num_ctx
    status = "error" if share > ERROR_SHARE else "warn" if share > WARN_SHARE else "ok"
    return Finding(
        "prompt size",
        status,
        f"{name}: the system prompt and tools take ~{tokens:,} tokens, {share:.0%} of num_ctx {num_ctx:,}",
    )


def _context_report(name: str, shown: dict[str, Any] | None, num_ctx: int) -> dict[str, Any] | None:
    if shown is None:
        return None
    return {"agent": name, **shown, "estimated_tokens": _tokens(shown), "num_ctx": num_ctx}


def _print_findings(settings: Settings, findings: list[Finding], counts: dict[str, int]) -> None:
    print(f"hearth doctor: state {settings.state_dir}, config {settings.config_dir}, Ollama {settings.model_host}")
    for f in findings:
        print(f"  {f.status:<5}  {f.check:<16} {f.message}")
    print(f"{counts['error']} error(s), {counts['warn']} warning(s)")


def _print_context(name: str, context: dict[str, Any] | None) -> None:
    if context is None:
        print(f"\nno prompt to show for agent {name!r}: see the errors above")
        return
    print(f"\nsystem prompt of agent {name!r}, part by part:")
    for part in context["parts"]:
        print(f"\n--- {part['label']}  ({part['source']}, {part['chars']:,} chars)")
        print(part["text"])
    total = context["prompt_chars"] + context["tool_schema_chars"]
    print(f"\ntools shown ({len(context['tools'])}), each one's share of the prompt and tools:")
    for tool in sorted(context["tools"], key=lambda t: -t["chars"]):
        print(f"  {tool['name']:<20} {tool['chars']:>6,} chars  {tool['chars'] / total:>4.0%}")
    share = context["estimated_tokens"] / context["num_ctx"]
    print(
        f"\ntotal: {context['prompt_chars']:,} chars of prompt + {context['tool_schema_chars']:,} chars of tool "
        f"schemas, ~{context['estimated_tokens']:,} tokens = {share:.0%} of num_ctx {context['num_ctx']:,}"
    )
