"""The run page's words over plain HTTP: a run queued while hearth is paused, a run whose model
was missing, and where an error page sends a person."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hearth.web import reader
from hearth.web.routes import runs
from tests.web_support import Center, seed_runs


def test_a_run_launched_while_paused_says_so_and_shows_its_goal(center: Center, state_dir: Path) -> None:
    client = center.client()
    assert client.post_json("/api/pause", {}).status_code == 200
    assert client.post_json("/api/enqueue", {"goal": "tidy the notes folder", "id": "held-1"}).status_code == 201
    page = client.get("/runs/held-1").text
    assert "tidy the notes folder" in page
    assert 'id="queued-paused"' in page and "starts when an operator resumes" in page
    assert "for a spawner to claim it" not in page


def test_a_model_unavailable_run_offers_no_follow_up_while_its_model_is_missing(
    center: Center, state_dir: Path, tmp_path: Path
) -> None:
    [run_id] = seed_runs(state_dir, 1, status="model_unavailable", model="no-such-model:1b")
    with sqlite3.connect(state_dir / "audit.db") as conn:
        conn.execute("update runs set workspace = ? where id = ?", [str(tmp_path), run_id])
    client = center.client()
    page = client.get(f"/runs/{run_id}").text
    assert 'id="no-follow-up"' in page and "ollama pull no-such-model:1b" in page
    assert 'id="follow-up"' not in page
    refused = client.post_form(f"/runs/{run_id}/continue", {"goal": "try again"})
    assert refused.status_code == 409 and "cannot be continued" in refused.text
    assert not list((state_dir / "queue").glob("*.json")) if (state_dir / "queue").exists() else True


def test_an_error_page_links_to_where_the_person_came_from_and_the_lists(center: Center) -> None:
    client = center.client()
    answer = client.post_form("/approvals/no-such/decide", {"decision": "approve"})
    assert answer.status_code == 404
    links = answer.text.split('id="error-links"')[1].split("</ul>")[0]
    assert 'href="/approvals"' in links and 'href="/runs"' in links and 'href="/"' in links
    came = client.get("/runs/no-such-run", headers={"Referer": f"{center.url}/runs?status=failed"})
    assert came.status_code == 404 and 'href="/runs?status=failed"' in came.text
    elsewhere = client.get("/runs/no-such-run", headers={"Referer": "http://evil.example/x"})
    assert "evil.example" not in elsewhere.text


def test_the_runs_list_offers_each_recorded_value_of_every_filter_once(center: Center, state_dir: Path) -> None:
    seed_runs(state_dir, 12)
    with sqlite3.connect(state_dir / "audit.db") as conn:  # a value recorded empty is no choice
        conn.execute("update runs set source = '' where id = 'seed-00000'")
    choices = center.app.state.web.reader.choices()
    assert choices == {
        "status": ["done", "failed", "iteration_limit"],
        "agent_name": ["builder", "notes"],
        "model": ["llama3.1", "qwen2.5-coder"],
        "source": ["cli", "command-center", "timer"],
    }
    page = center.client().get("/runs").text
    assert page.count('<option value="iteration_limit"') == 1 and '<option value="notes"' in page


def test_a_huge_list_is_counted_up_to_the_cap_and_still_pages_to_its_end(
    center: Center, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader, "COUNT_CAP", 100)  # the list's cap, made small enough to seed past
    monkeypatch.setattr(runs, "COUNT_CAP", 100)
    seed_runs(state_dir, 130)
    client = center.client()
    first = client.get("/api/runs").json()
    assert (first["total"], first["total_is_lower_bound"], first["pages"], len(first["runs"])) == (100, True, 2, 50)
    last = client.get("/api/runs?page=3").json()
    assert len(last["runs"]) == 30 and last["runs"][-1]["id"] == "seed-00000"
    page = client.get("/runs").text
    assert "more than 100 runs" in page and 'rel="next"' in page
    few = client.get("/api/runs?status=failed").json()
    assert (few["total"], few["total_is_lower_bound"]) == (32, False)
