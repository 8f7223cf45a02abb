"""The report's bar charts keep their words inside the drawing, whole and apart, whatever the
period (tests/hearth/web/test_accessibility.py looks at them drawn in Chromium at both widths)."""

from __future__ import annotations

import re
from datetime import date, timedelta

import pytest

from hearth.web.charts import LABEL_HALF, WIDTH, stacked_bars


@pytest.mark.parametrize("count", [1, 7, 12, 30, 341])
def test_the_day_labels_are_inside_the_drawing_apart_and_end_with_the_last_day(count: int) -> None:
    days = [(date(2026, 1, 1) + timedelta(days=n)).isoformat() for n in range(count)]
    drawn = str(stacked_bars("runs", days, {"done": [1] * count}))
    labels = [(float(x), text) for x, text in re.findall(r'<text x="([\d.]+)" y="192.0" [^>]*>([^<]*)<', drawn)]
    assert labels[-1][1] == days[-1][5:]  # the day a person looks for first
    assert all(LABEL_HALF <= x <= WIDTH - LABEL_HALF for x, _ in labels), labels
    assert all(b - a >= 2 * LABEL_HALF for (a, _), (b, _) in zip(labels, labels[1:], strict=False)), labels


def test_the_axis_says_each_value_in_at_most_four_characters() -> None:
    drawn = str(stacked_bars("tokens", ["2026-12-07"], {"in": [2040], "out": [2_400_000]}))
    axis = re.findall(r'text-anchor="end">([^<]*)<', drawn)
    assert axis == ["0", "2.5M", "5M"]
    assert re.findall(r'text-anchor="end">([^<]*)<', str(stacked_bars("t", ["2026-12-07"], {"in": [2040]}))) == [
        "0",
        "2.5k",
        "5k",
    ]
