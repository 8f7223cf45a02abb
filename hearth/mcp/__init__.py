"""MCP tool servers behind hearth's gate: their declarations (config.py), the operator's pins in
the audit (pins.py), and what a run is offered of them (offer.py). The client that speaks to a
server is the engine's: agent/tools/mcp/."""
