"""Public face kept for scripts and the README: the policy lives in agent/safety/policy.py."""

from agent.safety.policy import MODES, Decision, Verdict, decide

__all__ = ["MODES", "Decision", "Verdict", "decide"]
