"""A stdio MCP server under Landlock, where bubblewrap cannot run (inside hearth's own systemd
units, which forbid the user namespaces bwrap needs): this small program is what the SDK starts;
it walls itself in and then becomes the server.

    python -m hearth.mcp.walled SPEC -- COMMAND [ARG...]

SPEC is JSON: `read` (paths to read and execute), `write` (the run's workspace), `memory` and
`file_size` (bytes), `processes` and `cgroup` (the run's directories to join). It joins the
cgroup, applies the memory, file-size, core and process rlimits, drops every capability, sets
no_new_privs, enters the Landlock ruleset (no TCP at all) and the commands'
seccomp filter (agent/safety/child.py's `enter_landlock`, as for a command), then execs COMMAND.
A fresh process, not a fork of a threaded one: it may allocate before it walls itself in.
Under Landlock the server runs as hearth's own user, not nobody (the run records it, as for
commands)."""

from __future__ import annotations

import json
import os
import resource
import sys

from agent.safety import child, landlock, seccomp


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m hearth.mcp.walled SPEC -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    spec, command = json.loads(argv[0]), argv[2:]
    limits = [
        (resource.RLIMIT_AS, int(spec["memory"])),
        (resource.RLIMIT_FSIZE, int(spec["file_size"])),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, int(spec.get("processes", 256))),
    ]
    # never above a hard limit this process already has (raising one is refused to a user)
    limits = [(which, _capped(which, value)) for which, value in limits]
    ruleset = landlock.ruleset(landlock.read_paths(spec["read"]), spec["write"])
    code = seccomp.program(network=False, unix=True) if seccomp.supported() else None
    fprog = seccomp.prepared(code) if code is not None else None
    # the run's cgroup, joined by writing 0 (this process) before anything else is started
    joins = [os.open(f"{directory}/cgroup.procs", os.O_WRONLY | os.O_CLOEXEC) for directory in spec.get("cgroup", [])]
    child.enter_landlock(limits, joins, ruleset, fprog)
    os.close(ruleset)
    os.execvp(command[0], command)
    return 127  # not reached: exec replaced this process or raised


def _capped(which: int, value: int) -> int:
    hard = resource.getrlimit(which)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
