"""Containment through the TOOLS, each case twice: the tool layer alone (no OS sandbox) and the OS
layer alone (tool checks off with the test-only `Workspace(enforce=False)`, inside real bwrap or
Landlock). Both must hold.

Layout, as in production: <base>/state is hearth's state dir (hidden from commands), the run's
workspace is <base>/state/agents/<case>, and what it must not reach is <base>/state/outside/<case>
(standing for the audit DB, the queue and other runs). Both kinds keep reads to the allow list, so
both halves, read and write, are asserted under each. The harness's interpreter and this checkout
are exposed read-only (`expose`), as an operator adds a tool that lives outside the system paths.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.safety.sandbox import SandboxPolicy, run_sandboxed
from agent.safety.workspace import Workspace, openat2_available
from agent.services import RunServices
from agent.tools.gate import call_tool
from agent.tools.registry import ToolResult
from tests.conftest import require
from tests.sandboxed_tools import RACE_CALLS, flip

REPO = Path(__file__).resolve().parents[3]
HARNESS = Path(__file__).resolve().parents[2] / "sandboxed_tools.py"
SECRET = "outside secret canary"
EXPOSE = (str(REPO), sys.prefix, sys.base_prefix)  # the harness: this checkout, the venv, the interpreter
RACE_TURNS = 50  # swaps the flipper must have made before a race may end
MAX_ROUNDS = 200_000  # a bound on the attempts, so a race that cannot happen fails instead of hanging

Calls = list[tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class Case:
    id: str
    setup: Callable[[Path, Path], None]  # (workspace, outside)
    calls: Callable[[Path, Path], Calls]  # the file-tool attempts
    commands: Callable[[Path, Path], list[str]]  # the same attempts as run_command lines


def nothing(ws: Path, out: Path) -> None:
    pass


def up(ws: Path, out: Path) -> str:
    return os.path.relpath(out, ws)


def link(name: str, target: Callable[[Path, Path], str]) -> Callable[[Path, Path], None]:
    def make(ws: Path, out: Path) -> None:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).symlink_to(target(ws, out))

    return make


def reach(p: str) -> Calls:
    """Every tool's way of reading, writing and listing through the path prefix ``p``."""
    return [
        ("read_file", {"path": f"{p}/secret"}),
        ("write_file", {"path": f"{p}/new", "content": "x"}),
        ("edit_file", {"path": f"{p}/secret", "old_text": "outside", "new_text": "pwned"}),
        ("list_files", {"path": p}),
        ("list_tree", {"path": p}),
        ("search_files", {"path": p, "pattern": "secret"}),
        ("replace_in_files", {"path": p, "old_text": "outside", "new_text": "pwned"}),
    ]


def shell_reach(p: str) -> list[str]:
    return [f"cat {p}/secret", f"echo x > {p}/new", f"sed -i s/outside/pwned/ {p}/secret", f"ls {p}", f"rm {p}/secret"]


def hard_link(ws: Path, out: Path) -> None:
    os.link(out / "secret", ws / "hard")


def specials(ws: Path, out: Path) -> None:
    os.mkfifo(ws / "pipe")
    (ws / "zero").symlink_to("/dev/zero")
    (ws / "proc-root").symlink_to("/proc/self/root")


CASES = [
    Case("dotdot", nothing, lambda ws, out: reach(up(ws, out)), lambda ws, out: shell_reach(up(ws, out))),
    Case("absolute", nothing, lambda ws, out: reach(str(out)), lambda ws, out: shell_reach(str(out))),
    Case(
        "symlink-dir-absolute",
        link("out", lambda ws, out: str(out)),
        lambda ws, out: reach("out"),
        lambda ws, out: shell_reach("out"),
    ),
    Case(
        "symlink-dir-relative-deep",
        link("sub/deeper/up", lambda ws, out: os.path.relpath(out, ws / "sub/deeper")),
        lambda ws, out: reach("sub/deeper/up"),
        lambda ws, out: shell_reach("sub/deeper/up"),
    ),
    Case(
        "symlink-last-component",
        link("link", lambda ws, out: str(out / "secret")),
        lambda ws, out: [
            ("read_file", {"path": "link"}),
            ("write_file", {"path": "link", "content": "x"}),
            ("edit_file", {"path": "link", "old_text": "outside", "new_text": "pwned"}),
        ],
        lambda ws, out: ["cat link", "echo x > link", "echo x >> link", "truncate -s 0 link"],
    ),
    Case(
        "dangling-symlink",
        lambda ws, out: (
            link("dangle", lambda w, o: str(o / "new"))(ws, out),
            link("dangle-dir", lambda w, o: str(o / "newdir"))(ws, out),
        ),
        lambda ws, out: [
            ("write_file", {"path": "dangle", "content": "x"}),
            ("write_file", {"path": "dangle-dir/f", "content": "x"}),
        ],
        lambda ws, out: ["echo x > dangle", "mkdir -p dangle-dir/a", "echo x > dangle-dir/f"],
    ),
    Case(
        "hard-link",
        hard_link,
        lambda ws, out: [
            ("write_file", {"path": "hard", "content": "x"}),
            ("edit_file", {"path": "hard", "old_text": "outside", "new_text": "pwned"}),
            ("replace_in_files", {"old_text": "outside", "new_text": "pwned"}),
        ],
        # a command cannot make a new hard link out (a link that already exists is one file: only
        # the tool layer can refuse to write through it, which is why it does)
        lambda ws, out: [f"ln {out}/secret hard2", f"ln {up(ws, out)}/secret hard3"],
    ),
    Case(
        "fifo-and-devices",
        specials,
        lambda ws, out: [
            ("read_file", {"path": "pipe"}),
            ("write_file", {"path": "pipe", "content": "x"}),
            ("read_file", {"path": "zero"}),
            ("read_file", {"path": f"proc-root{out}/secret"}),
        ],
        # the OS layer's share: no device node can be made, and bwrap shows no host disks
        lambda ws, out: ["mknod disk b 8 0", "mknod null c 1 3", f"cat proc-root{out}/secret"],
    ),
]


def outside_state(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() if p.is_file() else b"<not a file>" for p in sorted(out.iterdir())}


def untouched(out: Path) -> bool:
    return outside_state(out) == {"secret": SECRET.encode()}


def layout(base: Path, case_id: str) -> tuple[Path, Path]:
    ws, out = base / "state" / "agents" / case_id, base / "state" / "outside" / case_id
    ws.mkdir(parents=True)
    out.mkdir(parents=True)
    (out / "secret").write_text(SECRET)
    return ws, out


def scratch() -> Iterator[Path]:
    # not under /tmp: bwrap mounts a private /tmp, which would hide the test's files by accident
    path = Path(tempfile.mkdtemp(prefix="hearth-containment-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path)


base = pytest.fixture(scratch)


# --- the tool layer alone ------------------------------------------------------------------------


@pytest.mark.parametrize("resolver", ["openat2", "walk"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_tool_layer_alone_contains(case: Case, resolver: str, base: Path) -> None:
    if resolver == "openat2" and not openat2_available():
        pytest.skip("no openat2 here")
    ws_root, out = layout(base, case.id)
    case.setup(ws_root, out)
    with Workspace(ws_root, resolver=resolver, services=RunServices(sandbox=SandboxPolicy(kind="none"))) as ws:
        results = [call_tool(name, args, ws, mode="bypass") for name, args in case.calls(ws_root, out)]
    for (name, args), result in zip(case.calls(ws_root, out), results):
        assert not result.ok and result.output.startswith("Error: "), (name, args, result.output)
        assert SECRET not in result.output
    assert untouched(out)


# --- the OS layer alone --------------------------------------------------------------------------


def in_sandbox(
    kind: str, base: Path, cases: list[dict[str, Any]], race: dict[str, Any] | None = None
) -> dict[str, Any]:
    plan = base / "state" / "agents" / "plan.json"
    plan.write_text(json.dumps({"repo": str(REPO), "cases": cases, "race": race}))
    policy = SandboxPolicy(kind=kind, hide=(str(base / "state"),), expose=EXPOSE)
    result = run_sandboxed(f"{sys.executable} {HARNESS} {plan}", base / "state" / "agents", policy=policy, timeout_s=60)
    assert result.output.strip() == "DONE", result.output
    return json.loads(Path(f"{plan}.result").read_text())


@pytest.fixture(scope="module", params=["bwrap", "landlock"])
def os_layer(request: pytest.FixtureRequest) -> Iterator[tuple[str, dict[str, Any], dict[str, Path]]]:
    """Every case's file-tool calls, run once per sandbox kind with the tool checks off."""
    require(request.param)
    for base in scratch():
        yield request.param, *run_all_cases(request.param, base)


def run_all_cases(kind: str, base: Path) -> tuple[dict[str, Any], dict[str, Path]]:
    plans, outsides = [], {}
    for case in CASES:
        ws_root, out = layout(base, case.id)
        case.setup(ws_root, out)
        plans.append({"id": case.id, "root": str(ws_root), "calls": case.calls(ws_root, out)})
        outsides[case.id] = out
    return in_sandbox(kind, base, plans), outsides


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_os_layer_alone_contains_the_file_tools(
    case: Case, os_layer: tuple[str, dict[str, Any], dict[str, Path]]
) -> None:
    kind, results, outsides = os_layer
    assert untouched(outsides[case.id]), outside_state(outsides[case.id])
    assert not any(SECRET in output for output in results[case.id]), results[case.id]  # nor read


@pytest.mark.parametrize("kind", ["bwrap", "landlock"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_os_layer_alone_contains_run_command(case: Case, kind: str, base: Path) -> None:
    require(kind)
    ws_root, out = layout(base, case.id)
    case.setup(ws_root, out)
    services = RunServices(sandbox=SandboxPolicy(kind=kind, hide=(str(base / "state"),)))
    line = "; ".join(f"({command}) 2>&1 || echo refused" for command in case.commands(ws_root, out))
    with Workspace(ws_root, enforce=False, services=services) as ws:
        result = call_tool("run_command", {"command": line}, ws, mode="bypass")
    assert result.verdict == "run" and "[exit code" in result.output  # the line really ran
    assert untouched(out), (outside_state(out), result.output)
    assert SECRET not in result.output


# --- symlink swaps in a loop ---------------------------------------------------------------------


def race_layout(base: Path) -> tuple[Path, Path]:
    ws, out = layout(base, "race")
    (ws / "d").mkdir()
    (ws / "d" / "x").write_text("inside")
    (out / "x").write_text(SECRET)
    return ws, out


def flipper_survived(flipper: threading.Thread) -> bool:
    return not flipper.is_alive()  # joined after stop: it ran to the end instead of dying early


def both_states(results: list[ToolResult]) -> bool:
    """Some calls ran and some were refused: the swaps really landed on both sides of a check."""
    return any(r.ok for r in results) and any(not r.ok for r in results)


def race_untouched(out: Path) -> bool:
    return outside_state(out) == {"secret": SECRET.encode(), "x": SECRET.encode()}


@pytest.mark.parametrize("resolver", ["openat2", "walk"])
def test_symlink_swaps_never_reach_outside_through_the_tool_layer(resolver: str, base: Path) -> None:
    if resolver == "openat2" and not openat2_available():
        pytest.skip("no openat2 here")
    ws_root, out = race_layout(base)
    stop, outputs, turns = threading.Event(), [], [0]
    flipper = threading.Thread(target=flip, args=(stop, str(ws_root), [str(out), os.path.relpath(out, ws_root)], turns))
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # hand the GIL over often so the swaps land mid-resolution
    flipper.start()
    try:
        with Workspace(ws_root, resolver=resolver) as ws:
            while not (turns[0] > RACE_TURNS and both_states(outputs)) and len(outputs) < MAX_ROUNDS:
                outputs += [call_tool(n, a, ws, mode="bypass") for n, a in RACE_CALLS]
    finally:
        stop.set()
        flipper.join()
        sys.setswitchinterval(old)
    assert race_untouched(out)
    assert not any(SECRET in r.output for r in outputs)
    assert turns[0] > RACE_TURNS and flipper_survived(flipper)
    assert both_states(outputs)  # both states were really hit


@pytest.mark.parametrize("kind", ["bwrap", "landlock"])
def test_symlink_swaps_never_reach_outside_through_the_os_layer(kind: str, base: Path) -> None:
    require(kind)
    ws_root, out = race_layout(base)
    plan = {"root": str(ws_root), "outside": str(out), "turns_wanted": RACE_TURNS, "rounds_wanted": 20}
    race = in_sandbox(kind, base, [], race=plan)["race"]
    assert race_untouched(out)
    assert race["turns"] > RACE_TURNS and len(race["outputs"]) > 20
    assert not any(SECRET in output for output in race["outputs"])


@pytest.mark.parametrize("kind", ["bwrap", "landlock"])
def test_symlink_swaps_never_let_run_command_write_outside(kind: str, base: Path) -> None:
    require(kind)
    ws_root, out = race_layout(base)
    services = RunServices(sandbox=SandboxPolicy(kind=kind, hide=(str(base / "state"),)))
    stop, turns = threading.Event(), [0]
    flipper = threading.Thread(target=flip, args=(stop, str(ws_root), [str(out), os.path.relpath(out, ws_root)], turns))
    flipper.start()
    outputs = []
    try:
        with Workspace(ws_root, enforce=False, services=services) as ws:
            while (turns[0] <= RACE_TURNS or len(outputs) <= 5) and len(outputs) < 5_000:
                outputs.append(
                    call_tool(
                        "run_command", {"command": "cat d/x; echo inside > d/x; echo z > d/new"}, ws, mode="bypass"
                    ).output
                )
    finally:
        stop.set()
        flipper.join()
    assert race_untouched(out) and len(outputs) > 5
    assert turns[0] > RACE_TURNS and flipper_survived(flipper)
    assert not any(SECRET in output for output in outputs)


# --- the control: with both layers off, the same cases escape ------------------------------------

# all but the hard link: a tool write replaces the name with a new file (temp file, rename), so
# even unchecked it never writes into the other name's inode; the tool layer refuses it anyway
ESCAPE_WITHOUT_LAYERS = [case.id for case in CASES if case.id != "hard-link"]


def test_with_both_layers_off_the_cases_really_escape(base: Path) -> None:
    """Proof the cases above are real attacks: no tool checks and no sandbox lets each one out."""
    results, outsides = run_all_cases("none", base)
    escaped = [
        case.id for case in CASES if not untouched(outsides[case.id]) or any(SECRET in o for o in results[case.id])
    ]
    assert escaped == ESCAPE_WITHOUT_LAYERS
