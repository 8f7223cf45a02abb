"""The only code that speaks to model servers (Ollama, OpenAI-compatible ones), and the scripted model of the self-test."""

# Leaves, so a `--help` can show them without loading a client (httpx):
# the context window asked for when nobody says,
DEFAULT_NUM_CTX = 8192
# and the most tokens one reply may have when nobody says: a file of a few hundred lines fits, and a
# small model writing the same line over and over is stopped within a minute or two on a CPU box
DEFAULT_REPLY_TOKENS = 2048
