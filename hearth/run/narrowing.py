"""A child run's walls: the intersection of its caller's and of the profile it is asked to run under.

A run that delegates (hearth/run/delegate.py) may name a profile for its child. The child gets no
more than either side allows, setting by setting:

    tools        the tools both may use (a list; "every tool" on one side is the other's list)
    mode         the lower of the two (plan < auto < bypass)
    network      commands get network only if both give it
    egress       the hosts both may reach (an empty list is any public host); two lists that share
                 no host leave the child no host at all: no network tool and no network, said so
    credentials  the caller's (a profile names no credentials: the child can only lose some)
    iterations   the fewer of the two
A profile wider than its caller is narrowed, never the caller widened; each narrowing is one line
the caller's model reads in the tool's result and the child's `child` step keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.net.guard import matching
from agent.safety.policy import MODES
from agent.tools import web, websearch
from agent.tools.builtin import TOOLS, manifest_of
from agent.tools.delegate import NAME as DELEGATE
from hearth.run.goal import RunPlan
from hearth.run.profiles import Chosen, Profile, apply_network, apply_profile
from hearth.settings import Settings

NETWORK_TOOLS = frozenset(t.name for t in (*web.TOOLS, *websearch.TOOLS))


@dataclass(frozen=True)
class Ceiling:
    """What one side allows: tools None is every tool, egress () any public host."""

    mode: str
    tools: tuple[str, ...] | None
    network: bool
    egress: tuple[str, ...]
    credentials: tuple[str, ...]
    max_iters: int


def of_plan(plan: RunPlan) -> Ceiling:
    """The caller's ceiling: what its own plan resolved."""
    return _ceiling(plan, plan.manifest, plan.credentials)


def of_profile(profile: Profile, settings: Settings) -> Ceiling:
    """The named profile's ceiling: what a run of it asking for nothing would get."""
    chosen = apply_profile(profile, model=None, mode=None, max_iters=None, allowed_tools=None, defaults=settings)
    chosen = apply_network(profile, chosen, network=None, egress=[])
    return _ceiling(chosen, None if chosen.allowed_tools is None else list(chosen.allowed_tools), ())


def _ceiling(resolved: RunPlan | Chosen, listed: list[str] | None, credentials: tuple[str, ...]) -> Ceiling:
    """A ceiling from what a plan or a profile resolved: its tool list as its tool set shows it."""
    tools = manifest_of(listed, resolved.tool_set)
    egress = tuple(resolved.egress)
    return Ceiling(
        resolved.mode,
        None if tools is None else tuple(tools),
        resolved.network,
        egress,
        credentials,
        resolved.max_iters,
    )


def narrowed(caller: Ceiling, named: Ceiling, profile: str, *, may_delegate: bool) -> tuple[Ceiling, list[str]]:
    """The child's ceiling and what was narrowed, one line each. Without `may_delegate` (the
    child is at the depth cap) the child is not given the delegate tool."""
    notes: list[str] = []
    mode = min(caller.mode, named.mode, key=MODES.index)
    if MODES.index(named.mode) > MODES.index(caller.mode):
        notes.append(f"mode: profile {profile} has {named.mode}, the child gets yours, {caller.mode}")
    tools = _tools(caller.tools, named.tools, profile, notes)
    network = caller.network and named.network
    if named.network and not caller.network:
        notes.append(f"network: profile {profile} gives commands network, you have none, so the child has none")
    egress, no_host = _egress(caller.egress, named.egress)
    if no_host:
        tools = tuple(t for t in tools if t not in NETWORK_TOOLS)
        network = False
        notes.append(
            f"egress: your hosts ({', '.join(caller.egress)}) and profile {profile}'s "
            f"({', '.join(named.egress)}) share none, so the child has no network tool and no network"
        )
    elif egress != named.egress:
        notes.append(f"egress: profile {profile}'s hosts narrowed to {', '.join(egress)}")
    if not may_delegate and DELEGATE in tools:
        tools = tuple(t for t in tools if t != DELEGATE)
        notes.append("delegate: the child is at the depth cap, so it cannot delegate further")
    child = Ceiling(mode, tools, network, egress, caller.credentials, min(caller.max_iters, named.max_iters))
    return child, notes


def _tools(
    caller: Sequence[str] | None, named: Sequence[str] | None, profile: str, notes: list[str]
) -> tuple[str, ...]:
    """The tools both allow, as a list (so that nothing is left to a tool set's default)."""
    every = tuple(TOOLS)
    mine, theirs = tuple(caller or every), tuple(named or every)
    both = tuple(t for t in mine if t in theirs)
    dropped = [t for t in theirs if t not in mine]
    if dropped:
        shown = ", ".join(dropped[:8]) + (f" and {len(dropped) - 8} more" if len(dropped) > 8 else "")
        notes.append(f"tools: profile {profile} allows {shown}, which you may not use; neither may the child")
    return both


def _egress(caller: tuple[str, ...], named: tuple[str, ...]) -> tuple[tuple[str, ...], bool]:
    """The hosts both may reach ((): any public host), and whether two lists shared none."""
    if not caller or not named:
        return caller or named, False
    both = [p for p in caller if _within(p, named)] + [p for p in named if _within(p, caller)]
    kept = tuple(dict.fromkeys(both))
    return kept, not kept


def _within(pattern: str, patterns: Sequence[str]) -> bool:
    """Whether every host `pattern` names is one `patterns` allows."""
    if not pattern.startswith("*."):
        return matching(pattern, patterns)
    return any(q == pattern or (q.startswith("*.") and pattern[1:].endswith(q[1:])) for q in patterns)
