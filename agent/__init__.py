"""The engine: model client, loop, tool-call parsing, tools. Nothing here imports hearth/."""
