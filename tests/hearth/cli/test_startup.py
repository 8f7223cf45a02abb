"""`hearth --help` and a command's `--help` load no command's implementation (bench/cli_startup.py
times it; this keeps what it measured from growing back one top-level import at a time)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hearth.cli.commands import COMMANDS

# What a usage never needs: the queue's pydantic model, the HTTP client, the audit's SQLite, the
# web app, the run. Each was on the path of `hearth --help` before the imports moved into the
# functions that run.
HEAVY = (
    "pydantic",
    "httpx",
    "sqlite3",
    "sqlite_utils",
    "fastapi",
    "hearth.queue.request",
    "hearth.run.runner",
    "hearth.install.plan",  # the installer's units and steps (about 30 ms)
)
PROBE = """\
import json, sys
sys.argv = ["hearth", *json.loads(sys.argv[1])]
import hearth.cli.main
try:
    hearth.cli.main.main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def modules_loaded_by(*argv: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    ("argv", "registered"),
    [(("--help",), "runs"), (("enqueue", "--help"), "enqueue"), (("doctor", "--help"), "doctor"), (("nosuch",), "kb")],
)
def test_a_usage_loads_no_command_implementation(argv: tuple[str, ...], registered: str) -> None:
    loaded = modules_loaded_by(*argv)
    assert f"hearth.cli.commands.{COMMANDS[registered]}" in loaded  # the command's module registered it
    assert sorted(name for name in HEAVY if name in loaded) == []
