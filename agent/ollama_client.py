"""Public face kept for scripts and the README: the client lives in agent/model/ollama_client.py."""

from agent.model.backends import probe
from agent.model.ollama_client import ChatReply, ModelError, ModelUnavailable, OllamaClient

__all__ = ["ChatReply", "ModelError", "ModelUnavailable", "OllamaClient", "probe"]
