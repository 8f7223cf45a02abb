"""Who may ask for a run: the `source` values a queue request may name (hearth/queue/request.py's
`Request.source`). A leaf, so `hearth enqueue --help` lists them without loading pydantic."""

SOURCES = ("command-center", "cli", "timer", "self-test")
