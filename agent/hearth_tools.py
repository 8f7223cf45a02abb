"""Public face kept for scripts and the README: the registry is agent/tools/ (builtin.py, gate.py)."""

from agent.tools.gate import TOOLS, call_tool

__all__ = ["TOOLS", "call_tool"]
