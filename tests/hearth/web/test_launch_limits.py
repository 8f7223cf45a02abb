"""The goal's limit on the launch form, in a real Chromium: counted as the queue will store it (a
browser sends line breaks as CRLF), shown before sending, and a refusal said plainly."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hearth.queue.request import MAX_GOAL_CHARS
from tests.browser_support import Browser
from tests.web_support import Center


def test_a_goal_of_many_lines_at_the_limit_is_queued_and_one_over_is_refused_plainly(
    center: Center, browser: Browser, state_dir: Path
) -> None:
    page = browser.page()
    page.goto(center.url + "/launch")
    assert page.inner_text("#goal-count") == f"0 of {MAX_GOAL_CHARS:,} characters"
    at_limit = ("x" * 99 + "\n") * (MAX_GOAL_CHARS // 100)  # 1,000 more as CRLF
    page.fill("textarea[name=goal]", at_limit)
    assert page.inner_text("#goal-count") == f"{MAX_GOAL_CHARS:,} of {MAX_GOAL_CHARS:,} characters"
    page.fill("input[name=id]", "long-goal")
    page.click("#launch")
    page.wait_for_url(center.url + "/runs/long-goal?queued=1")
    queued = json.loads((state_dir / "queue" / "long-goal.json").read_text())
    assert queued["goal"] == at_limit and "\r" not in queued["goal"]

    page.goto(center.url + "/launch")
    page.fill("textarea[name=goal]", at_limit + "y")
    assert "1 too many" in page.inner_text("#goal-count")
    browser.shot(page, "launch-goal-too-long")
    page.click("#launch")
    error = page.wait_for_selector("#error-goal")
    assert error.inner_text().startswith(
        f"the goal is {MAX_GOAL_CHARS + 1:,} characters; the limit is {MAX_GOAL_CHARS:,}."
    )
    assert "string should have" not in page.inner_text("body").lower()
    assert page.input_value("textarea[name=goal]") == at_limit + "y"
    assert browser.axe(page) == []


def test_the_form_says_which_tools_a_run_gets_unticked_and_offers_only_tools_this_host_can_use(center: Center) -> None:
    page = center.client().get("/launch").text
    said = re.search(r'<span class="hint" id="default-tools">(.*?)</span>', page, re.S)
    assert said is not None and said.group(1).startswith(
        "none ticked: the profile's tools, else the common ones (read_file,"
    )
    offered = set(re.findall(r'name="tools" value="([a-z_]+)"', page))
    assert {"read_file", "run_command", "web_fetch", "kb_search"} <= offered
    assert not offered & {"read_self_config", "write_self_config", "git_status", "git_diff", "nix_check"}
    nixos = Path("/etc/NIXOS").exists() or Path("/run/current-system").is_symlink()
    assert ("current_generation" in offered) == ("list_generations" in offered) == nixos
