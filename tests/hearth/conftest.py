"""Fixtures the tests of several hearth packages share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.research_support import LoopWeb


@pytest.fixture
def loop_web() -> Iterator[LoopWeb]:
    """A research run's loopback web (tests/research_support.py): a search endpoint and two pages."""
    from tests.research_support import standard_web  # the research harness loads only where it is used

    found = standard_web()
    yield found
    found.close()
