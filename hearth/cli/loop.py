"""`hearth-loop`: run one goal to completion on a local Ollama model, or prove the path with --self-test."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from agent.loop import Outcome
from agent.model import DEFAULT_NUM_CTX
from agent.model.host import parse_host
from agent.safety.policy import MODES
from hearth.cli.main import add_common, flush_alerts, parse, use_state_dir
from hearth.errors import HearthError, UsageError
from hearth.logs import configure as configure_logging
from hearth.render import JSON_EVENTS_HELP, visible_line
from hearth.run.exits import EXIT_CODES, exit_code
from hearth.run.goal import GoalRequest
from hearth.run.runner import run_goal
from hearth.run.services import load_redactor
from hearth.settings import Settings, tool_names

EPILOG = f"""\
exit codes:
  {EXIT_CODES["done"]}    done: the model gave its final summary
  {EXIT_CODES["failed"]}    failed: the model kept giving unusable replies, the server sent garbage, or a time limit hit
  {EXIT_CODES["usage"]}    bad usage: bad arguments, empty goal, unknown mode or agent profile, a broken profile or
       prompt file, unusable workspace or state directory
  {EXIT_CODES["iteration_limit"]}    iteration limit: stopped at --max-iterations (a summary of what was done is recorded);
       a marathon not done after its last leg (leg_limit) or whose legs stopped changing anything (no_progress);
       the model made the same call three times in a row with nothing changed (stuck)
  {EXIT_CODES["model_unavailable"]}    model unavailable: the model server unreachable, failing, or without the model
  {EXIT_CODES["tripped"]}    tripped: something touched a decoy secret (a tripwire); the run was stopped
  {EXIT_CODES["budget_exceeded"]}    budget exceeded: the run's --max-tokens, or a daily token budget, was spent (a summary is
       recorded; `hearth budget` shows what is left and when it resets)
  {EXIT_CODES["interrupted"]}  interrupted by SIGINT or SIGTERM (recorded as interrupted)
  {EXIT_CODES["internal"]}   internal error (a bug in hearth; --debug shows the traceback)
  --self-test exits 0 when every check passes, 1 otherwise.

environment:
  HEARTH_STATE_DIR   audit database, live state and per-run workspaces (default /var/lib/hearth)
  HEARTH_CONFIG_DIR  agent profiles (agents/NAME/AGENTS.md, agent.toml), prompts/*.md, SOUL.md (default /etc/hearth)
  HEARTH_MODEL       the model when neither --model nor the profile nor a router rule names one
                     (default qwen2.5-coder; $HEARTH_CONFIG_DIR/router.toml holds the rules)
  HEARTH_DAILY_TOKENS   the box's daily token budget (also $HEARTH_CONFIG_DIR/budget.toml, per agent too)
  HEARTH_MODE, HEARTH_MAX_ITERATIONS   the same for --mode (default auto) and --max-iterations (default 12)
  HEARTH_MODEL_HOST  the model server, [KIND+]URL: an Ollama URL, or openai+URL for a server speaking
                     /v1/chat/completions (llama.cpp, vLLM, LM Studio); else OLLAMA_HOST, else 127.0.0.1:11434
  HEARTH_MODEL_HOSTS several servers, label=[KIND+]URL,... ($HEARTH_CONFIG_DIR/router.toml's [[host]] too)
  HEARTH_SANDBOX     command sandbox: auto (default), bwrap, landlock, or none (unsafe: no OS wall;
                     warned about and recorded on every run)
  HEARTH_AUTO_COMMANDS        command heads auto mode runs without asking, e.g. git,ls,pytest
  HEARTH_APPROVAL_WAIT        how long an approval waits for a person (90s, 30m, 8h; default 12h); silence is a deny
  HEARTH_MODEL_TIMEOUT_S, HEARTH_MODEL_BACKOFF_S   how long to wait for the server to begin answering,
                     then for each chunk (default 600), and the retry backoff (HEARTH_OLLAMA_* still read)
  HEARTH_REPLY_TOKENS       the most tokens one model reply may have (default 2048)
  HEARTH_RECALL_CHARS       auto-recall budget of the first message (default 2000; 0 turns it off)
  HEARTH_EMBED_MODEL        Ollama embedding model of semantic recall (default nomic-embed-text; off: text only)
  HEARTH_NET_PRIVATE_HOSTS  comma-separated LAN hosts network tools may reach at private addresses
  HEARTH_SEARCH_URL         a SearXNG /search (its JSON API) web_search asks instead of DuckDuckGo
  HEARTH_SANDBOX_EXPOSE     more read-only paths commands see, colon-separated (a tool under /opt)
  HEARTH_COMMAND_MAX_PROCS, HEARTH_COMMAND_MEMORY_MB, HEARTH_COMMAND_CPU_S   the run's caps for its
                     commands (default 256 processes, 1024 MiB, 1800 CPU seconds in all)
  HEARTH_TRIPWIRES          decoy secrets: home (default: in the sandbox home), workspace (there too), off
  HEARTH_TRIPWIRE_ACTION    stop (default: the run ends `tripped`) or record
  HEARTH_LOG_LEVEL          libraries' logs on stderr at DEBUG, INFO, ... (credential values always redacted)
  CREDENTIALS_DIRECTORY     systemd's credentials; values there win over hearth's store

approvals:
  In auto mode a dangerous call (run_command, ...) asks first. At a terminal you answer in place
  (once / always for this run / deny); otherwise the run waits for `hearth approve ID` or
  `hearth deny ID` from another shell (`hearth approvals` lists them). A few commands are denied
  in every mode, bypass included: wiping / or $HOME, mkfs, dd onto a disk, fork bombs, shutdown.
"""


def build_parser(settings: Settings) -> argparse.ArgumentParser:
    """`hearth-loop`'s arguments, by group, in the order `--help` shows them."""
    parser = argparse.ArgumentParser(
        prog="hearth-loop",
        description="Run one goal to completion with a local model, tools and a full audit.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(parser)
    _add_goal_arguments(parser, settings)
    _add_policy_arguments(parser)
    _add_model_arguments(parser, settings)
    _add_reach_arguments(parser)
    _add_long_work_arguments(parser)
    _add_switches(parser)
    return parser


def _add_goal_arguments(parser: argparse.ArgumentParser, settings: Settings) -> None:
    """The goal, and what the run is: its model, name, token budget, agent profile and workspace."""
    parser.add_argument("goal", nargs="?", help="what the agent should do")
    # None means "not given": the agent profile's value applies, else hearth's default
    parser.add_argument(
        "--model", help=f"Ollama model, or auto (default: the profile's, else the router's, else {settings.model})"
    )
    parser.add_argument("--label", help="a name for the run, kept in the audit and shown with it")
    parser.add_argument("--max-tokens", type=int, help="tokens this run may spend (default: the profile's, else none)")
    parser.add_argument(
        "--agent-name",
        "--agent",
        dest="agent_name",
        metavar="NAME",
        default="default",
        help="agent profile in $HEARTH_CONFIG_DIR/agents/NAME (default: default)",
    )
    parser.add_argument(
        "--workspace", type=Path, help="work here (made if missing; its parent must exist) instead of a fresh one"
    )


def _add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    """What the run may do: its mode, its iteration cap, its tools."""
    parser.add_argument(
        "--mode",
        help=f"{' | '.join(MODES)}: plan runs read-only tools, auto asks before "
        "dangerous ones, bypass runs all but the hard floor (default: the profile's, else auto)",
    )
    parser.add_argument(
        "--max-iterations",
        "--max-iters",
        dest="max_iters",
        type=int,
        metavar="N",
        help="iteration cap (default: the profile's, else 12)",
    )
    parser.add_argument(
        "--allowed-tools",
        "--tools",
        dest="allowed_tools",
        metavar="NAME,NAME",
        help="the only tools this run may use, checked before it starts (default: the profile's list, else all)",
    )


def _add_model_arguments(parser: argparse.ArgumentParser, settings: Settings) -> None:
    """The model server and what one reply and the window may hold."""
    parser.add_argument(
        "--host",
        "--ollama-host",
        dest="model_host",
        default=settings.model_host,
        metavar="[KIND+]URL",
        help="the model server: an Ollama URL, or openai+URL for an OpenAI-compatible one (llama.cpp, vLLM); "
        "default $HEARTH_MODEL_HOST, else $OLLAMA_HOST, else 127.0.0.1:11434",
    )
    parser.add_argument(
        "--reply-tokens",
        type=int,
        metavar="N",
        help="the most tokens one model reply may have (default: the profile's, else $HEARTH_REPLY_TOKENS, else 2048)",
    )
    parser.add_argument(
        "--num-ctx",
        type=int,
        default=DEFAULT_NUM_CTX,
        help=f"context window sent to Ollama (default {DEFAULT_NUM_CTX})",
    )


def _add_reach_arguments(parser: argparse.ArgumentParser) -> None:
    """What the run may reach outside its workspace: credentials and network hosts."""
    parser.add_argument(
        "--credential",
        action="append",
        default=[],
        metavar="NAME",
        help="a credential this run may use as cred:NAME (repeatable; see hearth creds)",
    )
    parser.add_argument(
        "--egress",
        action="append",
        default=[],
        metavar="HOST",
        help="only these hosts (or *.domain) for network tools (repeatable; default any public host)",
    )


def _add_long_work_arguments(parser: argparse.ArgumentParser) -> None:
    """A follow-up of an ended run, or a marathon in legs and what its done needs."""
    parser.add_argument(
        "--continue",
        dest="continue_run",
        metavar="RUN",
        help="a follow-up of an ended run: its workspace, with its goal, summary and last messages first",
    )
    parser.add_argument(
        "--marathon", type=int, metavar="N", help="run in legs (at most N, 1-20) until a judge says the goal is done"
    )
    parser.add_argument(
        "--check-file",
        action="append",
        default=[],
        metavar="PATH",
        help="with --marathon: done needs this workspace file too (repeatable)",
    )
    parser.add_argument(
        "--check-command", metavar="CMD", help="with --marathon: done needs this command to exit 0 (in the sandbox)"
    )


def _add_switches(parser: argparse.ArgumentParser) -> None:
    """The on/off switches: commands' network, JSON events, the self-test."""
    parser.add_argument(
        "--network",
        action="store_true",
        default=None,
        help="give commands network, only through hearth's guarded proxy (default: the profile's, else none)",
    )
    parser.add_argument("--json", action="store_true", help=JSON_EVENTS_HELP)
    parser.add_argument("--self-test", action="store_true", help="prove the whole path with a scripted model")


def _marathon(args: argparse.Namespace, request: GoalRequest, settings: Settings) -> Outcome:
    """`--marathon N`: legs until done (hearth/run/long/marathon.py, loaded only for a marathon)."""
    from pydantic import ValidationError

    from hearth.queue.longspec import Deliverable, Marathon
    from hearth.run.long.marathon import run_marathon

    if args.marathon is None:
        raise UsageError("--check-file and --check-command need --marathon N")
    if args.continue_run:
        raise UsageError("--continue and --marathon cannot be combined; continue a run, or run a marathon")
    try:
        given = args.check_file or args.check_command
        check = Deliverable(files=args.check_file, command=args.check_command) if given else None
        plan = Marathon(max_legs=args.marathon, check=check)
    except ValidationError as exc:
        problem = exc.errors(include_url=False)[0]
        where, message = ".".join(map(str, problem["loc"])), problem["msg"].removeprefix("Value error, ")
        raise UsageError(f"--marathon: {where} {message[:1].lower()}{message[1:]}") from None
    return run_marathon(request, plan, settings, json_lines=args.json)[1]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        return _main(argv)
    finally:
        flush_alerts()


def _main(argv: list[str]) -> int:
    try:
        settings = Settings.from_env()
    except HearthError as exc:
        print(f"hearth-loop: {exc}", file=sys.stderr)
        return exc.exit_code
    args = parse(build_parser(settings), argv)
    try:
        settings = _configured(args, settings)
    except ValueError as exc:
        print(f"hearth-loop: --host: {exc}", file=sys.stderr)
        return EXIT_CODES["usage"]
    try:
        return _run(args, settings)
    except HearthError as exc:
        print(visible_line(f"hearth-loop: {exc}"), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("hearth-loop: interrupted", file=sys.stderr)
        return EXIT_CODES["interrupted"]
    except Exception as exc:  # a bug: one line, the traceback only on request
        if args.debug or os.environ.get("HEARTH_DEBUG"):
            traceback.print_exc()
        print(f"hearth-loop: internal error: {type(exc).__name__}: {exc} (rerun with --debug)", file=sys.stderr)
        return EXIT_CODES["internal"]


def _configured(args: argparse.Namespace, settings: Settings) -> Settings:
    """The settings with --state-dir and --host applied, and logging set up; ValueError for a bad --host."""
    use_state_dir(args.state_dir)
    if args.state_dir:  # read again: --state-dir is now the environment's
        settings = Settings.from_env()
    parse_host(args.model_host)
    settings = Settings(**{**settings.__dict__, "model_host": args.model_host})
    configure_logging(settings.log_level, lambda: load_redactor(settings))
    return settings


def _run(args: argparse.Namespace, settings: Settings) -> int:
    """The self-test, a marathon or one run, and its exit code."""
    if args.self_test:
        from hearth.selftest import run_self_test

        return run_self_test(json_lines=args.json)
    if args.goal is None:
        raise UsageError('no goal given; usage: hearth-loop [options] "GOAL"')
    request = _request(args)
    if args.marathon is not None or args.check_file or args.check_command:
        outcome = _marathon(args, request, settings)
    else:
        _, outcome = run_goal(request, settings, json_lines=args.json)
    # for a script, on stderr; at a terminal the run's own last line (`== status: why`) said it already
    if outcome.status != "done" and (args.json or not sys.stdout.isatty()):
        print(visible_line(f"hearth-loop: {outcome.status}: {outcome.error}"), file=sys.stderr)
    return exit_code(outcome.status)


def _request(args: argparse.Namespace) -> GoalRequest:
    """The run's request from the command line; None where an option was not given."""
    return GoalRequest(
        goal=args.goal,
        model=args.model,
        agent_name=args.agent_name,
        mode=args.mode,
        max_iters=args.max_iters,
        workspace=args.workspace,
        num_ctx=args.num_ctx,
        credentials=args.credential,
        egress=args.egress,
        allowed_tools=tool_names(args.allowed_tools) if args.allowed_tools is not None else None,
        continues=args.continue_run,
        network=args.network,
        label=args.label,
        max_tokens=args.max_tokens,
        reply_tokens=args.reply_tokens,
    )


if __name__ == "__main__":
    sys.exit(main())
