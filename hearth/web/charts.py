"""Charts drawn on the server as SVG: no chart library, no script, no inline style in the page.

Every label (a status, a tool name a model invented, a failure reason) is escaped: these
strings come from the audit and are untrusted. Colours are attributes, which the CSP allows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from markupsafe import Markup, escape

STATUS_COLOURS = {
    "done": "#2f9e44",
    "running": "#1c7ed6",
    "waiting": "#f59f00",
    "iteration_limit": "#f08c00",
    "stuck": "#e8590c",
    "model_unavailable": "#ae3ec9",
    "budget_exceeded": "#d6336c",
    "denied": "#e8590c",
    "failed": "#e03131",
    "interrupted": "#868e96",
    "rejected": "#495057",
}
PALETTE = ("#1c7ed6", "#74c0fc", "#2f9e44", "#f08c00", "#e03131", "#ae3ec9", "#868e96")
WIDTH, HEIGHT, PAD_LEFT, PAD_BOTTOM, PAD_TOP = 560, 200, 56, 24, 10
MAX_BAR_W = 40
LABEL_HALF = 32  # half a day's label (`12-07`) at the size a phone draws it


def colour(name: str, index: int = 0) -> str:
    return STATUS_COLOURS.get(name, PALETTE[index % len(PALETTE)])


def stacked_bars(title: str, days: Sequence[str], series: Mapping[str, Sequence[int]]) -> Markup:
    """One bar per day, a segment per series (runs by status, tokens in and out)."""
    if not days:
        return _empty(title)
    totals = [sum(values[i] for values in series.values()) for i in range(len(days))]
    top: float = nice_ceiling(max(totals))
    plot_w, plot_h = WIDTH - PAD_LEFT - 8, HEIGHT - PAD_BOTTOM - PAD_TOP
    step = plot_w / len(days)
    parts = [_axis(top, plot_h)]
    centres = []
    for i, day in enumerate(days):
        bar_w = min(step * 0.7, MAX_BAR_W)
        x, y = PAD_LEFT + i * step + (step - bar_w) / 2, float(PAD_TOP + plot_h)
        centres.append(x + bar_w / 2)
        for n, (name, values) in enumerate(series.items()):
            h = values[i] / top * plot_h
            if h > 0:
                y -= h
                tip = f"{day}: {values[i]} {name}"
                parts.append(_rect(x, y, bar_w, h, colour(name, n), tip))
    parts += [str(_text(c, HEIGHT - 8, day[5:], anchor="middle")) for c, day in _day_labels(centres, days)]
    return _svg(title, "".join(parts), _legend(list(series)))


def _day_labels(centres: Sequence[float], days: Sequence[str]) -> list[tuple[float, str]]:
    """Where each shown day's label goes: the last day always, then every few back from it, each
    kept whole inside the drawing (the last one sat half past its right edge) and none over
    another."""
    every = 1 if len(days) <= 12 else max(1, len(days) // 6)
    shown: list[tuple[float, str]] = []
    for i in range(len(days) - 1, -1, -every):
        centre = min(max(centres[i], LABEL_HALF), WIDTH - LABEL_HALF)
        if not shown or centre + LABEL_HALF <= shown[-1][0] - LABEL_HALF:
            shown.append((centre, days[i]))
    return shown[::-1]


def nice_ceiling(value: float) -> float:
    """The axis top: the first of 2, 5, 10, 20, 50 ... at or above `value`."""
    power = 1.0
    while True:
        for factor in (2, 5, 10):
            if factor * power >= value:
                return factor * power
        power *= 10


def hbars(
    title: str, items: Sequence[tuple[str, int]], unit: str = "", empty: str = "nothing in this period"
) -> Markup:
    """Horizontal bars, longest first as given: the tools most used, the commonest failures. A list
    (a label, its bar, its value a row) rather than one drawing, so a label is shown whole and at
    the page's size on a phone too (on a phone it takes a line above its bar: hearth.css)."""
    if not items:
        return _empty(title, empty)
    top: float = max(value for _, value in items) or 1
    rows = []
    for i, (label, value) in enumerate(items):
        share = max(0.5, value / top * 100)
        bar = (
            f'<svg viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true">'
            f'<rect width="{share:.1f}" height="10" fill="{PALETTE[i % 2]}" rx="1"/></svg>'
        )
        rows.append(
            f'<li><span class="hbar-label">{escape(label)}</span>{bar}'
            f'<span class="hbar-value">{value}{escape(unit)}</span></li>'
        )
    caption = f"<figcaption>{escape(title)}</figcaption>"
    return Markup(
        f'<figure class="chart">{caption}<ul class="hbars" aria-label="{escape(title)}">{"".join(rows)}</ul></figure>'
    )


def _axis(top: float, plot_h: float) -> str:
    lines = []
    for fraction in (0.0, 0.5, 1.0):
        y = PAD_TOP + plot_h - fraction * plot_h
        lines.append(f'<line x1="{PAD_LEFT}" x2="{WIDTH - 8}" y1="{y:.1f}" y2="{y:.1f}" stroke="#dee2e6"/>')
        lines.append(str(_text(PAD_LEFT - 6, y + 4, _short_number(top * fraction), anchor="end")))
    lines.append(f'<line x1="{PAD_LEFT}" x2="{PAD_LEFT}" y1="{PAD_TOP}" y2="{PAD_TOP + plot_h}" stroke="#ced4da"/>')
    return "".join(lines)


def _short_number(value: float) -> str:
    """An axis value in at most four characters (`2.5k`, `100k`, `1M`): the axis has PAD_LEFT for
    them at the size a phone draws them (a `1000` there lost its first digit)."""
    if value >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if value >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def _legend(names: list[str]) -> Markup:
    items = "".join(
        f'<span class="key"><svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" '
        f'fill="{colour(name, n)}"/></svg>{escape(name)}</span>'
        for n, name in enumerate(names)
    )
    return Markup(f'<div class="legend">{items}</div>')


def _rect(x: float, y: float, w: float, h: float, fill: str, tip: str) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{fill}" rx="2">'
        f"<title>{escape(tip)}</title></rect>"
    )


def _text(x: float, y: float, text: str, *, anchor: str = "start", tip: str | None = None) -> Markup:
    title = f"<title>{escape(tip)}</title>" if tip and tip != text else ""
    return Markup(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}">{title}{escape(text)}</text>')


def _svg(title: str, body: str, legend: Markup, *, height: int = HEIGHT) -> Markup:
    return Markup(
        f'<figure class="chart"><figcaption>{escape(title)}</figcaption>'
        f'<svg viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}" '
        f'font-size="12" fill="#495057">{body}</svg>{legend}</figure>'
    )


def _empty(title: str, text: str = "no runs in this period") -> Markup:
    caption = f"<figcaption>{escape(title)}</figcaption>"
    return Markup(f'<figure class="chart">{caption}<p class="muted empty-chart">{escape(text)}</p></figure>')
