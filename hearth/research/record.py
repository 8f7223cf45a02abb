"""A research run's record as the run holds it: read back from the audit when a process starts,
added to through the run's recorder (hearth/run/events.py's `ResearchKept`), so that what the run
decides next depends only on what is recorded, in this process or an earlier one.

Ids are the run's own and follow the order things were kept: sources `S1`, `S2` ... (one per page,
by its canonical URL: a second search finding the same page adds nothing), evidence `E1`, `E2` ...
A snapshot is kept under its source's id. An excerpt becomes evidence only where it occurs word for
word in its page's snapshot (hearth/research/text.py's `verbatim`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hearth.audit import research
from hearth.audit.store import Rows
from hearth.research.gather import Found, Snapshot
from hearth.research.phases import Plan
from hearth.research.text import bare_quote, canonical, flat, verbatim
from hearth.run.events import ResearchKept
from hearth.run.recorder import Recorder


@dataclass
class Record:
    recorder: Recorder
    plans: list[dict[str, Any]] = field(default_factory=list)
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    canon: dict[str, str] = field(default_factory=dict)  # canonical URL -> source id
    snapshots: dict[str, dict[str, Any]] = field(default_factory=dict)  # source id -> row, without its text
    evidence: list[dict[str, Any]] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # flat snapshot texts read in this process

    @classmethod
    def load(cls, db: Rows, recorder: Recorder) -> Record:
        run_id = recorder.run_id
        record = cls(recorder, research.plans(db, run_id))
        for row in research.sources(db, run_id):
            record.sources[row["id"]] = row
            record.canon[row["canonical"]] = row["id"]
        record.snapshots = {row["source_id"]: row for row in research.snapshots(db, run_id)}
        record.evidence = research.evidence(db, run_id)
        return record

    @property
    def run_id(self) -> str:
        return self.recorder.run_id

    def plan(self) -> Plan | None:
        """The plan as it stands: the last revision (an operator's edit, else the model's)."""
        return Plan.model_validate(json.loads(self.plans[-1]["plan"])) if self.plans else None

    def keep(self, what: str, row: dict[str, Any]) -> None:
        self.recorder.sink.record(ResearchKept(self.run_id, what, self.recorder.redactor.data(row)))

    def propose(self, plan: Plan) -> None:
        """The model's plan, revision 1."""
        row = {"revision": 1, "by": "model", "plan": plan.model_dump_json(), "note": ""}
        self.keep("plan", row)
        self.plans = [{**row, "run_id": self.run_id}]

    def add_source(self, found: Found, query: str) -> str | None:
        """The page as a new source (its id), or None: it is no web address, or a source already."""
        key = canonical(found.url)
        if not key or key in self.canon:
            return None
        source_id = f"S{len(self.sources) + 1}"
        row = {"id": source_id, "url": found.url, "canonical": key, "title": found.title, "snippet": found.snippet}
        self.keep("source", {**row, "query": query})
        self.sources[source_id], self.canon[key] = {**row, "query": query}, source_id
        return source_id

    def add_snapshot(self, source_id: str, snapshot: Snapshot) -> None:
        row: dict[str, Any] = {
            "source_id": source_id,
            "url": snapshot.url,
            "title": snapshot.title,
            "kind": snapshot.kind,
        }
        row |= {"sha256": snapshot.sha256, "chars": len(snapshot.text)}
        self.keep("snapshot", {**row, "text": snapshot.text})
        self.snapshots[source_id] = row
        self.texts[source_id] = flat(snapshot.text)

    def flat_text(self, db: Rows, source_id: str) -> str:
        """The source's snapshot, flat ('' when it was not read)."""
        if source_id not in self.texts:
            self.texts[source_id] = flat(research.snapshot_text(db, self.run_id, source_id) or "")
        return self.texts[source_id]

    def add_evidence(self, db: Rows, source_id: str, sub_question: int, quote: str, note: str) -> str | None:
        """The excerpt as evidence (its id), or None when it does not occur word for word in the
        source's snapshot; an excerpt kept already for that source and sub-question adds nothing."""
        text = self.flat_text(db, source_id)
        offset = verbatim(quote, text)
        if offset is None:
            return None
        excerpt = bare_quote(quote)
        if any(
            e["source_id"] == source_id and e["excerpt"] == excerpt and e["sub_question"] == sub_question
            for e in self.evidence
        ):
            return None
        evidence_id = f"E{len(self.evidence) + 1}"
        row = {"id": evidence_id, "source_id": source_id, "sub_question": sub_question, "excerpt": excerpt}
        row |= {"note": " ".join(note.split())[:500], "offset": offset}
        self.keep("evidence", row)
        self.evidence.append(row)
        return evidence_id

    def counts(self, sub_questions: int) -> list[int]:
        """Evidence per sub-question (1 ... n)."""
        return [sum(1 for e in self.evidence if e["sub_question"] == n) for n in range(1, sub_questions + 1)]
