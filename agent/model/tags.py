"""How a model server names a model: `qwen2.5-coder` is `qwen2.5-coder:latest`, else the only tag
of that name it has. A leaf, so every caller that turns a configured name into the one a request
carries (the router, the embedder, hearth doctor) resolves it the same way."""

from __future__ import annotations

from collections.abc import Sequence


def resolve_tag(name: str, pulled: Sequence[str]) -> str | None:
    """`name` as the server would run it: exact, `name:latest`, else the only pulled tag of that name."""
    if name in pulled:
        return name
    if ":" in name:
        return None
    if f"{name}:latest" in pulled:
        return f"{name}:latest"
    tagged = [p for p in pulled if p.split(":", 1)[0] == name]
    return tagged[0] if len(tagged) == 1 else None
