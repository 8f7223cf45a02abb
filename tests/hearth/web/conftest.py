"""The browser fixtures of the command center's tests (the harness is tests/browser_support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_support import Browser, sync_playwright


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    with sync_playwright()() as p:
        yield p


@pytest.fixture
def browser(playwright: Any, tmp_path: Path) -> Iterator[Browser]:
    opened = Browser(playwright, tmp_path)
    yield opened
    opened.close()
