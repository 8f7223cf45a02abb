"""How an MCP tool is named in a run: `<server>__<tool>`. A leaf, so the walls and the run's services
can tell an MCP call by its name without loading the client (the SDK and its event loop)."""

SEPARATOR = "__"
