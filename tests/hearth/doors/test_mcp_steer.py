"""The MCP server's `steer_run`, end to end over `/mcp` with the official client: a real `hearth
serve` and `hearth watch`, the fake Ollama recording what the model was sent. The steer reaches
the model after the next tool result and is recorded as a steer step from the MCP caller; an
ended run, an unknown one, a viewer and an operator who may not approve in the run's profile are
refused in one line, and nothing is left for a run."""

from __future__ import annotations

from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agent.steer import STEER_MARK
from hearth.audit.store import AuditStore
from hearth.settings import Settings
from hearth.users import roster
from tests.fake_ollama import FakeOllama, Gated, assert_every_request_legal, final_answer, tool_call
from tests.hearth.doors.test_mcp_server import TOKENS, data, error, over_http, run, until
from tests.queue_support import rows
from tests.web_support import Center


def as_user(center: Center, token: str) -> Client:
    headers = {"Authorization": f"Bearer {token}"}
    return Client(streamable_http_client(f"{center.url}/mcp", http_client=httpx2.AsyncClient(headers=headers)))


def test_steer_run_reaches_the_model_after_the_next_tool_result_and_is_refused_where_it_must_be(
    state_dir: Path,
) -> None:
    settings = Settings.from_env()
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    with AuditStore(settings.audit_path) as audit:
        launcher = roster.add(audit, "lena", "operator", by="test")
        roster.grant(audit, "lena", "default", "launch", by="test")  # launches there, may not approve
    first = Gated(tool_call("list_files", {"path": "."}))
    with FakeOllama([first, final_answer("Listed the top level.")]) as fake, Center(settings, tokens=TOKENS) as center:
        center.start_watch(fake.url)

        async def scenario() -> None:
            async with over_http(center, "operator") as operator, over_http(center, "viewer") as viewer:
                run_id = data(await operator.call_tool("launch_run", {"goal": "list"}))["run_id"]
                await until(operator, run_id, lambda s: s["status"] == "running" and bool(fake.requests))
                viewed = error(await viewer.call_tool("steer_run", {"run_id": run_id, "text": "hi"}))
                assert "needs the operator role" in viewed
                async with as_user(center, launcher) as lena:
                    no_right = error(await lena.call_tool("steer_run", {"run_id": run_id, "text": "hi"}))
                assert "approve" in no_right and "lena" in no_right
                given = data(await operator.call_tool("steer_run", {"run_id": run_id, "text": "Only the top level."}))
                assert given["by"] == "mcp:token:operator" and given["run_id"] == run_id
                first.release.set()
                await until(operator, run_id, lambda s: s["status"] == "done")
                ended = error(await operator.call_tool("steer_run", {"run_id": run_id, "text": "And the docs?"}))
                assert f"run {run_id} has ended (done)" in ended
                unknown = error(await operator.call_tool("steer_run", {"run_id": "no-such-run", "text": "hi"}))
                assert "no run 'no-such-run'" in unknown

        try:
            run(scenario)
        finally:
            first.release.set()
    told = fake.requests[1]["messages"]
    assert told[-2]["role"] == "tool"
    assert told[-1] == {
        "role": "user",
        "content": f"{STEER_MARK}mcp:token:operator: a person watching this run, not a tool result]\nOnly the top level.",
    }
    assert_every_request_legal(fake.requests)
    [step] = rows(state_dir, "select detail from steps where kind = 'steer'")
    assert step["detail"] == "from mcp:token:operator: Only the top level."
    assert not (settings.state_dir / "state" / "steers" / "no-such-run").exists()
