"""What an eval found: the matrix (per case and model), the models' standing, and `diff` of two evals.

A cell is one case for one model over its repeats: how many passed, which checks failed, its runs
(each a link to its run page), median tokens and times. A model's row: its pass rate over every
scored run, the spread of that rate over the repeats (lowest and highest), median tokens, model
time and wall time. A case's winner is the model that passed it most often, fewer tokens breaking
a tie; a case nobody passed has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

PENDING = ("running", "waiting", None)


@dataclass(frozen=True)
class Matrix:
    eval: dict[str, Any]
    cases: list[str]
    models: list[str]
    cells: dict[tuple[str, str], dict[str, Any]]
    standing: list[dict[str, Any]]
    winners: dict[str, str | None]
    pending: int
    runs: list[dict[str, Any]]  # one per case, model and repeat: each check's outcome and the run's numbers

    def as_json(self) -> dict[str, Any]:
        return {
            "eval": self.eval,
            "cases": self.cases,
            "models": self.models,
            "cells": [{"case": c, "model": m, **cell} for (c, m), cell in self.cells.items()],
            "models_standing": self.standing,
            "winners": self.winners,
            "pending": self.pending,
            "runs": self.runs,
        }


def matrix(eval_row: dict[str, Any], rows: list[dict[str, Any]]) -> Matrix:
    """The matrix of one eval from its result rows (hearth/audit/evals.py's results_of)."""
    cases = list(dict.fromkeys(r["case_name"] for r in rows))
    models = [m for m in eval_row["models"] if any(r["model"] == m for r in rows)] or list(
        dict.fromkeys(r["model"] for r in rows)
    )
    cells = {(c, m): _cell([r for r in rows if r["case_name"] == c and r["model"] == m]) for c in cases for m in models}
    standing = [_standing(m, [r for r in rows if r["model"] == m]) for m in models]
    winners = {c: _winner({m: cells[(c, m)] for m in models}) for c in cases}
    pending = sum(1 for r in rows if r["scored_at"] is None)
    return Matrix(eval_row, cases, models, cells, standing, winners, pending, [_run(r) for r in rows])


RUN_FIELDS = ("run_id", "case_name", "model", "repeat", "status", "passed", "checks")
NUMBERS = ("iterations", "tokens", "model_ms", "wall_ms", "approvals")


def _run(row: dict[str, Any]) -> dict[str, Any]:
    kept = {k: row.get(k) for k in (*RUN_FIELDS, *NUMBERS)}
    return {**kept, "passed": None if row["passed"] is None else bool(row["passed"])}


def _cell(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if r["scored_at"] is not None]
    passed = sum(1 for r in scored if r["passed"])
    failed = sorted({c["check"] for r in scored for c in r["checks"] or [] if not c["passed"]})
    return {
        "passed": passed,
        "scored": len(scored),
        "runs": len(rows),
        "rate": passed / len(scored) if scored else None,
        "failed_checks": failed,
        "run_ids": [r["run_id"] for r in rows],
        "statuses": [r.get("status") or "queued" for r in rows],
        "tokens": _median([r["tokens"] for r in scored]),
        "wall_ms": _median([r["wall_ms"] for r in scored]),
    }


def _standing(model: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if r["scored_at"] is not None]
    per_repeat = []
    for repeat in sorted({r["repeat"] for r in scored}):
        these = [r for r in scored if r["repeat"] == repeat]
        per_repeat.append(sum(1 for r in these if r["passed"]) / len(these))
    passed = sum(1 for r in scored if r["passed"])
    return {
        "model": model,
        "passed": passed,
        "scored": len(scored),
        "pass_rate": passed / len(scored) if scored else None,
        "spread": [min(per_repeat), max(per_repeat)] if per_repeat else None,
        "median_tokens": _median([r["tokens"] for r in scored]),
        "median_model_ms": _median([r["model_ms"] for r in scored]),
        "median_wall_ms": _median([r["wall_ms"] for r in scored]),
        "approvals": sum(int(r["approvals"] or 0) for r in scored),
    }


def _winner(cells: dict[str, dict[str, Any]]) -> str | None:
    ranked = [(cell["rate"], -(cell["tokens"] or 0), model) for model, cell in cells.items() if cell["rate"]]
    if not ranked:
        return None
    best = max(ranked)
    tied = [r for r in ranked if r[:2] == best[:2]]
    return best[2] if len(tied) == 1 else None


def _median(values: list[Any]) -> int | None:
    present = [v for v in values if v is not None]
    return int(median(present)) if present else None


def pass_rate(rows: list[dict[str, Any]]) -> float | None:
    scored = [r for r in rows if r["scored_at"] is not None]
    return sum(1 for r in scored if r["passed"]) / len(scored) if scored else None


def diff(a: Matrix, b: Matrix) -> dict[str, Any]:
    """What changed from eval `a` to eval `b`, case by case (and model by model where both ran the
    same models; else a case's runs over all its models): the cases that got worse, first."""
    same = set(a.models) & set(b.models)
    changes = []
    for case in [c for c in a.cases if c in b.cases]:
        keys = sorted(same) if same else [None]
        for model in keys:
            before, after = _rate(a, case, model), _rate(b, case, model)
            if before is None or after is None:
                continue
            verdict = "worse" if after < before else "better" if after > before else "same"
            changes.append({"case": case, "model": model, "a": before, "b": after, "change": verdict})
    order = {"worse": 0, "better": 1, "same": 2}
    changes.sort(key=lambda c: (order[str(c["change"])], str(c["case"])))
    return {
        "a": a.eval["id"],
        "b": b.eval["id"],
        "a_pass_rate": _overall(a),
        "b_pass_rate": _overall(b),
        "changes": changes,
        "worse": [c["case"] for c in changes if c["change"] == "worse"],
        "only_in_a": [c for c in a.cases if c not in b.cases],
        "only_in_b": [c for c in b.cases if c not in a.cases],
    }


def _rate(m: Matrix, case: str, model: str | None) -> float | None:
    cells = [m.cells[(case, x)] for x in m.models if model is None or x == model]
    scored = sum(c["scored"] for c in cells)
    return sum(c["passed"] for c in cells) / scored if scored else None


def _overall(m: Matrix) -> float | None:
    scored = sum(s["scored"] for s in m.standing)
    return sum(s["passed"] for s in m.standing) / scored if scored else None
