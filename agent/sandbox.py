"""Public face kept for scripts and the README: the command sandbox lives in agent/safety/sandbox.py."""

from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, detect, run_sandboxed

__all__ = ["SandboxPolicy", "SandboxUnavailable", "detect", "run_sandboxed"]
