"""The floor: the tool-calling loop a user would write in an afternoon, on the same model and tools.

It speaks the OpenAI chat-completions API to the server directly (llama.cpp's llama-server, vLLM,
...): the goal as the user message under a one-line system prompt, hearth's own tools with their
names, descriptions and schemas, each call run by the tool's own function in the same kind of
workspace (so run_command is as sandboxed as hearth's), its result or its error sent back as the
tool message. No parser repair (a call written in the text is an answer), no validation or hints,
no recall, no cap on the reply; it stops at the first reply without a tool call, or at the cap on
iterations hearth has too.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from agent.knowledge.store import KnowledgeStore
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.builtin import TOOLS
from bench.chorekit.book import Chore, Limits, check
from bench.chorekit.figures import Run, clip
from bench.chorekit.tap import Tap

SYSTEM = (
    "You are a helpful assistant. Complete the user's task in the current directory by calling the tools "
    "you are given. When the task is done, reply with a short summary."
)
RESULT_LIMIT = 16_000  # characters of a tool's result sent back (the context window is 8k tokens)


class PlainSide:
    side = "plain"

    def __init__(self, model: str, tap: Tap, limits: Limits) -> None:
        self.model, self.tap, self.limits = model, tap, limits

    def run(self, chore: Chore, rep: int, scratch: Path) -> Run:
        run = Run(chore.name, self.side, rep)
        workspace = scratch / "workspace"
        chore.prepare(workspace)
        services = RunServices(knowledge_path=_seeded(chore, scratch / "knowledge.db"), run_id=f"plain-{chore.name}")
        mark, started = self.tap.mark(), time.monotonic()
        with Workspace(workspace, services=services) as ws, httpx.Client(timeout=self.limits.timeout_s) as client:
            run.status = self._loop(run, chore, ws, client, started + self.limits.timeout_s)
        if services.knowledge is not None:
            services.knowledge.close()
        run.wall_s = round(time.monotonic() - started, 2)
        run.take(self.tap.since(mark))
        verdict = check(chore, workspace)
        run.checked = verdict.passed
        run.passed = verdict.passed and run.status == "done"
        run.detail = verdict.detail
        return run

    def _loop(self, run: Run, chore: Chore, ws: Workspace, client: httpx.Client, deadline: float) -> str:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": chore.goal},
        ]
        tools = [TOOLS[name].schema() for name in chore.tools]
        for _ in range(self.limits.max_iters):
            if time.monotonic() > deadline:
                return "timeout"
            try:
                reply = self._ask(client, messages, tools)
            except (httpx.HTTPError, ValueError, KeyError, IndexError) as exc:
                run.calls.append({"error": clip(f"{type(exc).__name__}: {exc}")})
                return "error"
            run.turns += 1
            run.tokens_in += int(reply.get("usage", {}).get("prompt_tokens") or 0)
            run.tokens_out += int(reply.get("usage", {}).get("completion_tokens") or 0)
            message = reply["choices"][0]["message"]
            messages.append({k: v for k, v in message.items() if k in ("role", "content", "tool_calls")})
            run.answer = clip(message.get("content") or "")
            if not message.get("tool_calls"):
                return "done"
            for call in message["tool_calls"]:
                output, ok = call_tool(call["function"], chore, ws)
                run.calls.append(
                    {
                        "tool": call["function"].get("name"),
                        "arguments": clip(call["function"].get("arguments")),
                        "ok": ok,
                        "output": clip(output),
                    }
                )
                messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": output})
        return "iteration_limit"

    def _ask(self, client: httpx.Client, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "tools": tools}
        if self.limits.reply_tokens:
            body["max_tokens"] = self.limits.reply_tokens
        response = client.post(f"{self.tap.url}/v1/chat/completions", json=body)
        response.raise_for_status()
        reply: dict[str, Any] = response.json()
        return reply


def call_tool(function: dict[str, Any], chore: Chore, ws: Workspace) -> tuple[str, bool]:
    """The tool's own function on the parsed arguments; any failure is the error's text, as a user would send it."""
    name = function.get("name")
    if name not in chore.tools:
        return f"Error: unknown tool {name!r}", False
    try:
        args = json.loads(function.get("arguments") or "{}")
        output = TOOLS[name].fn(args, ws)
    except Exception as exc:  # the floor does not tell failures apart: the model reads them all
        return f"Error: {type(exc).__name__}: {exc}", False
    return output[:RESULT_LIMIT], True


def _seeded(chore: Chore, path: Path) -> Path:
    """The chore's documents in a knowledge base of the plain loop's own."""
    with KnowledgeStore(path) as store:
        for doc in chore.kb:
            store.add(doc.text, title=doc.title, source=f"chore:{doc.title}", scope="global")
    return path
