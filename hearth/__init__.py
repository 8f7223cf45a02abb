"""The appliance around the engine, in the order data flows.

cli.py loop_cli.py commands/   the edges: parse, one call, render
request.py intake.py queue.py  the queue-spec model; its intake (bytes -> request, or refusal); the queue directory
dispatch/   who starts a waiting request: spawner, launchers, watch, claimed run, settle
run/        one run end to end: goal, runner, services, recorder, prompt, profiles, checkpoints
audit/      AuditStore, the only writer of audit.db, and its migrations
doctor/     hearth doctor's checks, grouped by what they check; the runner that orders them
"""

__version__ = "0.1.0"  # pyproject.toml's version; tests/test_run_record.py checks they agree
