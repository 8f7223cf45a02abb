"""What hearth's TOML files share: reading one, and an entry of an array of tables checked for its keys."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from hearth.errors import ConfigError


def read_toml(path: Path) -> dict[str, Any]:
    """The file's tables ({} when there is no file); ConfigError names the file and what is wrong."""
    if not path.exists():
        return {}
    import tomllib  # only when there is a file: most hosts have none of hearth's TOML files

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None


def known_table(path: Path, where: str, raw: Any, keys: Collection[str]) -> dict[str, Any]:
    """`raw` when it is a table holding only `keys`; else ConfigError naming the file, the entry and the key."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {where} must be a table")
    unknown = sorted(set(raw) - set(keys))
    if unknown:
        raise ConfigError(f"{path}: {where}: unknown key {unknown[0]!r}; the keys are {', '.join(keys)}")
    return raw
