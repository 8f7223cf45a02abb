"""hearth as an MCP server: its runs, approvals and knowledge as tools an MCP client can call.

Built with the official SDK's server side (`MCPServer`). Two transports, one set of tools:
`hearth mcp serve` (stdio, for a desktop agent on this machine; its role is the command's
`--role`, operator by default as the CLI is, for the CLI's user) and `/mcp` on `hearth serve`
(streamable HTTP; the command center's tokens and users' own: hearth/doors/mount.py checks them
before the SDK sees the request). Reading is every user's; launching, deciding and stopping are
asked of hearth/users/access.py in the profile concerned (a steer, `steer_run`, as whoever may
approve the run's calls, through hearth/dispatch/steer.py, the CLI's own function).

A run launched here is an ordinary run: queued through hearth.queue.submit with source `api:mcp`
and `requested_by` naming the caller (`mcp:USER` on stdio, `mcp:token:ROLE` over HTTP), under the
profile's tools, mode ceilings, walls, budget and approvals. A refusal is a tool error in one line.
"""

from __future__ import annotations

import getpass
import json
import re
from collections.abc import Callable
from dataclasses import asdict
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from agent.clock import utc_now
from hearth.errors import HearthError
from hearth.settings import Settings
from hearth.users.access import User, login_user
from hearth.web.reader import Reader, RunFilter

SOURCE = "api:mcp"
CAP = 2000  # characters of a step's arguments and output shown by show_run (the run page has all)
RoleOf = Callable[[Context], tuple[User, str]]  # (user, who) of the caller
Listed = Annotated[CallToolResult, list[dict[str, Any]]]  # a list's schema, answered by `listed`


class Hearth:
    """What the tools do, as plain functions over the settings (each tool runs one in a thread)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.reader = Reader(settings.audit_path)

    def launch(self, goal: str, profile: str, mode: str, user: User, who: str) -> dict[str, Any]:
        from hearth.audit.store import new_run_id
        from hearth.dispatch.launchers import heal
        from hearth.queue.intake import RequestRefused, build_request
        from hearth.run.profiles import load_profile
        from hearth.users.launch import submit_as

        load_profile(self.settings.config_dir, profile)  # an unknown profile: refused, listing them
        obj: dict[str, Any] = {"id": new_run_id(), "goal": goal, "agent_name": profile, "source": SOURCE}
        obj["requested_by"] = who
        if mode:
            obj["mode"] = mode
        try:
            request = build_request(obj, file_id=None).request
        except RequestRefused as exc:
            raise HearthError(f"invalid request: {exc}") from None
        done = submit_as(request, self.settings, user, requested_by=who, heal=heal)
        return {"run_id": done.id, "status": "queued", "next": "run_status(run_id) until it has ended"}

    def status(self, run_id: str) -> dict[str, Any]:
        if self.reader.run(run_id) is None and self._queued(run_id):
            return {
                "id": run_id,
                "status": "queued",
                "tokens": 0,
                "summary": None,
                "error": None,
                "waiting_approvals": [],
            }
        run = self._run(run_id)
        keep = ("id", "status", "agent_name", "model", "mode", "source", "requested_by", "iterations")
        waiting = [_approval(a) for a in self.reader.approvals_of(run_id) if a["status"] == "pending"]
        tokens = int(run.get("tokens_in") or 0) + int(run.get("tokens_out") or 0)
        return {
            **{k: run.get(k) for k in keep},
            "tokens": tokens,
            "summary": run.get("summary"),
            "error": run.get("error"),
            "waiting_approvals": waiting,
        }

    def show(self, run_id: str, diff: bool) -> dict[str, Any]:
        from hearth.run.diffs import checkpoint_range, history_of, workspace_diff

        shown = self.status(run_id)
        steps = [
            {
                "seq": s["seq"],
                "kind": s["kind"],
                "tool": s.get("tool"),
                "ok": s.get("ok"),
                "arguments": s.get("arguments"),
                "output": s.get("output"),
            }
            for s in self.reader.steps(run_id, cap=CAP)
        ]
        shown["goal"], shown["steps"] = self._run(run_id).get("goal"), steps
        if diff:
            checkpoints = self.reader.checkpoints(run_id)
            compare = checkpoint_range(checkpoints)
            workspace = self._run(run_id).get("workspace") or ""
            shown["diff"] = (
                workspace_diff(self.settings, workspace, compare[0], compare[1], history_of(checkpoints))
                if compare
                else None
            )
        return shown

    def runs(self, status: str, agent: str, source: str, limit: int) -> list[dict[str, Any]]:
        found, _ = self.reader.runs_page(RunFilter(status=status, agent_name=agent, source=source))
        return found[: max(1, min(limit, 50))]

    def approvals(self) -> list[dict[str, Any]]:
        return [_approval(a) for a in self.reader.pending_approvals(utc_now())]

    def decide(self, approval_id: str, verdict: str, reason: str, user: User, who: str) -> dict[str, Any]:
        from hearth.leash.decisions import By, decide

        channel, _, name = who.partition(":")
        done = decide(self.settings, approval_id, verdict, By(channel, name), user=user, note=reason).approval
        return {"approval_id": done.id, "run_id": done.run_id, "status": done.status, "decided_by": done.decided_by}

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        from agent.knowledge.store import KnowledgeStore

        if not self.settings.knowledge_path.exists():
            return []
        with KnowledgeStore(self.settings.knowledge_path) as store:
            return [asdict(hit) for hit in store.search(query, k=max(1, min(limit, 20)))]

    def stop(self, run_id: str, user: User, who: str) -> dict[str, Any]:
        from hearth.dispatch.stop import stop_as

        return vars(stop_as(self.settings, run_id, user, by=who))

    def steer(self, run_id: str, text: str, user: User, who: str) -> dict[str, Any]:
        from hearth.dispatch.steer import give_as

        given = give_as(self.settings, run_id, user, text, by=who)
        said = "its model reads it after the run's next tool result; show_run(run_id) shows it as a steer step"
        return {"run_id": run_id, "by": given.by, "at": given.at, "next": said}

    def _queued(self, run_id: str) -> bool:
        """A request not yet started: in the queue, or claimed and not yet a run row."""
        from hearth.ids import ID_PATTERN
        from hearth.queue.directory import Queue

        if not re.fullmatch(ID_PATTERN, run_id):
            return False
        queue = Queue(self.settings.queue_dir)
        return (queue.root / f"{run_id}.json").exists() or queue.known(run_id) == "claimed"

    def _run(self, run_id: str) -> dict[str, Any]:
        run = self.reader.run(run_id)
        if run is None:
            raise HearthError(f"no run {run_id[:80]!r}; list_runs shows the latest")
        return run


def _approval(row: dict[str, Any]) -> dict[str, Any]:
    keep = ("id", "run_id", "tool", "reason", "status", "requested_at", "expires_at")
    try:
        arguments = json.loads(row.get("arguments") or "{}")
    except ValueError:
        arguments = row.get("arguments")
    return {**{k: row.get(k) for k in keep}, "arguments": arguments}


def listed(rows: list[dict[str, Any]], empty: str) -> CallToolResult:
    """A list as a tool answers it: the list as structured content, and as text one JSON array (an
    empty one in words: `[]` would be no text at all to a client that reads only the text)."""
    text = json.dumps(rows, ensure_ascii=False, default=str) if rows else empty
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content={"result": list(rows)})


def build(settings: Settings, role_of: RoleOf) -> MCPServer:
    """The server and its tools; `role_of` says who calls (stdio: the command's role; HTTP: the token's)."""
    server = MCPServer(
        "hearth",
        instructions="hearth runs agent goals on local models, sandboxed and audited. Launch a run, "
        "follow it with run_status, read it with show_run; an operator decides its approvals.",
        # the SDK sets the root logger to this level: at its INFO, every httpx request of the whole
        # process (the command center's, `serve --watch`'s) was a line on stderr; HEARTH_LOG_LEVEL's
        # own setting was made before and stays
        log_level="WARNING",
    )
    hearth, call = Hearth(settings), _Caller(role_of)
    _add_run_tools(server, hearth, call)
    _add_approval_tools(server, hearth, call)
    _add_knowledge_tools(server, hearth, call)
    return server


class _Caller:
    """One tool's work for its caller: refused without the role it needs, run in a thread, a
    HearthError as the tool error's one line. An operator's work is also told who asks."""

    def __init__(self, role_of: RoleOf) -> None:
        self.role_of = role_of

    async def __call__(self, ctx: Context, need: str, fn: Callable[..., Any], *args: Any) -> Any:
        user, who = self.role_of(ctx)
        if not user.name or user.disabled:
            raise ToolError(
                "refused: a viewer or operator token is needed" + (" (this user is disabled)" * user.disabled)
            )
        if need == "operator" and not user.operates:
            raise ToolError(f"refused: this needs the operator role (you are {user.role})")
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args, *([user, who] if need == "operator" else [])))
        except HearthError as exc:
            raise ToolError(str(exc)) from None


def _add_run_tools(server: MCPServer, hearth: Hearth, call: _Caller) -> None:
    """Launch, follow, read, list and stop runs."""

    @server.tool()
    async def launch_run(
        ctx: Context, goal: str, profile: str = "default", mode: Literal["", "plan", "auto", "bypass"] = ""
    ) -> dict[str, Any]:
        """Start an agent run of `goal` under an agent profile (operator only). Costs model tokens
        (counted against the daily budgets) and may change files in the run's own workspace, run
        commands in its sandbox and reach the network as the profile allows; dangerous calls wait
        for an operator's approval. `mode` stays within the profile's ceiling. Returns the run id."""
        return dict(await call(ctx, "operator", hearth.launch, goal, profile, mode))

    @server.tool()
    async def run_status(ctx: Context, run_id: str) -> dict[str, Any]:
        """A run's status, tokens, summary and any approval it waits for. Free: reads the audit."""
        return dict(await call(ctx, "viewer", hearth.status, run_id))

    @server.tool()
    async def show_run(ctx: Context, run_id: str, diff: bool = False) -> dict[str, Any]:
        """A run's goal, steps (each cut to 2000 characters), summary and, with diff, what it changed
        in its workspace. Free: reads the audit and the run's history."""
        return dict(await call(ctx, "viewer", hearth.show, run_id, diff))

    @server.tool()
    async def list_runs(ctx: Context, status: str = "", agent: str = "", source: str = "", limit: int = 20) -> Listed:
        """The latest runs (at most 50), newest first, filtered by status, agent profile or source
        (api:NAME, cli, command-center, timer). Free: reads the audit."""
        return listed(await call(ctx, "viewer", hearth.runs, status, agent, source, limit), "no run matches")

    @server.tool()
    async def stop_run(ctx: Context, run_id: str) -> dict[str, Any]:
        """Stop a queued or running run (operator only); it ends `interrupted` and its waiting
        approvals are cancelled. Recorded with who stopped it. Changes nothing else."""
        return dict(await call(ctx, "operator", hearth.stop, run_id))

    @server.tool()
    async def steer_run(ctx: Context, run_id: str, text: str) -> dict[str, Any]:
        """Tell a working run something (at most 4000 characters; for those who may approve its
        calls): its model reads `text` after the run's next tool result, marked as a person's word,
        and it is recorded as a steer step with who sent it. A run that has ended refuses it (start
        a new run instead). Costs nothing itself; the run's next model call reads it."""
        return dict(await call(ctx, "operator", hearth.steer, run_id, text))


def _add_approval_tools(server: MCPServer, hearth: Hearth, call: _Caller) -> None:
    """The calls waiting for a person, and the decision on one."""

    @server.tool()
    async def list_approvals(ctx: Context) -> Listed:
        """Every approval waiting for a person: the run, the exact tool call, until when. Free."""
        return listed(await call(ctx, "viewer", hearth.approvals), "no call waits for a decision")

    @server.tool()
    async def decide_approval(
        ctx: Context, approval_id: str, decision: Literal["approve", "deny"], reason: str = ""
    ) -> dict[str, Any]:
        """Approve or deny one waiting call (operator only): approving lets that exact call run in the
        run's sandbox (it may change files or run a command); denying tells the model `reason`.
        Recorded with who decided. Costs nothing itself; the run then goes on."""
        return dict(await call(ctx, "operator", hearth.decide, approval_id, decision, reason))


def _add_knowledge_tools(server: MCPServer, hearth: Hearth, call: _Caller) -> None:
    """The knowledge base, searched."""

    @server.tool()
    async def search_knowledge(ctx: Context, query: str, limit: int = 5) -> Listed:
        """Search hearth's knowledge base (at most 20 hits). Free: reads the local index, no model call."""
        return listed(await call(ctx, "viewer", hearth.search, query, limit), "nothing in the knowledge base matches")


def stdio_role(settings: Settings, role: str) -> RoleOf:
    """The CLI's user on stdio; `--role viewer` makes it read only, whoever it is."""
    who, user = f"mcp:{getpass.getuser()}", login_user(settings)
    if role != "operator":
        user = User(user.name, "viewer", user.disabled)
    return lambda ctx: (user, who)


def http_role(ctx: Context) -> tuple[User, str]:
    """The user hearth/doors/mount.py found for this request's token (on the ASGI scope's state)."""
    request = getattr(ctx.request_context, "request", None)
    user = getattr(request, "scope", {}).get("state", {}).get("hearth_user")
    if not isinstance(user, User):
        return User("", "viewer", disabled=True), "mcp:"
    return user, f"mcp:token:{user.name}" if user.built_in else f"mcp:{user.name}"
