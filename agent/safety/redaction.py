"""Redaction of credential values: the one function every output passes through before it is kept.

The appliance fills a Redactor with the values a run could meet; `call_tool` applies it to every
tool result and the recorder to every event it stores or prints, so a value echoed by a server,
a file or an error message becomes `[redacted:NAME]` before the model, the audit, the state file
or a log sees it. Besides the value itself, its JSON-escaped and percent-encoded spellings are
replaced, as servers that reflect a request tend to use them.
"""

from __future__ import annotations

import json
import threading
from typing import Any
from urllib.parse import quote


class Redactor:
    def __init__(self, values: dict[str, str] | None = None) -> None:
        self._spellings: dict[str, str] = {}
        self._lock = threading.Lock()
        for name, value in (values or {}).items():
            self.add(name, value)

    def add(self, name: str, value: str) -> None:
        if not value:
            return
        forms = {value, json.dumps(value)[1:-1], quote(value, safe="")}
        with self._lock:
            for form in forms:
                self._spellings[form] = f"[redacted:{name}]"

    def __bool__(self) -> bool:
        return bool(self._spellings)

    def __call__(self, text: str) -> str:
        if not self._spellings or not isinstance(text, str):
            return text
        with self._lock:
            ordered = sorted(self._spellings.items(), key=lambda item: -len(item[0]))
        for secret, mark in ordered:  # longest first, so a value containing another stays whole
            if secret in text:
                text = text.replace(secret, mark)
        return text

    def data(self, value: Any) -> Any:
        """A copy of a JSON-like structure with every string (keys too) redacted."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


def no_redaction(text: str) -> str:
    return text
