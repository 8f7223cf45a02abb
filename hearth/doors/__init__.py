"""hearth's open doors: an OpenAI-compatible `/v1` and an MCP server, each call an ordinary run.

    keys.py      the `/v1` keys: stored as digests, each with its profiles, daily budget and rate
    openai.py    a chat completion as a queued run: the request mapped, the run followed, the answer shaped
    follow.py    what a run has done since last asked, as short progress lines (both doors use it)
    mcpserver.py the MCP server: hearth's runs, approvals and knowledge as tools

The doors queue through hearth.queue.submit, the function `hearth enqueue` uses, so every call is a
run with its profile's tools, mode, walls, budget and approvals, recorded with who launched it.
"""
