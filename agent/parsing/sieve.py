"""The cheap first sieve of a reply: text that cannot hold a tool call, in any format.

A leaf (standard library only), so the package's face (agent/parsing/__init__.py) and the
readers (extractors.py) both use it without importing each other.
"""

from __future__ import annotations

import re

# Every format a call can take holds one of these (JSON, a list, Python's parentheses, a tag or
# special token, Functionary's >>>); prose without any of them holds no call and no attempt.
_CALL_CHARACTERS = re.compile(r"[{\[(<>]")


def may_hold_a_call(text: str) -> bool:
    """False when `text` cannot hold a tool call or a cut-off attempt at one, in any format."""
    return _CALL_CHARACTERS.search(text) is not None
