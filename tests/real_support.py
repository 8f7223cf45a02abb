"""The real tier's one way of running a chore: bench/chores.py as a process, its --json read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.conftest import ROOT

# a reply's cap: a 0.5B model writes about 5 tokens a second on a busy CPU, and a looping reply runs
# to its cap
REPLY_TOKENS = 256
# a run's limit: generous by default, for a shared server that answers other clients' long replies
# between this run's turns; `.ci/run` sets less, to end inside its own hard limit with a report
RUN_LIMIT_S = int(os.environ.get("HEARTH_REAL_RUN_LIMIT_S") or 1200)


def run_chore(host: str, model: str, chore: str, *, max_iters: int) -> dict[str, Any]:
    """One run of `chore` through hearth on the real server: the bench's row for it."""
    argv = [sys.executable, str(ROOT / "bench" / "chores.py"), "--host", host, "--model", model, "--side", "hearth"]
    argv += ["--chores", chore, "--max-iters", str(max_iters), "--timeout", str(RUN_LIMIT_S), "--json"]
    argv += ["--reply-tokens", str(REPLY_TOKENS)]
    # the bench stops its run at the limit and reports it; past that and the minute it is given to
    # record the end, something else is wrong
    done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_LIMIT_S + 180, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    [run] = json.loads(done.stdout)["runs"]
    return dict(run)
