"""Short, actionable hints appended to failed tool results, so a weak model can recover.

Each rule is a pattern over the failure text and a sentence that says what to do next. Only
recoverable failures get one; a hint never suggests getting around a denial.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

_Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]


@functools.cache
def _tool_rules() -> dict[str, list[_Rule]]:
    """Failures whose fix depends on the tool that failed (seen on real small models: edit_file to
    create a file, list_files given a file), before the general rules."""
    return {
        "edit_file": [
            (
                re.compile(r"^Error: file not found: (.+)$", re.M),
                lambda m: f"{m.group(1)} does not exist yet; to create it, call write_file with its whole content.",
            )
        ],
        "list_files": [
            (
                re.compile(r"directory not found: (.+)|(.+) is not a directory", re.M),
                lambda m: (
                    'list_files lists a directory: call it with path "." to see the workspace, '
                    "and read a file with read_file."
                ),
            )
        ],
    }


@functools.cache  # compiled on the first failure: a run whose tools all succeed never needs them
def _rules() -> list[_Rule]:
    return [
        (
            re.compile(r"No module named '?([\w.]+)'?"),
            lambda m: (
                f"the Python module '{m.group(1)}' is not installed and there is no network to install it; "
                "use the standard library or another approach."
            ),
        ),
        (
            re.compile(r"(?:^|\s|:)([\w.+-]+): (?:command )?not found|command not found: ([\w.+-]+)", re.M),
            lambda m: (
                f"'{m.group(1) or m.group(2)}' is not on PATH here; check what exists with "
                "`command -v NAME`, or use a tool or program that is available."
            ),
        ),
        (
            re.compile(r"Permission denied|Read-only file system|Operation not permitted", re.I),
            lambda m: "only the workspace is writable; write files under the workspace with relative paths.",
        ),
        (
            re.compile(r"No such file or directory|file not found|directory not found", re.I),
            lambda m: "check the path with list_files first; paths are relative to the workspace root.",
        ),
        (
            re.compile(r"timed out", re.I),
            lambda m: (
                "it took too long; run a smaller or faster step, or give the call a larger timeout_s "
                "(seconds: run_command takes up to 600, web_fetch up to 120)."
            ),
        ),
        (
            re.compile(
                r"has no argument|needs argument|must be (?:string|integer|boolean|one of|a JSON object)|"
                r"not a JSON object|could not be parsed",
                re.I,
            ),
            lambda m: "call the tool again with a JSON object of exactly the arguments it lists.",
        ),
    ]


def hint_for(output: str, tool: str = "") -> str | None:
    """The hint for the first rule that matches a failure (the tool's own rules first), or None."""
    if output.startswith("Denied:"):
        return None
    for pattern, make in [*_tool_rules().get(tool, []), *_rules()]:
        match = pattern.search(output)
        if match:
            return f"Hint: {make(match)}"
    return None


def unusable_reply(empty: bool) -> str:
    """The result given to a reply that was neither a call nor an answer (the loop's nudge)."""
    what = "was empty" if empty else "looked like a tool call but could not be parsed"
    return (
        f"Error: your last reply {what}. To use a tool, reply with one JSON object such as "
        '{"name": "list_files", "arguments": {"path": "."}} (or use the tool-calling format). '
        "If the goal is complete, reply with your final summary in plain text."
    )
