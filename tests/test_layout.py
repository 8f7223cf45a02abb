"""The tree's rules, checked on the code itself: every module imports first, the engine never
imports the appliance, a tool kind leans only on the registry and the shared helpers, no module
imports one of a higher floor (FLOORS), and no import goes round in a circle."""

from __future__ import annotations

import ast
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KIND_ALLOWED = {"agent.tools.registry", "agent.tools.args", "agent.tools.syntax"}


def modules(package: str) -> list[str]:
    names = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def imported(path: Path) -> set[str]:
    """Every module named by an import statement in a file, wherever it stands (lazy ones too)."""
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


# Every module of agent/ and hearth/, by name or by package, on the floor it stands on: a module may
# import its own floor and the floors below, never one above. The engine stands below the
# appliance; inside each, the leaves lowest and the edges at the top. A name covers its
# submodules, unless a longer name places one elsewhere; the roots `agent` and `hearth` cover only
# their __init__. Today's module paths: a move renames its entry.
FLOORS: dict[int, tuple[str, ...]] = {
    # the engine
    0: ("agent", "agent.errors", "agent.clock", "agent.hints", "agent.context.envelope"),  # leaves
    1: ("agent.parsing",),  # reply text -> calls
    2: ("agent.safety", "agent.services"),  # the walls, and the services a workspace carries
    3: ("agent.sqlite_store", "agent.knowledge", "agent.net"),  # stores and the network
    4: ("agent.model", "agent.context"),  # the model server, the prompt and compaction
    5: ("agent.tools", "agent.tools.mcp"),  # the tool kinds and the gate
    6: ("agent.loop", "agent.repeats", "agent.reask", "agent.steer", "agent.wire"),
    7: ("agent.hearth_tools", "agent.ollama_client", "agent.policy", "agent.sandbox", "agent.workspace"),  # old faces
    # the appliance
    10: (
        "hearth",
        "hearth.errors",
        "hearth.ids",
        "hearth.limits",
        "hearth.queue.sources",
        "hearth.atomic",
        "hearth.locks",
        "hearth.logs",
        "hearth.version",
        "hearth.tomlcheck",
        "hearth.leash.schedule",
        "hearth.render",
        "hearth.queue.longspec",
        "hearth.run.exits",
        "hearth.timeline",
    ),  # leaves
    11: (
        "hearth.settings",
        "hearth.credentials",
        "hearth.audit",
        "hearth.audit.migrations",
        "hearth.run.state",
        "hearth.dispatch.pause",
        "hearth.knowledge",
    ),  # settings read once, and the stores: the audit, the state map, the pause flag (a file in dispatch/)
    # the leash's rules, which a run and the spawner obey; the launcher seam's Protocol and table
    # (its rows, which start runs, stand with dispatch); MCP tool servers (hearth/mcp/) as the
    # operator declares and pins them, which a run obeys too
    # and who may do what (hearth/users/: the one check every door asks)
    12: (
        "hearth.leash",
        "hearth.leash.budget",
        "hearth.leash.alerts",
        "hearth.dispatch.launchers",
        "hearth.mcp",
        "hearth.users",
        "hearth.roles",
    ),
    # the queue: the request, its intake, the directory, its ledger in the audit, and the front door
    13: (
        "hearth.queue",
        "hearth.queue.request",
        "hearth.queue.intake",
        "hearth.queue.directory",
        "hearth.queue.ledger",
        "hearth.queue.submit",
        "hearth.skills",
    ),
    # one run end to end; a follow-up is one run resumed (admission reads its earlier run through
    # run/long/followup.py, which leans on nothing above this floor: its room is long work, its
    # floor the run's)
    # standing approvals stand with it: the run asks them before a person (hearth/leash/rules.py)
    # and the one way a person's verdict is given, which makes them (hearth/leash/decisions.py)
    # an eval case's start, which admission makes (hearth/eval/seed.py, with where a fixture may
    # come from, hearth/eval/fixture.py), stands with the run
    14: (
        "hearth.run",
        "hearth.run.long.followup",
        "hearth.leash.rules",
        "hearth.leash.decisions",
        "hearth.users.launch",
        "hearth.eval.seed",
        "hearth.eval.fixture",
        "hearth.channels.inbox",  # a chat's attachments, which admission moves into the workspace
        "hearth.skills.offer",
        "hearth.roles.admit",
        "hearth.roles.runs",
    ),
    15: (
        "hearth.run.long",
        "hearth.run.long.marathon",
        "hearth.run.long.swarm",
        "hearth.run.long.swarm_results",
        "hearth.run.long.judge",
        "hearth.run.long.deliverable",
        "hearth.run.long.holding",
        "hearth.evolve",
        "hearth.eval",
        "hearth.research",
        "hearth.roles.heartbeat",
    ),  # long work: runs made of runs; evals: runs judged side by side; research: a run of phases
    # the leash's timetable: it submits; a skill's check starts evals, and a learned skill is
    # drafted from a run (hearth/skills/: what they decide stands on floor 13, what a run is offered on 14)
    16: ("hearth.leash.missions", "hearth.skills.check", "hearth.skills.learn"),
    17: (
        "hearth.dispatch",
        "hearth.dispatch.launchers.host",
        "hearth.dispatch.launchers.local",
        "hearth.dispatch.launchers.systemd",
        "hearth.report",
        "hearth.fleet",
        "hearth.remote",
        "hearth.channels",
    ),  # who starts, stops and settles a waiting request (here or on a fleet's worker); the report
    # checks, demonstrations and the installer the edges offer
    18: ("hearth.doctor", "hearth.selftest", "hearth.demo", "hearth.install"),
    19: ("hearth.web",),  # the command center's parts
    20: (
        "hearth.web.routes",
        "hearth.doors",
        "hearth.remote.door",
    ),  # the routes, and the doors (/v1, /mcp) beside them
    21: ("hearth.web.app",),
    22: (
        "hearth.cli",
        "hearth.cli.main",
        "hearth.cli.loop",
        "hearth.cli.commands",
        "hearth.cli.completion",
        "hearth.cli.manpage",
        "hearth.cli.runview",
        "hearth.cli.queued",
    ),  # the edges
}
# What stands on each floor, in a few words: docs/layout.md's floor table is drawn from FLOORS and
# these (`make layout`, scripts/layout_page.py), so a new floor gets its words here too.
FLOOR_ROLES: dict[int, str] = {
    0: "the engine's leaves",
    1: "reply text into tool calls",
    2: "the walls, and the services a workspace carries",
    3: "stores and the network",
    4: "the model server, the prompt and compaction",
    5: "the tool kinds and the gate",
    6: "the loop",
    7: "old faces: earlier module names, kept importable",
    10: "the appliance's leaves",
    11: "settings read once, and the stores",
    12: "the leash's rules, the launcher seam, MCP servers, who may do what, roles' homes",
    13: "the queue",
    14: "one run end to end, and what a run obeys or starts from",
    15: "long work, evals, research, roles' heartbeats",
    16: "the leash's timetable (it submits)",
    17: "who starts, stops and settles a waiting request, here or on a worker; the report; channels",
    18: "checks, demonstrations and the installer the edges offer",
    19: "the command center's parts",
    20: "the routes, and the doors beside them",
    21: "the command center's app",
    22: "the edges: the CLI",
}
ROOTS = {"agent", "hearth"}
# Allowances, in the style of an xfail, for an arrow or a circle a later change must remove: none
# today. A stale allowance fails the tests too.
UPWARD_ALLOWED: set[tuple[str, str]] = set()
CIRCLE_ALLOWED: set[frozenset[str]] = set()


def floor_of(module: str) -> int | None:
    """The floor of the longest FLOORS name that covers `module`; None when none does."""
    best: tuple[int, int] | None = None
    for floor, names in FLOORS.items():
        for name in names:
            covers = module == name or (name not in ROOTS and module.startswith(name + "."))
            if covers and (best is None or len(name) > best[0]):
                best = (len(name), floor)
    return best[1] if best else None


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of agent/ and hearth/ it imports anywhere in its file (lazy and
    TYPE_CHECKING imports too); `from X import Y` is the module X.Y when there is one, else X."""
    paths = {}
    for package in ("agent", "hearth"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            paths[".".join(parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        named: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                named.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    whole = f"{node.module}.{alias.name}"
                    named.add(whole if whole in paths else node.module)
        graph[module] = {name for name in named if name in paths and name != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_every_module_stands_on_a_floor() -> None:
    graph = import_graph()
    assert sorted(m for m in graph if floor_of(m) is None) == []
    assert len(graph) > 150


def test_no_module_imports_a_module_of_a_higher_floor() -> None:
    upward = {
        (module, name)
        for module, names in import_graph().items()
        for name in names
        if (floor_of(name) or 0) > (floor_of(module) or 0)
    }
    assert sorted(upward - UPWARD_ALLOWED) == []
    assert sorted(UPWARD_ALLOWED - upward) == []  # an allowance no longer needed: remove it


def test_no_imports_go_round_in_a_circle() -> None:
    found = {frozenset(c) for c in circles(import_graph())}
    assert [sorted(c) for c in found - CIRCLE_ALLOWED] == []
    assert [sorted(c) for c in CIRCLE_ALLOWED - found] == []  # an allowance no longer needed: remove it


def test_the_circle_finder_finds_a_circle_and_only_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert circles(graph) == [{"a", "b", "c"}]


def import_alone(module: str) -> tuple[str, int, str]:
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    return module, done.returncode, done.stderr.strip().splitlines()[-1:] and done.stderr.strip().splitlines()[-1]


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    every = modules("agent") + modules("hearth")
    with ThreadPoolExecutor(max_workers=4) as pool:
        failed = [(m, err) for m, code, err in pool.map(import_alone, every) if code != 0]
    assert failed == []
    assert len(every) > 60  # the walk found the tree, not an empty folder


def test_the_engine_never_imports_the_appliance() -> None:
    offenders = {
        str(p.relative_to(ROOT)): sorted(n for n in imported(p) if n.split(".")[0] == "hearth")
        for p in (ROOT / "agent").rglob("*.py")
    }
    assert {path: names for path, names in offenders.items() if names} == {}


@pytest.mark.parametrize(
    "kind", ["files", "search", "edit", "command", "knowledge", "web", "websearch", "system", "config_repo", "skills"]
)
def test_a_tool_kind_imports_no_other_kind(kind: str) -> None:
    names = imported(ROOT / "agent" / "tools" / f"{kind}.py")
    of_tools = {n for n in names if n.startswith("agent.tools.") and n.count(".") == 2}
    assert of_tools <= KIND_ALLOWED


def test_builtin_gathers_every_kind_in_its_folder() -> None:
    from agent.tools import builtin

    kinds = {p.stem for p in (ROOT / "agent" / "tools").glob("*.py")} - {
        "__init__",
        "registry",
        "args",
        "arguments",
        "builtin",
        "gate",
        "spill",
        "syntax",
    }
    assert {k.__name__.rsplit(".", 1)[1] for k in builtin.KINDS} == kinds


def test_the_command_table_names_the_module_of_every_subcommand() -> None:
    import argparse

    from hearth.cli.commands import COMMANDS, MODULES, modules_for

    registered: dict[str, str] = {}
    for module in modules_for(None):
        sub = argparse.ArgumentParser().add_subparsers()
        module.register(sub)
        registered.update(dict.fromkeys(sub.choices, module.__name__.rsplit(".", 1)[1]))
    assert registered == COMMANDS and set(COMMANDS.values()) == set(MODULES)
