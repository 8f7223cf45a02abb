"""The queue-spec models of long work: a marathon (legs until done), its deliverable check, a swarm.

Part of the version 1 request (hearth/queue/request.py): `marathon: {max_legs, check}` and
`swarm: {max_workers}`. Sizes are bounded here and documented in queue-spec/README.md; what runs
them is hearth/run/long/marathon.py and hearth/run/long/swarm.py, loaded only when a request has one.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_LEGS = 20
MAX_WORKERS = 16
DEFAULT_LEGS = 5
DEFAULT_WORKERS = 4
MAX_CHECK_FILES = 32
MAX_COMMAND_CHARS = 2_000
PRINTABLE = r"^[^\x00-\x1f\x7f]*$"

CheckPath = Annotated[str, Field(min_length=1, max_length=512, pattern=PRINTABLE)]


class Deliverable(BaseModel):
    """What must be true in the workspace for a marathon to be done, besides the judge's word."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    files: list[CheckPath] = Field(
        default_factory=list,
        max_length=MAX_CHECK_FILES,
        description="Workspace-relative paths that must exist (at most 32).",
    )
    command: Annotated[str, Field(min_length=1, max_length=MAX_COMMAND_CHARS, pattern=PRINTABLE)] | None = Field(
        None, description="A shell command run in the workspace, in the command sandbox; it must exit 0."
    )

    @field_validator("files")
    @classmethod
    def _inside(cls, files: list[str]) -> list[str]:
        for path in files:
            if path.startswith("/") or ".." in path.split("/"):
                raise ValueError(f"{path!r} is not a path inside the workspace (relative, without ..)")
        return files

    @model_validator(mode="after")
    def _names_something(self) -> Deliverable:
        if not self.files and self.command is None:
            raise ValueError("names no file and no command; give files, a command, or leave check out")
        return self


class Marathon(BaseModel):
    """Legs of ordinary runs in one workspace until a judge (and the check, if any) says done."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    max_legs: int = Field(DEFAULT_LEGS, ge=1, le=MAX_LEGS, description="At most this many legs (1-20).")
    check: Deliverable | None = Field(None, description="The deliverable check; absent: the judge alone decides.")


class Swarm(BaseModel):
    """A planner splits the goal; each sub-goal runs as a child request; a synthesis merges them."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    max_workers: int = Field(DEFAULT_WORKERS, ge=1, le=MAX_WORKERS, description="At most this many sub-goals (1-16).")


MAX_SEARCHES = 50
MAX_PAGES = 100
DEFAULT_PAGES = 10


class Research(BaseModel):
    """A research run's hard limits: the searches and pages it may use, how much evidence answers a
    sub-question, how many pages are read at once. Its tokens and time are the request's
    `max_tokens` and `timeout_s`; a share of both is kept for the synthesis (docs/research.md)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    max_searches: int = Field(6, ge=1, le=MAX_SEARCHES, description="At most this many searches (1-50).")
    max_pages: int = Field(DEFAULT_PAGES, ge=1, le=MAX_PAGES, description="At most this many pages read (1-100).")
    max_sub_questions: int = Field(4, ge=1, le=8, description="At most this many sub-questions in the plan (1-8).")
    per_question: int = Field(
        2,
        ge=1,
        le=10,
        description="Pieces of evidence that answer a sub-question: with as many for each, it is done (1-10).",
    )
    max_rounds: int = Field(4, ge=1, le=10, description="At most this many rounds of searching and reading (1-10).")
    fetches_at_once: int = Field(3, ge=1, le=8, description="Pages read at the same time, at most (1-8).")
