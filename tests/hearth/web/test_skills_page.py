"""The command center's Skills page in a real Chromium: each skill's state and its last check's two
pass rates, every skill's checks with their verdicts linking to their evals, a broken SKILL.md's one
line, at a desktop's and a phone's width, with no serious accessibility violation; /api/skills
answers the same."""

from __future__ import annotations

from pathlib import Path

from tests.browser_support import Browser
from tests.skills_support import record_check, write_skill, write_suite
from tests.web_support import Center


def _seed(state_dir: Path) -> None:
    """An offered skill, a retired one (passed, then failed), an unchecked one and a broken one."""
    config = state_dir.parent / "config"
    write_suite(config)
    offered = write_skill(config / "skills", "tidy-notes", "Tidy a notes folder: sort, merge, dedupe.")
    retired = write_skill(config / "skills", "say-hello", "Greet in hello.txt.")
    write_skill(config / "skills", "fresh-one", "Not checked yet.")
    broken = config / "skills" / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: broken\n---\nno description\n")
    state_dir.mkdir(parents=True, exist_ok=True)
    audit = state_dir / "audit.db"
    record_check(audit, offered, "passed")
    record_check(audit, retired, "passed", n=2)
    record_check(audit, retired, "failed", n=3)


def test_the_skills_page_shows_each_skills_state_and_its_checks(
    center: Center, browser: Browser, state_dir: Path
) -> None:
    _seed(state_dir)
    page = browser.page(1280, 900)
    page.goto(center.url + "/evals")
    page.click('a[href="/evals/skills"]')
    page.wait_for_url("**/evals/skills")
    table = page.locator("table.skills")
    assert table.locator("tr#skill-tidy-notes td").nth(0).inner_text().startswith("offered")
    assert table.locator("tr#skill-tidy-notes td").nth(2).inner_text() == "100%"
    assert table.locator("tr#skill-say-hello td").nth(0).inner_text().startswith("retired")
    assert table.locator("tr#skill-fresh-one td").nth(0).inner_text().startswith("unchecked")
    assert "broken/SKILL.md: description must say" in page.inner_text("main")
    history = page.locator("#history-say-hello tbody tr")
    assert history.count() == 2 and history.nth(0).inner_text().count("failed") == 1
    assert page.locator('a[href="/evals?id=ev-with-3"]').count() == 1
    assert "hearth skills check fresh-one" in page.inner_text("#history-fresh-one")
    assert browser.axe(page) == []
    browser.shot(page, "skills-desktop")

    phone = browser.page(390, 844)
    phone.goto(center.url + "/evals/skills")
    assert phone.locator("table.skills tbody tr").count() == 3
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # long paths wrap
    assert browser.axe(phone) == []
    browser.shot(phone, "skills-phone")

    answer = center.client().get("/api/skills").json()
    states = {s["key"]: s["state"] for s in answer["skills"]}
    assert states == {"tidy-notes": "offered", "say-hello": "retired", "fresh-one": "unchecked"}
    assert [c["status"] for c in next(s for s in answer["skills"] if s["key"] == "say-hello")["checks"]] == [
        "failed",
        "passed",
    ]


def test_the_skills_page_says_how_to_start_when_there_is_none(center: Center, browser: Browser) -> None:
    page = browser.page(390, 844)
    page.goto(center.url + "/evals/skills")
    assert "hearth skills propose RUN" in page.inner_text("main")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert browser.axe(page) == []
    browser.shot(page, "skills-empty")
