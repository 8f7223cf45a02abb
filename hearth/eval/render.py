"""An eval's matrix and a diff as text (`hearth eval show`, `diff`) and as Markdown (`--markdown`)."""

from __future__ import annotations

import io
from typing import Any

from hearth.eval.results import Matrix
from hearth.render import table


def cell_text(cell: dict[str, Any]) -> str:
    """`2/2 pass`, `0/1 fail: files, no_denial`, `queued` (nothing scored yet)."""
    if not cell["scored"]:
        return f"{cell['runs'] - cell['scored']} pending"
    verdict = "pass" if cell["passed"] == cell["scored"] else "fail"
    said = f"{cell['passed']}/{cell['scored']} {verdict}"
    if cell["failed_checks"]:
        said += ": " + ", ".join(cell["failed_checks"])
    if cell["scored"] < cell["runs"]:
        said += f" (+{cell['runs'] - cell['scored']} pending)"
    return said


def share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _spread(s: dict[str, Any]) -> str:
    return "-" if not s["spread"] else f"{s['spread'][0]:.0%}-{s['spread'][1]:.0%}"


def _seconds(ms: int | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f}s"


def standing_rows(standing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "model": s["model"],
            "pass_rate": share(s["pass_rate"]),
            "passed": f"{s['passed']}/{s['scored']}",
            "spread": _spread(s),
            "median_tokens": "-" if s["median_tokens"] is None else s["median_tokens"],
            "model_time": _seconds(s["median_model_ms"]),
            "wall_time": _seconds(s["median_wall_ms"]),
            "approvals": s["approvals"],
        }
        for s in standing
    ]


def _heading(m: Matrix) -> str:
    e = m.eval
    pending = f"; {m.pending} runs not scored yet (still queued or running)" if m.pending else ""
    return f"eval {e['id']} of suite {e['suite']} ({e['status']}, {e['repeat']} repeat(s), {e['trigger']}){pending}"


def text(m: Matrix) -> str:
    out = io.StringIO()
    print(_heading(m), file=out)
    rows = [
        {"case": c, **{model: cell_text(m.cells[(c, model)]) for model in m.models}, "winner": m.winners[c] or "-"}
        for c in m.cases
    ]
    table(rows, ["case", *m.models, "winner"], out=out)
    print("", file=out)
    rows = standing_rows(m.standing)
    table(rows, list(rows[0]) if rows else ["model"], out=out)
    return out.getvalue().rstrip("\n")


def markdown(m: Matrix) -> str:
    """GitHub-flavoured Markdown: the matrix, then the models' standing."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    lines = [f"**{_heading(m)}**", "", line(["case", *m.models, "winner"]), line(["---"] * (len(m.models) + 2))]
    for c in m.cases:
        lines.append(line([c, *(cell_text(m.cells[(c, model)]) for model in m.models), m.winners[c] or "-"]))
    rows = standing_rows(m.standing)
    if rows:
        lines += ["", line(list(rows[0])), line(["---"] * len(rows[0]))]
        lines += [line([str(v) for v in r.values()]) for r in rows]
    return "\n".join(lines)


def diff_text(change: dict[str, Any]) -> str:
    out = io.StringIO()
    print(
        f"eval {change['a']} -> {change['b']}: pass rate {share(change['a_pass_rate'])} -> {share(change['b_pass_rate'])}",
        file=out,
    )
    rows = [
        {
            "case": c["case"],
            "model": c["model"] or "(all)",
            "a": share(c["a"]),
            "b": share(c["b"]),
            "change": c["change"],
        }
        for c in change["changes"]
    ]
    if rows:
        table(rows, ["case", "model", "a", "b", "change"], out=out)
    print(f"worse: {', '.join(change['worse']) or 'none'}", file=out)
    for side in ("a", "b"):
        if change[f"only_in_{side}"]:
            print(f"only in {side}: {', '.join(change[f'only_in_{side}'])}", file=out)
    return out.getvalue().rstrip("\n")
