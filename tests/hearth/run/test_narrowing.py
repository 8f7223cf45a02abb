"""A child's walls are the intersection of its caller's and of the profile it is asked to run under:
never wider than either, each narrowing said in one line."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent.tools.builtin import TOOLS
from hearth.run.narrowing import Ceiling, narrowed, of_profile
from hearth.run.profiles import load_profile
from hearth.settings import Settings

CALLER = Ceiling("auto", ("read_file", "web_fetch", "delegate"), True, ("pypi.org", "*.github.com"), ("gh",), 12)
WIDE = Ceiling("bypass", None, True, (), (), 30)


def test_a_wider_profile_is_narrowed_to_the_caller_and_says_how() -> None:
    child, notes = narrowed(CALLER, WIDE, "wide", may_delegate=True)
    assert child == CALLER  # every setting the caller's: the profile allowed more of each
    assert any(n.startswith("mode: profile wide has bypass, the child gets yours, auto") for n in notes)
    assert any(n.startswith("tools: profile wide allows ") for n in notes)


def test_a_narrower_profile_narrows_the_child_below_the_caller() -> None:
    narrow = Ceiling("plan", ("read_file", "run_command"), False, ("api.github.com",), (), 5)
    child, _ = narrowed(CALLER, narrow, "narrow", may_delegate=True)
    assert (child.mode, child.tools, child.network, child.max_iters) == ("plan", ("read_file",), False, 5)
    assert child.egress == ("api.github.com",)  # inside the caller's *.github.com
    assert child.credentials == ("gh",)  # a profile names none: the child has at most the caller's


def test_egress_lists_that_share_no_host_leave_the_child_no_network_at_all() -> None:
    """An empty list is any public host: an empty intersection must not become one."""
    elsewhere = replace(WIDE, egress=("example.org",))
    child, notes = narrowed(CALLER, elsewhere, "elsewhere", may_delegate=True)
    assert child.egress == () and not child.network and "web_fetch" not in (child.tools or ())
    assert any("share none" in n for n in notes)


def test_a_child_at_the_depth_cap_is_not_given_the_delegate_tool() -> None:
    child, notes = narrowed(CALLER, WIDE, "wide", may_delegate=False)
    assert "delegate" not in (child.tools or ())
    assert "delegate: the child is at the depth cap, so it cannot delegate further" in notes


def test_a_caller_with_every_tool_gives_a_list_never_every_tool() -> None:
    caller = replace(CALLER, tools=None)
    child, _ = narrowed(caller, WIDE, "wide", may_delegate=False)
    assert child.tools is not None and set(child.tools) == set(TOOLS) - {"delegate"}


def test_a_profiles_ceiling_is_what_a_run_of_it_asking_nothing_gets(tmp_path: Path) -> None:
    home = tmp_path / "agents" / "capped"
    home.mkdir(parents=True)
    (home / "agent.toml").write_text('max_mode = "plan"\nmax_tools = ["read_file", "list_files"]\negress = ["a.org"]\n')
    settings = Settings.from_env({"HEARTH_STATE_DIR": str(tmp_path / "state"), "HEARTH_CONFIG_DIR": str(tmp_path)})
    ceiling = of_profile(load_profile(tmp_path, "capped"), settings)
    assert (ceiling.mode, ceiling.tools, ceiling.egress) == ("plan", ("read_file", "list_files"), ("a.org",))
