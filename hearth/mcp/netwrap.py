"""A stdio MCP server under bubblewrap: this small program is what the SDK starts; it makes the
server's private network namespace (and, for one granted an egress list, hands its one listener to
hearth), then becomes the rest.

    python -m hearth.mcp.netwrap SOCKET -- COMMAND [ARG...]
    python -m hearth.mcp.netwrap - -- COMMAND [ARG...]        no network: loopback alone

SOCKET is a Unix socket hearth listens on (in a directory only hearth's user may enter). In the
order a command's sandbox does it in its child (agent/safety/netns.py): connect to SOCKET from the
host's namespace, make a new network namespace (inside a user namespace of its own unless root),
bring its loopback up, listen on 127.0.0.1:3128 there and send that listener over SOCKET. hearth's
guard proxy accepts on it and makes each connection from the host's namespace, checked against the
server's egress list; nothing else routes anywhere. Then COMMAND (the shell that sets the rlimits
and becomes bubblewrap, sharing this namespace) is exec'd, with HTTP_PROXY naming the listener."""

from __future__ import annotations

import os
import socket
import sys

from agent.safety import netns


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m hearth.mcp.netwrap SOCKET|- -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    path, command = argv[0], argv[2:]
    if path == "-":
        netns.empty().enter()
    else:
        back = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        back.connect(path)
        netns.child_plan(back).enter()
    os.execvp(command[0], command)
    return 127  # not reached: exec replaced this process or raised


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
