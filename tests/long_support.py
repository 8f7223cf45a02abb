"""Scripted replies for long work: a fake Ollama that plays a marathon's legs and its judge."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from tests.fake_ollama import final_answer, tool_call


class Script:
    """Answers as the judge (`judged` in order) or as leg N (`legs[N]`: its replies in order)."""

    def __init__(self, legs: dict[int, list[dict[str, Any]]], judged: list[dict[str, Any]]) -> None:
        self.legs, self.judged = legs, list(judged)
        self.seen: dict[str, list[dict[str, Any]]] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        first = body["messages"][1]["content"]
        with self.lock:
            if body["messages"][0]["content"].startswith("You judge whether"):
                self.seen.setdefault("judge", []).append(body)
                return self.judged.pop(0)
            leg = int(re.search(r"leg (\d+) of at most", first).group(1))  # type: ignore[union-attr]
            self.seen.setdefault(f"leg{leg}", []).append(body)
            turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return self.legs[leg][turn]


def verdict(done: bool, reason: str, next_step: str = "") -> dict[str, Any]:
    return final_answer(json.dumps({"done": done, "reason": reason, "next": next_step}))


def write(text: str) -> dict[str, Any]:
    return tool_call("write_file", {"path": "report.md", "content": text})
