"""The only code that speaks to the model server (Ollama), and the scripted model of the self-test."""

# The context window asked for when nobody says: here, a leaf, so a `--help` can show it without
# loading the client (httpx).
DEFAULT_NUM_CTX = 8192
