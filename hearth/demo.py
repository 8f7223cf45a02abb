"""The demo: hearth's main job on its embedded default, a scripted model, or a real one if present.

With no Ollama answering at OLLAMA_HOST, a scripted model plays a small, real job: it writes a
sample text and a word-count script, runs the script in the sandbox, and reports what the
script printed. With Ollama up, the same goal goes to a real model.
"""

from __future__ import annotations

import re
from typing import Any

from agent.model.backends import probe

GOAL = (
    "Write sample.txt with a few lines of text, write wordcount.py that prints the three most "
    "common words of a file with their counts, run it on sample.txt, and report the result."
)

SAMPLE = "the hearth keeps the house warm\nthe agent keeps the record\nthe record keeps the agent honest\n"
SCRIPT = """\
import collections
import sys

words = open(sys.argv[1], encoding="utf-8").read().split()
for word, count in collections.Counter(words).most_common(3):
    print(f"{word} {count}")
"""


def _report(messages: list[dict[str, Any]]) -> dict[str, Any]:
    output = next((m["content"] for m in reversed(messages) if m["role"] == "tool"), "")
    counts = re.findall(r"^(\w+) (\d+)$", output, re.M)
    found = ", ".join(f"'{w}' {n}x" for w, n in counts) or "nothing (the command failed)"
    return {
        "content": f"I wrote sample.txt and wordcount.py and ran the script: the most common words "
        f"are {found}. Files changed: sample.txt, wordcount.py."
    }


def demo_script() -> list[Any]:
    return [
        {
            "content": "I'll start with the sample text.",
            "tool_calls": [
                {"function": {"name": "write_file", "arguments": {"path": "sample.txt", "content": SAMPLE}}}
            ],
        },
        {
            "content": "",
            "tool_calls": [
                {"function": {"name": "write_file", "arguments": {"path": "wordcount.py", "content": SCRIPT}}}
            ],
        },
        {"content": '{"name": "run_command", "arguments": {"command": "python3 wordcount.py sample.txt"}}'},
        _report,
    ]


def pick_real_model(host: str, preferred: str) -> str | None:
    """The model to use when an Ollama server answers: the preferred one if pulled, else the first."""
    models = probe(host)
    if not models:
        return None
    for name in models:
        if name == preferred or name.split(":")[0] == preferred:
            return name
    return models[0]
