"""The chores (chores.toml beside this file): each a fixture, a goal word for word, and a check.

A chore's workspace is a fresh folder holding the chore's files (its `[chore.files]`). Its check
and its solution are shell commands run in hearth's command sandbox (agent/safety/sandbox.py: no
network, the host's files out of sight), never on the host: what a model wrote is untrusted.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, run_sandboxed

HERE = Path(__file__).resolve().parent
BOOK = HERE / "chores.toml"
# what every chore is given: look, change, run (no web: the bench runs offline)
COMMON_TOOLS = ("read_file", "list_files", "search_files", "write_file", "edit_file", "run_command")
CHECK_TIMEOUT_S = 60
# a check compiles the workspace's Python afresh: a __pycache__ written by the model's own test run in
# the same second as its last edit of a file of the same size would otherwise be taken as current
FRESH_PYTHON = "export PYTHONDONTWRITEBYTECODE=1 PYTHONPYCACHEPREFIX=/nonexistent; "


@dataclass(frozen=True)
class Document:
    title: str
    text: str


@dataclass(frozen=True)
class Chore:
    name: str
    goal: str
    check: str
    solution: str
    tools: tuple[str, ...] = COMMON_TOOLS
    kb: tuple[Document, ...] = ()
    files: dict[str, str] = field(default_factory=dict)

    def prepare(self, workspace: Path) -> None:
        """A fresh workspace holding the chore's files."""
        workspace.mkdir(parents=True)
        for name, content in self.files.items():
            path = workspace / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)


@dataclass(frozen=True)
class Limits:
    """What both loops are held to: turns, wall time, and the tokens of one reply (None: each loop's
    own, hearth's setting and no cap at all for the plain loop)."""

    max_iters: int = 12
    timeout_s: float = 1800
    reply_tokens: int | None = None


@dataclass(frozen=True)
class Verdict:
    passed: bool
    detail: str


def load(path: Path = BOOK) -> list[Chore]:
    """Every chore of the book, in its order."""
    with path.open("rb") as handle:
        entries = tomllib.load(handle)["chore"]
    return [
        Chore(
            name=entry["name"],
            goal=entry["goal"],
            check=entry["check"],
            solution=entry["solution"],
            tools=(*COMMON_TOOLS, *entry.get("tools", ())),
            kb=tuple(Document(doc["title"], doc["text"]) for doc in entry.get("kb", ())),
            files=entry.get("files", {}),
        )
        for entry in entries
    ]


def pick(chores: list[Chore], names: str | None) -> list[Chore]:
    """The chores named (comma-separated, in the book's order), or all; a name not in the book is an error."""
    if not names:
        return chores
    wanted = {name.strip() for name in names.split(",") if name.strip()}
    unknown = wanted - {chore.name for chore in chores}
    if unknown:
        known = ", ".join(chore.name for chore in chores)
        raise ValueError(f"no chore named {', '.join(sorted(unknown))}; the chores are: {known}")
    return [chore for chore in chores if chore.name in wanted]


def sandboxed(command: str, workspace: Path) -> Verdict:
    """`command` run in the workspace inside the command sandbox: passed when it exits 0."""
    try:
        result = run_sandboxed(
            FRESH_PYTHON + command, workspace, policy=SandboxPolicy(), timeout_s=CHECK_TIMEOUT_S, output_limit=4_000
        )
    except SandboxUnavailable as exc:
        return Verdict(False, f"no command sandbox to check in: {exc}")
    if result.timed_out:
        return Verdict(False, f"the check timed out after {CHECK_TIMEOUT_S}s")
    tail = " | ".join(result.output.strip().splitlines()[-3:])
    return Verdict(result.exit_code == 0, f"exit {result.exit_code}" + (f": {tail[:300]}" if tail else ""))


def check(chore: Chore, workspace: Path) -> Verdict:
    return sandboxed(chore.check, workspace)


def solve(chore: Chore, workspace: Path) -> Verdict:
    """The chore done right, for the tests that prove its check can pass."""
    return sandboxed(chore.solution, workspace)
