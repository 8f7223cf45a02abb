"""A research run's process that a test can kill: `python -m tests.research_child CONFIG.json`.

CONFIG names the state directory, the loopback web (each test name's stand-in address and the
port of the server on 127.0.0.1 behind it, as tests/netfixtures.py's TestNet maps them), the
scripted model's answers (tests/research_support.py's Script), the request, its research limits
and why the run goes on. The process runs the research as `hearth agent ID` would and prints the
outcome's status last.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from hearth.queue.longspec import Research
from hearth.research.run import How, run_research
from hearth.run.goal import GoalRequest
from tests.netfixtures import TestNet
from tests.research_support import PhaseModel, Script, settings_for


@dataclass
class Port:
    """A server of the parent test's, known here by its port alone."""

    port: int


def main(path: str) -> int:
    config = json.loads(Path(path).read_text())
    net = TestNet()
    for name, (address, port) in config["web"].items():
        net.host(name, Port(port), address)  # type: ignore[arg-type]

    def configure(services: object) -> None:
        services.net.resolver, services.net.connector = net.resolve, net.connect  # type: ignore[attr-defined]

    model = PhaseModel(Script(**config["script"]))
    how = How(model=model, configure_services=configure, suspend=True, resume=config.get("resume"))
    request = GoalRequest(**config["request"])
    _, outcome = run_research(request, Research(**config["spec"]), settings_for(Path(config["state"])), how)
    print(outcome.status, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
