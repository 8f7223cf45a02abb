"""Public face kept for scripts and the README: the client lives in agent/model/ollama_client.py."""

from agent.model.ollama_client import ChatReply, ModelError, ModelUnavailable, OllamaClient, probe

__all__ = ["ChatReply", "ModelError", "ModelUnavailable", "OllamaClient", "probe"]
