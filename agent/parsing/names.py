"""Tool names as weak models spell them: the one real name a spelling means, and the nearest one.

`resolve_tool_name` repairs case, separators, blanks around the name, camelCase, a
`functions.`/`tools.` prefix, a `Tool` suffix and Kimi K2's call index (`functions.read_file:0` is
Kimi's id for its first call of read_file), and only when exactly one real tool matches;
`suggest_tool_name` also finds the closest name for a "did you mean X?" message, and never runs
it. Readers hand names on as the model wrote them, so the audit keeps that spelling beside the repair.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_NAME_PREFIX = re.compile(r"^(?:functions?|tools?|default_api)[.:]", re.I)
_KIMI_ID = re.compile(r"^functions\.(?=.*:\d+$)|:\d+$")  # functions.NAME:INDEX, or NAME:INDEX
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\s.\-_]+")


def _name_key(name: str) -> str:
    """A spelling-blind key: 'functions.ReadFileTool', 'read-file ' and 'Read_File' give 'read_file'."""
    key = _NAME_PREFIX.sub("", plain_name(name.strip().strip("`'\"").strip()))
    key = _SEPARATORS.sub("_", _CAMEL_BOUNDARY.sub("_", key)).lower().strip("_")
    return key.removesuffix("_tool")


def plain_name(name: str) -> str:
    """The tool's name in a Kimi K2 call id (`functions.get_weather:0` -> `get_weather`); any
    other name as it is."""
    return _KIMI_ID.sub("", name)


def resolve_tool_name(name: str, tool_names: Iterable[str]) -> str | None:
    """The real tool `name` means, if exactly one matches it up to spelling; else None."""
    names = list(tool_names)
    if name in names:
        return name
    key = _name_key(name)
    matches = {real for real in names if _name_key(real) == key}
    return matches.pop() if len(matches) == 1 else None


def suggest_tool_name(name: str, tool_names: Iterable[str]) -> str | None:
    """The closest real tool name, for a "did you mean X?" message, or None."""
    import difflib  # only for a name that is no tool's

    names = list(tool_names)
    resolved = resolve_tool_name(name, names)
    if resolved is not None:
        return resolved
    by_key = {_name_key(real): real for real in names}
    close = difflib.get_close_matches(_name_key(name), list(by_key), n=1, cutoff=0.6)
    return by_key[close[0]] if close else None
