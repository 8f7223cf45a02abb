"""A real MCP server, written with the same SDK hearth's client uses, for the tests to start.

    python toy.py [--description-file PATH] [--lock PATH] [--http PORT]

--http: streamable HTTP on 127.0.0.1:PORT/mcp. --lock: the server holds an exclusive lock on PATH
for as long as it lives (a test's marker that it started, and, once the lock is free, that no
process of it is left: inside the sandbox's PID namespace its pid means nothing outside).

Its tools: notes in its working directory (read_note, write_note), `echo` (whose description is
the file's text when one is given: a test changes it between two runs, a "rug pull"), one that
never answers (`hang`), one that ends the process mid-call (`crash`), one that writes garbage on the protocol's stream
(`garbage`), one that floods (`flood`) and one that floods its stderr (`shout`).
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.types import Image
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

server = MCPServer("toy")
_describe = sys.argv[sys.argv.index("--description-file") + 1] if "--description-file" in sys.argv else None
ECHO = Path(_describe).read_bytes().decode().strip() if _describe else "Say the text back."  # a \r as written


@server.tool(description="Read the note called name from the server's directory.")
def read_note(name: str) -> str:
    return Path(name).read_text()


@server.tool(description="Write text to the note called name in the server's directory.")
def write_note(name: str, text: str) -> str:
    Path(name).write_text(text)
    return f"wrote {len(text)} characters to {name}"


@server.tool(description=ECHO)
def echo(text: str) -> str:
    return text


@server.tool(description="Say which Authorization header the request came with (over HTTP).")
def whoami(ctx: Context) -> str:
    return f"authorization: {(ctx.headers or {}).get('authorization', 'none')}"


@server.tool(description="Never answer.")
def hang() -> str:
    time.sleep(3600)
    return "late"


@server.tool(description="End the server mid-call.")
def crash() -> str:
    os._exit(3)


@server.tool(description="Write a line that is not JSON-RPC to stdout, then answer.")
def garbage() -> str:
    sys.stdout.write("this is not json\n")
    sys.stdout.flush()
    return "answered after the garbage"


class Count(BaseModel):
    count: int


@server.tool(description="Answer with a count, as the declared output schema says, or (broken) not.")
def count(broken: bool = False) -> Annotated[CallToolResult, Count]:
    shaped: dict[str, Any] = {"count": "many"} if broken else {"count": 3}
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(shaped))], structured_content=shaped)


PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000") + b"toy image"


@server.tool(description="Answer with a small picture and a caption.", structured_output=False)
def picture() -> list[Any]:
    return ["a caption", Image(data=PNG, format="png")]


@server.tool(description="Write megabytes of noise to stderr, then a last line, then answer.")
def shout(megabytes: int = 64) -> str:
    noise = "x" * 1023 + "\n"
    for _ in range(megabytes * 1024):
        sys.stderr.write(noise)
    sys.stderr.write(f"last words after {megabytes} MiB\n")
    sys.stderr.flush()
    return "shouted"


@server.tool(description="Answer with a great deal of text.")
def flood(lines: int = 100_000) -> str:
    return "\n".join(f"line {i} " + "x" * 60 for i in range(lines))


def _hold_lock() -> None:
    if "--lock" in sys.argv:
        try:
            held = os.open(sys.argv[sys.argv.index("--lock") + 1], os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return  # not a path it may write (hearth mcp review starts it in a scratch directory)
        fcntl.flock(held, fcntl.LOCK_EX)  # kept open, never closed: the kernel frees it with the process
        os.write(held, f"{os.getpid()}\n".encode())


if __name__ == "__main__":
    _hold_lock()
    print(f"toy server {os.getpid()} starting", file=sys.stderr)
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        # reached by a test's public-looking name through hearth's guard: any Host is this server
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        server.run("streamable-http", host="127.0.0.1", port=port, transport_security=security)
    else:
        server.run("stdio")
