"""hearth: the appliance around the engine (CLI, queue, spawn, audit, state, credentials)."""
