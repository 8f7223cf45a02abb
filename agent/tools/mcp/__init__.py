"""MCP tool servers as the engine reaches them: the client (client.py: one server's connection,
on its own event loop, every call under a deadline) and the tools it makes (tools.py: an
approved MCP tool as a `Tool` record, so it goes through the gate as every tool does)."""
