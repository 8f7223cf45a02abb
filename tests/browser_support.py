"""The command center in a real Chromium (Debian's, driven by Playwright), for every browser test.

`browser` (a fixture in tests/hearth/web/conftest.py) is one fresh Chromium profile: `page()` at a
width, `shot()` saves a screenshot under the test's tmp dir (and into $HEARTH_SCREENSHOTS when that
is set, for a person to look at), `axe()` runs axe-core (vendored from npm under tests/vendor/) on
the page and returns its serious and critical violations. Skipped only when chromium or Playwright
is missing, and never as root in CI, where the project's own set-up installs both.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
AXE = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def sync_playwright() -> Callable[[], Any]:
    """Playwright's entry point, or a skip (a failure as root in CI) naming what is missing."""
    missing = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = "Playwright for Python is not installed (pip install -e '.[test]')"
    if missing is None and not CHROMIUM.exists():
        missing = "Debian's chromium is not installed at /usr/bin/chromium (apt-get install chromium)"
    if missing is None:
        return sync_playwright
    if os.geteuid() == 0 and os.environ.get("CI"):
        pytest.fail(f"the browser tests must run in CI: {missing}")
    pytest.skip(missing)


class Browser:
    """One fresh Chromium profile: pages, dialogs seen, screenshots saved."""

    def __init__(self, playwright: Any, tmp: Path) -> None:
        self.context = playwright.chromium.launch_persistent_context(
            str(tmp / "profile"),
            executable_path=str(CHROMIUM),
            args=ARGS,
            headless=True,
            viewport={"width": 1280, "height": 900},
        )
        self.shots = tmp / "screenshots"
        self.shots.mkdir()
        self.dialogs: list[str] = []
        self.errors: list[str] = []

    def page(self, width: int = 1280, height: int = 900) -> Any:
        page = self.context.new_page()
        page.set_viewport_size({"width": width, "height": height})
        page.on("dialog", self._dialog)
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        return page

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.accept()

    def shot(self, page: Any, name: str, selector: str = "") -> None:
        """The whole page, or with `selector` only that element."""
        path = self.shots / f"{name}.png"
        if selector:
            page.locator(selector).screenshot(path=str(path))
        else:
            page.screenshot(path=str(path), full_page=True)
        keep = os.environ.get("HEARTH_SCREENSHOTS")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(keep) / path.name)

    def axe(self, page: Any) -> list[str]:
        """axe-core's serious and critical violations on the page as it is now, one line each."""
        # evaluated through the DevTools protocol, which the pages' CSP (script-src 'self') allows
        page.evaluate(AXE.read_text() + "\n;undefined")
        found = page.evaluate(
            "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
            ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
            ".map(v => v.id + ': ' + v.help + ' at ' + v.nodes.map(n => n.target.join(' ')).join(', '))"
        )
        return [str(line) for line in found]

    def close(self) -> None:
        self.context.close()
        assert self.errors == [], self.errors
