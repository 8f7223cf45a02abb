"""The walls one run raises around its commands, and what it checks after every tool call.

`raised()` builds them when the run starts and takes them down when it ends:
- the run's cgroup (agent/safety/cgroups.py): its commands' processes and memory capped by the
  kernel, whoever runs hearth; where none can be made, what that leaves open is recorded;
- a private directory (in /tmp: the agent unit's PrivateTmp) with the sandbox home, holding the
  tripwires' decoys (agent/safety/tripwires.py), and the tmp Landlock uses as TMPDIR;
  these two are made when the first command is about to run (workspace decoys: at the start);
- with network granted, the command proxy (agent/net/cmdproxy.py) behind the run's network guard.

The walls check every tool call through the run's ToolRunner hooks (agent/tools/gate.py), which
hearth/run/runner.py hands it in this order:
    before  `prepare_for`       the cgroup and the home with its decoys, before the first command
            `scan_arguments`    a canary in the arguments trips before the tool runs
    after   `record_connections`  the proxy's connections go into the audit (`connections`)
            `check_after`       a canary in the output or sent through the proxy, a decoy opened
A trip is recorded (`tripwires` table, a step, the log, an alert line in the journal) and,
unless the operator chose record-only, stops the run with status `tripped` (the hook raises
`Tripped`, a StopRun, through the gate to the loop).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from agent.loop import StopRun
from agent.net.guard import run_guard
from agent.parsing import ToolCall
from agent.safety.sandbox import SandboxPolicy, gaps
from agent.services import RunServices
from agent.tools.mcp.names import SEPARATOR
from agent.tools.registry import ToolResult
from hearth.run.events import ConnectionMade, TripwireTripped
from hearth.run.recorder import Recorder
from hearth.settings import Settings

if TYPE_CHECKING:  # imported where used: a run that runs no command loads none of them
    from agent.net.cmdproxy import CommandProxy
    from agent.safety import cgroups, tripwires

__all__ = ["Tripped", "Walls", "raised"]


class Tripped(StopRun):
    """A decoy's canary was seen or a decoy was opened; the run stops."""

    status = "tripped"


@dataclass
class Walls:
    policy: SandboxPolicy  # the run's commands' policy: its cgroup, home, caps and exposed paths
    recorder: Recorder
    settings: Settings
    workspace: Path
    directory: Path | None = None
    cgroup: cgroups.RunCgroup | None = None
    wires: tripwires.Tripwires | None = None
    proxy: CommandProxy | None = None
    services: RunServices | None = None
    _proxy_hits: list[tuple[tripwires.Decoy, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def action(self) -> str:
        return self.settings.tripwire_action

    def connect(self, services: RunServices) -> None:
        """Hand the run's tools their walls (after any test hook has set the network guard)."""
        self.services = services
        services.sandbox = self.policy
        services.command_cpu_s = self.settings.command_cpu_s
        if self.policy.network:
            from agent.net.cmdproxy import CommandProxy  # with the HTTP client: only runs granted network pay for it

            self.proxy = CommandProxy(run_guard(services), scan=self._scan_sent)
            services.command_proxy = self.proxy
        if self.settings.tripwires == "workspace":
            self.prepare()  # the workspace's decoys are there for the file tools from the start

    def prepare(self) -> None:
        """The cgroup, the home with its decoys: made when the first command is about to run (a run
        that runs none pays nothing for them)."""
        if self.directory is not None:
            return
        from agent.safety import cgroups, tripwires

        memory = self.settings.command_memory_mb << 20
        self.cgroup, why = cgroups.create(
            self.recorder.run_id, max_procs=self.settings.command_max_procs, memory_bytes=memory
        )
        _sweep_run_dirs()
        self.directory = Path(tempfile.mkdtemp(prefix=f"hearth-run-{self.recorder.run_id[:40]}-"))
        home, tmp = self.directory / "home", self.directory / "tmp"
        home.mkdir()
        tmp.mkdir()
        cgroup = self.cgroup.dirs if self.cgroup else ()
        self.policy = replace(self.policy, cgroup=cgroup, home=str(home), tmp=str(tmp))
        if self.services is not None:
            self.services.sandbox = self.policy
        if self.settings.tripwires != "off":
            at = self.workspace if self.settings.tripwires == "workspace" else None
            self.wires = tripwires.plant(home, at)
        _record_gaps(self.policy, self.recorder, why)

    def take_down(self) -> None:
        if self.wires is not None:
            self.wires.close()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
        if self.cgroup is not None:
            self.cgroup.remove()

    def prepare_for(self, call: ToolCall) -> None:
        """Before hook: the walls of commands are up before a command runs, and before an MCP tool's
        call (its server starts in them on first use: the cgroup, the decoy home)."""
        if call.name == "run_command" or SEPARATOR in call.name:
            self.prepare()

    def scan_arguments(self, call: ToolCall) -> None:
        """Before hook: a canary in the arguments trips before the tool runs (and, unless record-only, stops the run)."""
        if self.wires is None:
            return
        hits = self.wires.seen(json.dumps(call.arguments, ensure_ascii=False, default=str))
        self._trip([(d, f"its canary was in the arguments of {call.name} (the call did not run)") for d in hits], call)

    def check_after(self, call: ToolCall, result: ToolResult) -> None:
        """After hook: a canary in the output or sent through the proxy, or a decoy opened, trips."""
        if self.wires is None:
            return
        hits = [(d, f"its canary was in the output of {call.name}") for d in self.wires.seen(result.output)]
        hits += [(d, f"it was opened while {call.name} ran") for d in self.wires.opened()]
        with self._lock:
            hits += self._proxy_hits
            self._proxy_hits.clear()
        self._trip(hits, call)

    def _scan_sent(self, data: bytes, where: str) -> str | None:
        """The proxy's scan: runs in its threads, so a hit is only noted here and acted on in after()."""
        found = self.wires.seen(data) if self.wires else []
        if found:
            with self._lock:
                self._proxy_hits += [(d, f"its canary was sent through the proxy in {where}") for d in found]
        return found[0].name if found else None

    def record_connections(self, call: ToolCall, result: ToolResult) -> None:
        """After hook: what the command proxy connected to (or refused) while the call ran, into the audit."""
        if self.proxy is None:
            return
        run_id = self.recorder.run_id
        for c in self.proxy.drain():
            made = ConnectionMade(
                run_id, c.host, c.port, c.method, c.allowed, c.reason or None, c.bytes_up, c.bytes_down
            )
            self.recorder.record(made)

    def _trip(self, hits: list[tuple[tripwires.Decoy, str]], call: ToolCall) -> None:
        if not hits:
            return
        run_id = self.recorder.run_id
        for decoy, how in hits:
            self.recorder.record(TripwireTripped(run_id, decoy=decoy.name, how=how, tool=call.name, action=self.action))
        text = "; ".join(f"{decoy.name}: {how}" for decoy, how in hits)
        message = f"tripwire: {text}" + ("" if self.action == "stop" else " (record only: the run goes on)")
        self.recorder.notice("tripwire", message, data={"tool": call.name, "decoys": [d.name for d, _ in hits]})
        _alert(f"hearth run {run_id}: {message}")
        if self.action == "stop":
            raise Tripped(message)


@contextlib.contextmanager
def raised(
    run_id: str, settings: Settings, base: SandboxPolicy, recorder: Recorder, workspace: Path
) -> Iterator[Walls]:
    """The run's walls, taken down (decoys, directory, cgroup) when the block ends."""
    policy = replace(
        base,
        memory_bytes=settings.command_memory_mb << 20,
        max_procs=settings.command_max_procs,
        expose=(*base.expose, *settings.sandbox_expose),
    )
    walls = Walls(policy, recorder, settings, workspace)
    try:
        yield walls
    finally:
        walls.take_down()


STALE_S = 7 * 24 * 3600


def _sweep_run_dirs() -> None:
    """Run directories (decoys, scratch) a killed hearth of this user left in the temp directory."""
    now, base = time.time(), Path(tempfile.gettempdir())
    for path in base.glob("hearth-run-*"):
        try:
            info = path.lstat()
            if info.st_uid == os.geteuid() and path.is_dir() and now - info.st_mtime > STALE_S:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


def _record_gaps(policy: SandboxPolicy, recorder: Recorder, cgroup_problem: str) -> None:
    """What this run's commands are not contained from here: recorded, never silent."""
    found = gaps(policy)
    if not found:
        return
    if cgroup_problem and not policy.cgroup:
        found.append(f"why no cgroup: {cgroup_problem}")
    recorder.note("containment", detail="; ".join(found))


def _alert(line: str) -> None:
    """Under systemd (JOURNAL_STREAM), a critical journal line, which the operator's alerting sees."""
    prefix = "<2>" if os.environ.get("JOURNAL_STREAM") else ""
    print(f"{prefix}hearth: ALERT {line}", file=sys.stderr, flush=True)
