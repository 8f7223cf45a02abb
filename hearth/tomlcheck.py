"""What hearth's TOML files share: an entry of an array of tables checked for its shape and keys."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from hearth.errors import ConfigError


def known_table(path: Path, where: str, raw: Any, keys: Collection[str]) -> dict[str, Any]:
    """`raw` when it is a table holding only `keys`; else ConfigError naming the file, the entry and the key."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {where} must be a table")
    unknown = sorted(set(raw) - set(keys))
    if unknown:
        raise ConfigError(f"{path}: {where}: unknown key {unknown[0]!r}; the keys are {', '.join(keys)}")
    return raw
