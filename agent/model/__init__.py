"""The only code that speaks to the model server (Ollama), and the scripted model of the self-test."""
