"""hearth as an MCP server, driven by the official SDK's client over both transports: stdio
(`hearth mcp serve`, a real subprocess) and streamable HTTP (`/mcp` on the real `hearth serve`),
with a real `hearth watch` running what is launched against the fake Ollama."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from hearth.settings import Settings
from tests.conftest import ROOT
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.queue_support import rows
from tests.web_support import Center, seed_runs

TOKENS = {"operator": "operator-token-0123456789", "viewer": "viewer-token-0123456789"}
TOOLS = {
    "launch_run",
    "run_status",
    "show_run",
    "list_runs",
    "list_approvals",
    "decide_approval",
    "search_knowledge",
    "stop_run",
    "steer_run",
}


def data(result: Any) -> Any:
    """A tool's answer: its structured content (a list comes wrapped as {"result": [...]})."""
    assert not result.is_error, result.content
    found = result.structured_content
    return found["result"] if isinstance(found, dict) and set(found) == {"result"} else found


def error(result: Any) -> str:
    assert result.is_error
    return " ".join(getattr(block, "text", "") for block in result.content)


async def until(client: Client, run_id: str, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Ask run_status until `check` holds (the run's own progress is the marker, not the clock)."""
    with anyio.fail_after(60):
        while True:
            status = data(await client.call_tool("run_status", {"run_id": run_id}))
            if check(status):
                return dict(status)
            await anyio.sleep(0.05)


def over_http(center: Center, role: str) -> Client:
    headers = {"Authorization": f"Bearer {TOKENS[role]}"}
    return Client(streamable_http_client(f"{center.url}/mcp", http_client=httpx2.AsyncClient(headers=headers)))


def over_stdio(state_dir: Path, role: str = "operator") -> Client:
    env = {**os.environ, "HEARTH_STATE_DIR": str(state_dir), "PYTHONPATH": str(ROOT)}
    argv = ["-m", "hearth.cli.main", "mcp", "serve", "--role", role]
    return Client(stdio_client(StdioServerParameters(command=sys.executable, args=argv, env=env, cwd=str(ROOT))))


def run(test: Callable[[], Awaitable[None]]) -> None:
    anyio.run(test)


def test_over_http_an_operator_launches_follows_approves_and_reads_a_run_a_viewer_may_not_decide(
    state_dir: Path,
) -> None:
    script = [tool_call("run_command", {"command": "echo mcp-marker"}), final_answer("ran it for the MCP client")]
    with FakeOllama(script) as fake, Center(Settings.from_env(), tokens=TOKENS) as center:
        center.start_watch(fake.url)

        async def scenario() -> None:
            async with over_http(center, "operator") as operator, over_http(center, "viewer") as viewer:
                assert {t.name for t in (await operator.list_tools()).tools} == TOOLS
                refused = error(await viewer.call_tool("launch_run", {"goal": "run echo"}))
                assert "needs the operator role" in refused
                run_id = data(await operator.call_tool("launch_run", {"goal": "run echo"}))["run_id"]
                waiting = await until(operator, run_id, lambda s: bool(s["waiting_approvals"]))
                [approval] = waiting["waiting_approvals"]
                assert approval["tool"] == "run_command" and approval["arguments"] == {"command": "echo mcp-marker"}
                assert [a["id"] for a in data(await viewer.call_tool("list_approvals", {}))] == [approval["id"]]
                no = error(
                    await viewer.call_tool("decide_approval", {"approval_id": approval["id"], "decision": "approve"})
                )
                assert "needs the operator role" in no
                decided = data(
                    await operator.call_tool("decide_approval", {"approval_id": approval["id"], "decision": "approve"})
                )
                assert decided["status"] == "approved" and decided["decided_by"] == "mcp:token:operator"
                await until(viewer, run_id, lambda s: s["status"] == "done")
                shown = data(await viewer.call_tool("show_run", {"run_id": run_id}))
                assert shown["summary"] == "ran it for the MCP client"
                assert any("mcp-marker" in (s["output"] or "") for s in shown["steps"] if s["tool"] == "run_command")
                listed = data(await viewer.call_tool("list_runs", {"source": "api:mcp"}))
                assert [r["id"] for r in listed] == [run_id]

        run(scenario)
    [row] = rows(state_dir, "select source, requested_by, status from runs")
    assert row == {"source": "api:mcp", "requested_by": "mcp:token:operator", "status": "done"}
    [decision] = rows(state_dir, "select status, decided_by from approvals")
    assert decision == {"status": "approved", "decided_by": "mcp:token:operator"}


def test_a_tool_answering_an_empty_list_says_so_in_text_and_a_full_one_as_json(state_dir: Path) -> None:
    """A client that reads only the text content (most chat clients) hears an empty answer as words."""
    seed_runs(state_dir, 2)
    with Center(Settings.from_env(), tokens=TOKENS) as center:

        async def scenario() -> None:
            async with over_http(center, "viewer") as viewer:
                for tool, words in (
                    ("list_approvals", "no call waits for a decision"),
                    ("search_knowledge", "nothing in the knowledge base matches"),
                ):
                    answer = await viewer.call_tool(tool, {"query": "x"} if tool == "search_knowledge" else {})
                    assert [c.text for c in answer.content] == [words] and data(answer) == []  # type: ignore[union-attr]
                full = await viewer.call_tool("list_runs", {})
                [text] = [c.text for c in full.content]  # type: ignore[union-attr]
                assert (
                    [r["id"] for r in json.loads(text)] == [r["id"] for r in data(full)] == ["seed-00001", "seed-00000"]
                )

        run(scenario)


def test_over_http_no_token_or_a_wrong_one_is_refused_before_the_sdk(state_dir: Path) -> None:
    with Center(Settings.from_env(), tokens=TOKENS) as center:
        bare = httpx2.post(f"{center.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        wrong = httpx2.post(f"{center.url}/mcp", json={}, headers={"Authorization": "Bearer not-the-token-at-all"})
        foreign = httpx2.post(
            f"{center.url}/mcp",
            json={},
            headers={"Authorization": f"Bearer {TOKENS['viewer']}", "Origin": "http://evil.example"},
        )
    assert bare.status_code == 401 and "token is needed" in bare.json()["error"]
    assert wrong.status_code == 401 and foreign.status_code == 403


def test_over_stdio_hearth_mcp_serve_launches_a_run_and_reads_its_result(state_dir: Path) -> None:
    from tests.cli_support import start_watch, stop_watch

    with FakeOllama([final_answer("stdio answer")]) as fake:
        watch = start_watch({"OLLAMA_HOST": fake.url, "HEARTH_STATE_DIR": str(state_dir)})
        try:

            async def scenario() -> None:
                async with over_stdio(state_dir) as client:
                    launched = data(await client.call_tool("launch_run", {"goal": "answer me", "mode": "plan"}))
                    done = await until(client, launched["run_id"], lambda s: s["status"] == "done")
                    assert done["summary"] == "stdio answer" and done["mode"] == "plan" and done["tokens"] == 120
                    assert data(await client.call_tool("search_knowledge", {"query": "anything"})) == []
                async with over_stdio(state_dir, "viewer") as viewer:
                    refused = error(await viewer.call_tool("stop_run", {"run_id": launched["run_id"]}))
                    assert "needs the operator role (you are viewer)" in refused
                    missing = error(await viewer.call_tool("run_status", {"run_id": "no-such-run"}))
                    assert "no run 'no-such-run'" in missing

            run(scenario)
        finally:
            stop_watch(watch)
    [row] = rows(state_dir, "select source, requested_by, goal from runs")
    assert row["source"] == "api:mcp" and row["requested_by"].startswith("mcp:") and row["goal"] == "answer me"
    assert json.loads(rows(state_dir, "select body from requests")[0]["body"])["source"] == "api:mcp"
