"""The held-out replies: one file per reply under held_out/<set>/, the calls each must give in
held_out/expected.json ([] for a look-alike). Written apart from the parser's own cases, so the
rules are checked on text they were not tuned to.

Sets: explained (a format being explained), response (a raw API response shown), schemas (a
listing of tool schemas) hold only look-alikes, each rejected by its own rule in
agent/parsing/extractors.py; functionary (chains whose first call lacks `>>>`), kimi (ids
`functions.NAME:INDEX`) and lfm2 (a pythonic list inside its call markers) hold calls.
The target on every set: no false positive, every positive found, named as the tool's name.
"""

import json
from pathlib import Path
from typing import Any

import pytest

from agent.parsing import parse_tool_calls
from tests.agent.parsing.test_families import SIGNATURES, TOOLS

HELD_OUT = Path(__file__).parent / "held_out"
EXPECTED: dict[str, list[dict[str, Any]]] = json.loads((HELD_OUT / "expected.json").read_text(encoding="utf-8"))


def replies() -> list[Any]:
    found = sorted(str(path.relative_to(HELD_OUT).with_suffix("")) for path in HELD_OUT.glob("*/*.txt"))
    assert found == sorted(EXPECTED), "every held-out reply has its expected calls, and only those"
    return [pytest.param(case, id=case) for case in found]


def calls(content: str, tools: Any) -> list[tuple[str, dict[str, Any], bool]]:
    return [(call.name, call.arguments, call.known) for call in parse_tool_calls(content, tools)]


@pytest.mark.parametrize("tools", [TOOLS, SIGNATURES], ids=["names", "signatures"])
@pytest.mark.parametrize("case", replies())
def test_each_held_out_reply_gives_exactly_its_calls(case: str, tools: Any) -> None:
    content = (HELD_OUT / f"{case}.txt").read_text(encoding="utf-8")
    expected = [(call["name"], call["arguments"], call.get("known", True)) for call in EXPECTED[case]]
    assert calls(content, tools) == expected


def test_the_look_alike_sets_hold_no_calls_and_the_family_sets_only_calls() -> None:
    for case, expected in EXPECTED.items():
        family = case.split("/")[0]
        assert bool(expected) == (family in ("functionary", "kimi", "lfm2")), case
