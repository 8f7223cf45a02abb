"""How big a tool's output may be for the model, and where the rest goes.

- `cap_output`: the one cap of what the model reads of a result (head, a little of the tail,
  and how much was cut). agent/tools/gate.py applies it last, once per call.
- `OutputSpill`: an output over the threshold is written whole to a file in the workspace
  (`.hearth-outputs/`, which git ignores through its own `.gitignore`); the model reads a head
  and tail preview with the path, and reads parts on demand (read_file start_line / max_bytes).
"""

from __future__ import annotations

import posixpath
from typing import Any

from agent.safety.workspace import PathRefused, Workspace

OUTPUT_LIMIT = 16_000
CHARS_PER_TOKEN = 4
SPILL_DIR = ".hearth-outputs"


def cap_output(text: str, limit: int = OUTPUT_LIMIT) -> tuple[str, bool]:
    """Keep the head and a little of the tail; say how much was cut."""
    if len(text) <= limit:
        return text, False
    tail = limit // 8
    cut = len(text) - limit
    return f"{text[: limit - tail]}\n[... {cut} characters cut ...]\n{text[-tail:]}", True


def spill_threshold(num_ctx: int) -> int:
    """Outputs longer than this go to a file: a sixth of the window, within [2,000, OUTPUT_LIMIT]."""
    return min(OUTPUT_LIMIT, max(2_000, num_ctx * CHARS_PER_TOKEN // 6))


class OutputSpill:
    """Writes outputs over the threshold to the workspace and returns a preview naming the file."""

    def __init__(self, ws: Workspace, run_id: str, threshold: int) -> None:
        self.ws = ws
        self.run_id = run_id
        self.threshold = threshold
        self.count = 0

    def __call__(self, tool: str, arguments: dict[str, Any], output: str) -> str:
        if len(output) <= self.threshold:
            return output
        if self._reads_a_spill(tool, arguments):
            page = self.threshold // 2
            return f"{cap_output(output, self.threshold)[0]}\n[read it in parts: pass start_line and max_bytes={page}]"
        self.count += 1
        rel = f"{SPILL_DIR}/{self.run_id}-{self.count:03d}-{tool}.txt"
        try:
            self._save(rel, output)
        except (PathRefused, OSError) as exc:
            return f"{cap_output(output, self.threshold)[0]}\n[hearth could not save the whole output: {exc}]"
        return preview(output, rel, self.threshold)

    def _reads_a_spill(self, tool: str, arguments: dict[str, Any]) -> bool:
        path = arguments.get("path") if isinstance(arguments, dict) else None
        if tool != "read_file" or not isinstance(path, str):
            return False
        try:
            return posixpath.dirname(self.ws.relpath(path)) == SPILL_DIR
        except PathRefused:
            return False

    def _save(self, rel: str, output: str) -> None:
        ignore = f"{SPILL_DIR}/.gitignore"
        if self.ws.stat(ignore) is None:
            # the outputs are the run's scratch: never part of a workspace checkpoint
            self.ws.write_bytes(ignore, b"*\n")
        self.ws.write_bytes(rel, output.encode("utf-8", "replace"))


def preview(output: str, rel: str, threshold: int) -> str:
    size = threshold // 2
    head, tail = output[: int(size * 0.75)], output[-int(size * 0.25) :]
    head = head[: head.rfind("\n") + 1] or head
    tail = tail[tail.find("\n") + 1 :] or tail
    lines = output.count("\n") + 1
    next_line = head.count("\n") + 1
    return (
        f"{head}\n[... output too long for the context: {len(output):,} characters, {lines:,} lines. "
        f"The whole output is saved in {rel}; read parts of it with read_file path='{rel}' "
        f"start_line={next_line} max_bytes={size} ...]\n{tail}"
    )
