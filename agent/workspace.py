"""Public face kept for scripts and the README: containment lives in agent/safety/workspace.py."""

from agent.safety.workspace import Entry, PathRefused, Workspace

__all__ = ["Entry", "PathRefused", "Workspace"]
