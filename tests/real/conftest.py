"""The real tier's chore run, made once a session: minutes on a CPU, and every test here reads it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.real_support import run_chore

SMOKE_CHORE = "greeting"  # the smallest chore (bench/chorekit/chores.toml)


@pytest.fixture(scope="session")
def greeting_run(real_server: tuple[str, str]) -> dict[str, Any]:
    """The greeting chore through hearth on the real server, three turns at most: the bench's row."""
    return run_chore(*real_server, SMOKE_CHORE, max_iters=3)
