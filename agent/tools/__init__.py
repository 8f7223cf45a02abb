"""The tools: registry.py (the Tool record), the kinds (one module each), builtin.py (gathers them)
and gate.py (the one path every call takes, and the ToolRunner a run's loop calls)."""
