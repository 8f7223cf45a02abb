"""The queue's settings, read once from the environment: where the queue is, how many local runs, which launcher."""

from __future__ import annotations

from pathlib import Path

import pytest

from hearth.errors import ConfigError
from hearth.settings import Settings


def test_the_queue_lives_in_the_state_dir_unless_told_otherwise() -> None:
    assert Settings.from_env({"HEARTH_STATE_DIR": "/srv/h"}).queue_dir == Path("/srv/h/queue")
    told = Settings.from_env({"HEARTH_STATE_DIR": "/srv/h", "HEARTH_QUEUE_DIR": "/run/q"})
    assert told.queue_dir == Path("/run/q")


def test_local_run_concurrency_and_launcher_have_defaults_and_are_read() -> None:
    default = Settings.from_env({})
    assert (default.max_local_runs, default.launcher) == (4, "auto")
    told = Settings.from_env({"HEARTH_MAX_LOCAL_RUNS": "8", "HEARTH_LAUNCHER": "local"})
    assert (told.max_local_runs, told.launcher) == (8, "local")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"HEARTH_MAX_LOCAL_RUNS": "0"}, "HEARTH_MAX_LOCAL_RUNS must be a whole number from 1 to 64, got '0'"),
        ({"HEARTH_MAX_LOCAL_RUNS": "many"}, "HEARTH_MAX_LOCAL_RUNS must be a whole number from 1 to 64, got 'many'"),
        (
            {"HEARTH_LAUNCHER": "Docker!"},
            "HEARTH_LAUNCHER must name a launcher (auto, systemd, local or a registered one), got 'Docker!'",
        ),
        (
            {"HEARTH_SEARCH_URL": "searx.lan/search"},
            "HEARTH_SEARCH_URL must be an http or https URL (a SearXNG /search), got 'searx.lan/search'",
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(env)
    assert str(caught.value) == message
