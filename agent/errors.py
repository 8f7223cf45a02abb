"""The engine's errors, drawn once. Each class lives beside the code that raises it; str(error) is
the one line a user or the model reads.

AgentError                  anything the engine raises because something failed
├── ModelError              a call to the model server failed (agent/model/reply.py)
│   ├── ModelUnavailable    the server cannot be reached, keeps failing, or lacks the model
│   └── BadReply            the server answered with something that is not a usable chat reply
├── NetError                a network tool failed; the model reads the line (agent/net/guard.py)
│   ├── NetRefused          the run's network guard will not let this request, or a hop of it, happen
│   │   └── CredentialRefused  a cred:NAME that is unknown, unlisted, oddly named, or for another host
│   └── FetchFailed         the request was allowed but did not succeed
├── SandboxUnavailable      the asked sandbox kind cannot be set up on this host (agent/safety/sandbox.py)
├── PathRefused             a path the workspace will not touch (agent/safety/workspace.py)
├── GitFailed               a git command failed (agent/safety/selfconfig.py)
├── EmbedFailed             the embedder is missing, down, slow or answered unusable vectors (agent/knowledge/embedding.py)
│   └── EmbedModelMissing   the server has no embedding model of exactly that name
├── VecUnavailable          sqlite-vec cannot be loaded by any sqlite3 here (agent/knowledge/vectors.py)
├── McpFailed               an MCP server did not start, hung, crashed or answered garbage (agent/tools/mcp/client.py)
└── ToolFailed              a tool's function failed; the gate makes it the result (agent/tools/registry.py)

Not errors, and so outside the tree: a StopRun is how a run ends, well or badly, raised anywhere
in a step (a guard, a tool hook) and caught in one place, `Loop.run`, which records its status.
`Finished` is the good ending, so `except AgentError` ("the engine failed") must never catch one,
nor a tripwire's stop (hearth's `Tripped`) on its way from a hook to the loop.

StopRun                     ends a run; the subclass carries its status (agent/loop.py)
├── Finished                the model gave its final answer (done)
├── IterationLimit          the run's iterations are spent (iteration_limit)
├── ModelDown               the model server stayed unavailable (model_unavailable)
├── RunFailed               unusable replies or a server answering garbage (failed)
├── TimeLimit               the run's time limit hit, between or inside steps (failed)
├── Stuck                   the same call made again and again with nothing changed (stuck; agent/repeats.py)
└── BudgetExceeded          a guard found a token budget spent before a model call (budget_exceeded)

Private, and so outside the tree too: `_CutOff` and `_Invalid` (agent/parsing/json_repair.py),
`_Retryable`, `_NoToolSupport` and `_NoThinking` (agent/model/transport.py), `_OutOfTime` (agent/tools/search.py)
are control flow raised and caught inside their own module; none ever leaves it.

This module imports nothing of the engine: any module may import it without a circle.
"""

from __future__ import annotations

__all__ = ["AgentError"]


class AgentError(Exception):
    """The root of the engine's errors (the tree is in the module's docstring)."""
