"""The appliance around the engine, in the order data flows (docs/layout.md draws the whole tree).

cli/        the edges: `hearth` (main.py), `hearth-loop` (loop.py), commands/: parse, one call, render
queue/      the queue-spec model, its intake (bytes -> request, or refusal), the queue directory,
            the requests' ledger and submit, the front door every sender writes the queue through
leash/      budgets, alerts, missions and their calendar
dispatch/   who starts a waiting request: launchers/ (the seam), spawner, watch, claimed run, stop, settle
run/        one run end to end: goal and plan, admission, runner, events (the recorder seam), walls;
            long/ for follow-ups, marathons and swarms
audit/      AuditStore, the only writer of audit.db, and its migrations
web/        the command center; doctor/ hearth doctor's checks; install/ the units for any systemd
"""

__version__ = "0.1.0"  # pyproject.toml's version; tests/hearth/run/test_limits.py checks they agree
