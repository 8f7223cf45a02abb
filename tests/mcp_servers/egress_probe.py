"""A stdio MCP server granted egress, started by hearth as whoever runs this (root, or an ordinary
user through tests/walls_support.py's as_who), probed with its `fetch` tool; prints JSON.

    python -m tests.mcp_servers.egress_probe DIR

DIR is a directory this user may write. The web server, the guard (tests/netfixtures.py's names)
and hearth's proxy all live in this process, as they do in a run's."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from agent.safety.sandbox import SandboxPolicy
from agent.tools.mcp.client import McpFailed
from hearth.mcp.config import load_server
from hearth.mcp.launch import connection
from hearth.settings import Settings
from tests.mcp_servers.declare import declare
from tests.netfixtures import Answer, TestNet, Web

FETCHER = Path(__file__).resolve().parent / "fetcher.py"


def main(where: Path) -> dict[str, Any]:
    web = Web({"/hello": Answer(body="hi from the web")})
    net = TestNet()
    net.host("pkg.example", web)
    net.host("other.example", web)
    (where / "ws").mkdir()
    config = load_server(declare(where / "config", "fetcher", script=FETCHER, extra='egress = ["pkg.example"]\n'))
    settings = Settings.from_env({"HEARTH_STATE_DIR": str(where / "state"), "HEARTH_CONFIG_DIR": str(where / "config")})
    seen: list[dict[str, Any]] = []
    server = connection(
        config, settings, where / "ws", SandboxPolicy(kind="bwrap"), net.guard(), lambda k, d: seen.append(d)
    )
    answers: dict[str, str] = {}
    try:
        for name, arguments in (
            ("allowed", {"url": "http://pkg.example/hello"}),
            ("unlisted", {"url": "http://other.example/hello"}),
            ("direct", {"url": "http://93.184.216.10/hello", "direct": True}),
        ):
            try:
                answers[name] = server.call("fetch", arguments, 60)
            except McpFailed as exc:
                answers[name] = f"refused: {exc}"
    finally:
        server.close()
        web.close()
    return {"answers": answers, "seen": [(d["host"], d["verdict"]) for d in seen], "stray": net.stray}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
