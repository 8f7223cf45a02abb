"""The ceilings every floor of hearth checks a number against: a leaf (standard library only,
imports nothing of hearth), so the queue's schema, the settings and a run's admission can all
name one value without importing each other."""

# The most iterations any run may have: a request, a profile and HEARTH_MAX_ITERATIONS are each
# checked against it (the queue's schema and the NixOS module's option type say the same).
MAX_ITERATIONS = 100
# The most tokens one run may be allowed (a request's or a profile's max_tokens).
MAX_RUN_TOKENS = 100_000_000
