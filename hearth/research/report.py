"""A research run's report, rendered from its record alone (hearth/audit/research.py): the same
report whether it is read in the terminal, on the run page or by a /v1 caller.

    build(db, run_id)   the Report: the question, the plan in force and who approved it, the cited
                        claims per sub-question, the caveats (claims whose citations did not hold,
                        with why), the evidence cited, the sources it comes from (their URLs as
                        the run recorded them: never one a model wrote), and how gathering went
    markdown(report)    the same as Markdown, what was read outside hearth escaped so that it
                        cannot make a link or markup of its own; a caveat's web addresses as code
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from hearth.audit import research, runs, steps
from hearth.audit.store import Rows
from hearth.research.text import urls_in

_MARKUP = re.compile(r"([\\`*_\[\]<>#|!~])")


@dataclass
class Report:
    run_id: str
    question: str
    status: str
    error: str
    sub_questions: list[str]
    edited_by: list[str]  # who edited the plan before it was approved, in order
    approved_by: str
    claims: list[dict[str, Any]]  # cited, each with `cites` (its evidence ids)
    caveats: list[dict[str, Any]]
    evidence: list[dict[str, Any]]  # the evidence the cited claims cite, in id order
    sources: list[dict[str, Any]]  # the pages that evidence comes from
    gathered: dict[str, Any] = field(default_factory=dict)  # how gathering went and why it stopped

    @property
    def uncited(self) -> bool:
        """Evidence listed with no claim citing it: the synthesis never ran."""
        return bool(self.evidence) and not self.claims and not self.caveats

    def claims_of(self, n: int) -> list[dict[str, Any]]:
        return [c for c in self.claims if c["sub_question"] == n]


def build(db: Rows, run_id: str, *, status: str = "", error: str = "") -> Report | None:
    """The run's report, or None when it is no research run; `status` and `error` are the run's
    end as it is about to record it (its report is its summary), else what its row says."""
    run = runs.row(db, run_id)
    if run is None or run.get("kind") != "research":
        return None
    plans = research.plans(db, run_id)
    plan = json.loads(plans[-1]["plan"]) if plans else {"sub_questions": []}
    everything = research.claims(db, run_id)
    for claim in everything:
        claim["cites"] = json.loads(claim["evidence"] or "[]")
    cited = [c for c in everything if c["verdict"] == "cited"]
    used = {e for c in cited for e in c["cites"]}
    kept = research.evidence(db, run_id)
    # no claims: the synthesis did not run (a budget, a failure), so what was kept is shown uncited
    evidence = [e for e in kept if e["id"] in used] if everything else kept
    return Report(
        run_id,
        str(run.get("goal") or ""),
        status or str(run.get("status") or ""),
        error or str(run.get("error") or ""),
        [str(s.get("question") or "") for s in plan.get("sub_questions", [])],
        [str(p["by"]) for p in plans[1:]],
        _approved_by(db, run_id),
        cited,
        [c for c in everything if c["verdict"] != "cited"],
        evidence,
        _sources(db, run_id, {e["source_id"] for e in evidence}),
        _gathered(db, run_id),
    )


def _approved_by(db: Rows, run_id: str) -> str:
    rows = steps.data_of(db, run_id, "decision", latest=True)
    data = json.loads(rows[0]["data"] or "{}") if rows else {}
    return str(data.get("by") or "") if data.get("granted") else ""


def _sources(db: Rows, run_id: str, wanted: set[str]) -> list[dict[str, Any]]:
    read = {s["source_id"]: s for s in research.snapshots(db, run_id)}
    found = [s for s in research.sources(db, run_id) if s["id"] in wanted]
    return [{**s, "read": read.get(s["id"], {})} for s in found]


def _gathered(db: Rows, run_id: str) -> dict[str, Any]:
    for row in reversed(steps.data_of(db, run_id, "gate")):
        data = json.loads(row["data"] or "{}")
        if "stopped" in data:
            return dict(data)
    return {}


def escaped(text: str) -> str:
    """Text read outside hearth, made inert as Markdown (no link, image, heading or HTML of its own)."""
    return _MARKUP.sub(r"\\\1", " ".join(str(text).split()))


def as_code(text: str) -> str:
    """Web addresses in a caveat's text as code spans: shown, never made links."""
    shown = escaped(text)
    for url in urls_in(text):
        tick = "``" if "`" in url else "`"
        shown = shown.replace(escaped(url), f"{tick}{url}{tick}", 1)
    return shown


def markdown(report: Report) -> str:
    lines = [f"# Research: {escaped(report.question)}", "", _summary_line(report), ""]
    for n, question in enumerate(report.sub_questions, 1):
        lines += [f"## {n}. {escaped(question)}", ""]
        found = report.claims_of(n)
        lines += [f"- {escaped(c['text'])} {_cites(c)}" for c in found] or ["- (no claim the evidence supports)"]
        lines.append("")
    general = report.claims_of(0)
    if general:
        lines += ["## On the question as a whole", ""] + [f"- {escaped(c['text'])} {_cites(c)}" for c in general] + [""]
    if report.caveats:
        lines += ["## Caveats", "", "Claims the evidence does not support, shown without citations:", ""]
        lines += [f"- {as_code(c['text'])} ({escaped(c['reason'])})" for c in report.caveats] + [""]
    lines += _evidence(report) + _sources_md(report) + _gathered_md(report)
    return "\n".join(lines).rstrip() + "\n"


def _summary_line(report: Report) -> str:
    said = [f"Run `{report.run_id}`, {report.status}"]
    if report.approved_by:
        edits = f", edited by {', '.join(sorted(set(report.edited_by)))}" if report.edited_by else ""
        said.append(f"the plan approved by {escaped(report.approved_by)}{edits}")
    counts = [
        (len(report.claims), "claim", " cited"),
        (len(report.caveats), "caveat", ""),
        (len(report.sources), "source", ""),
    ]
    said.append(", ".join(f"{n} {word}{'' if n == 1 else 's'}{after}" for n, word, after in counts))
    line = "; ".join(said) + "."
    return line + (f"\n\n**{escaped(report.error)}**" if report.error else "")


def _cites(claim: dict[str, Any]) -> str:
    return "".join(f"[{e}]" for e in claim["cites"])


def _evidence(report: Report) -> list[str]:
    if not report.evidence:
        return []
    lines = ["## Evidence", ""]
    if report.uncited:
        lines = ["## Evidence kept", "", "No synthesis ran: this is what the run kept, cited by no claim.", ""]
    for e in report.evidence:
        note = f" ({escaped(e['note'])})" if e.get("note") else ""
        lines.append(
            f"- **[{e['id']}]** {e['source_id']}, sub-question {e['sub_question']}: \u201c{escaped(e['excerpt'])}\u201d{note}"
        )
    return [*lines, ""]


def _sources_md(report: Report) -> list[str]:
    if not report.sources:
        return []
    lines = ["## Sources", ""]
    for s in report.sources:
        read = s["read"]
        title = escaped(read.get("title") or s.get("title") or s["url"])
        url = str(read.get("url") or s["url"]).replace(")", "%29").replace(" ", "%20")
        facts = f"read {read.get('at', '')[:16].replace('T', ' ')}, sha256 `{str(read.get('sha256', ''))[:16]}`"
        lines.append(f"- **{s['id']}** [{title}]({url}): {facts}")
    return [*lines, ""]


def _gathered_md(report: Report) -> list[str]:
    g = report.gathered
    if not g:
        return []
    return [
        "## How it was gathered",
        "",
        f"{g.get('searches', 0)} searches, {g.get('pages', 0)} pages read, {g.get('tokens', 0):,} tokens; "
        f"gathering stopped: {escaped(str(g.get('stopped') or ''))}.",
        "",
    ]
