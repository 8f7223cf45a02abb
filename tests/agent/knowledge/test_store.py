"""The knowledge store and its tools: BM25 ranking, scopes, chunking, incremental re-indexing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.knowledge.chunking import chunk_text
from agent.knowledge.indexing import glob_regex
from agent.knowledge.store import KnowledgeStore
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool


@pytest.fixture
def store(tmp_path: Path) -> KnowledgeStore:
    return KnowledgeStore(tmp_path / "knowledge.db")


def tool(ws: Workspace, name: str, **args: object) -> str:
    result = call_tool(name, args, ws, mode="auto")
    assert result.ok, result.output
    return result.output


def failing(ws: Workspace, name: str, **args: object) -> str:
    result = call_tool(name, args, ws, mode="auto")
    assert not result.ok
    return result.output


def ws_for(tmp_path: Path, store: KnowledgeStore, agent: str = "default") -> Workspace:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    return Workspace(root, services=RunServices(knowledge=store, agent_name=agent, run_id="r1"))


def test_search_ranks_the_most_relevant_chunk_first(store: KnowledgeStore) -> None:
    store.add("Bread needs flour, water, salt and yeast. Knead it well.", title="Bread", source="bread")
    store.add("The deploy script copies the build to the server over rsync.", title="Deploy", source="deploy")
    store.add(
        "Deploy on Fridays is forbidden. The deploy freeze starts Friday noon; deploy earlier.",
        title="Deploy policy",
        source="policy",
    )
    hits = store.search("when can I deploy?")
    assert [h.source for h in hits] == ["policy", "deploy"]
    assert hits[0].score > hits[1].score  # the fused rank score: higher is better
    assert [h.way for h in hits] == ["text", "text"]  # no embedder: found by text alone


def test_a_title_match_outranks_a_passing_mention(store: KnowledgeStore) -> None:
    store.add("We talked about many things, and kubernetes came up once among them.", title="Meeting", source="m")
    store.add("Pods, services and how we run them.", title="Kubernetes", source="k")
    assert store.search("kubernetes")[0].source == "k"


def test_search_words_are_never_fts_operators(store: KnowledgeStore) -> None:
    store.add("NEAR the river AND the hills", title="t", source="s")
    for query in ('"unbalanced', "a AND OR NOT", "title:x", "*", "NEAR(", "-x"):
        store.search(query)  # no sqlite error
    assert store.search("river NEAR")[0].source == "s"


def test_agent_scoped_entries_are_seen_only_by_that_agent(tmp_path: Path, store: KnowledgeStore) -> None:
    tool(ws_for(tmp_path, store, "alice"), "kb_add", text="alice's private fact about zebras", scope="agent")
    tool(ws_for(tmp_path, store, "alice"), "kb_add", text="a shared fact about zebras")
    assert "private" in tool(ws_for(tmp_path, store, "alice"), "kb_search", query="zebras")
    bob = tool(ws_for(tmp_path, store, "bob"), "kb_search", query="zebras")
    assert "shared" in bob and "private" not in bob


def test_kb_add_with_the_same_source_replaces_only_changed_chunks(store: KnowledgeStore) -> None:
    paragraphs = [f"Paragraph {n} talks about topic{n} in some detail. " * 6 for n in range(30)]
    first = store.add("\n\n".join(paragraphs), title="doc", source="s")
    paragraphs[25] = "A rewritten paragraph about something else entirely. " * 6
    second = store.add("\n\n".join(paragraphs), title="doc", source="s")
    assert first.added > 5 and second.doc_id == first.doc_id
    assert second.kept >= first.added - 3 and 0 < second.added <= 3
    assert store.search("rewritten")[0].source == "s" and not store.search("topic25")
    assert store.add("\n\n".join(paragraphs), title="doc", source="s").unchanged


def test_chunks_overlap_and_respect_the_size(store: KnowledgeStore) -> None:
    text = "\n".join(f"line {n} " + "word " * 20 for n in range(200))
    chunks = chunk_text(text, size=1500, overlap=200)
    assert all(len(c) <= 1500 + 200 + 150 for c in chunks) and len(chunks) > 10
    for before, after in zip(chunks, chunks[1:]):
        assert after.splitlines()[0].strip() in before  # each chunk starts with the end of the one before
    assert chunk_text("   ") == [] and chunk_text("short") == ["short"]


def make_project(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def launch_rocket():\n    return 'liftoff'\n")
    (root / "README.md").write_text("# Project\nThe rocket launcher project.\n")
    (root / "notes.txt").write_text("Remember the countdown sequence.\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0rocket")
    (root / "big.txt").write_text("rocket " * 200_000)
    for skipped in (".git", "node_modules/pkg", "env"):
        (root / skipped).mkdir(parents=True)
        (root / skipped / "rocket.js").write_text("rocket in a skipped dir")
    (root / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    os.symlink("/etc/passwd", root / "link.txt")


def test_index_dir_indexes_text_files_and_skips_binaries_big_files_vcs_venvs_and_symlinks(
    tmp_path: Path, store: KnowledgeStore
) -> None:
    ws = ws_for(tmp_path, store)
    make_project(ws.root / "proj")
    out = tool(ws, "index_dir", path="proj")
    assert "3 text files (3 new" in out
    assert "1 binary files" in out and "1 over 1 MB" in out and "1 symlinks" in out
    assert "1 virtualenv dirs" in out and "2 skipped dirs" in out
    titles = sorted(d["title"] for d in store.documents())
    assert titles == ["proj/README.md", "proj/notes.txt", "proj/src/app.py"]
    assert "skipped dir" not in tool(ws, "kb_search", query="rocket")


def test_reindexing_updates_changed_files_drops_deleted_ones_and_skips_unchanged(
    tmp_path: Path, store: KnowledgeStore
) -> None:
    ws = ws_for(tmp_path, store)
    make_project(ws.root / "proj")
    tool(ws, "index_dir", path="proj")
    (ws.root / "proj" / "notes.txt").unlink()
    (ws.root / "proj" / "src" / "app.py").write_text("def land_rocket():\n    return 'touchdown'\n")
    (ws.root / "proj" / "NEW.md").write_text("A new file about parachutes.\n")
    out = tool(ws, "index_dir", path="proj")
    assert "3 text files (1 new, 1 changed, 1 unchanged), 1 removed" in out
    assert "touchdown" in tool(ws, "kb_search", query="touchdown")
    assert "no knowledge matches" in tool(ws, "kb_search", query="liftoff countdown")
    assert "(0 new, 0 changed, 3 unchanged), 0 removed; chunks 0 added" in tool(ws, "index_dir", path="proj")


def test_index_dir_with_a_glob_indexes_only_matching_files(tmp_path: Path, store: KnowledgeStore) -> None:
    ws = ws_for(tmp_path, store)
    make_project(ws.root / "proj")
    assert "1 text files" in tool(ws, "index_dir", path="proj", glob="*.py")
    assert [d["title"] for d in store.documents()] == ["proj/src/app.py"]


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("*.py", "a/b/c.py", True),
        ("*.py", "c.pyc", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/x/a.py", False),
        ("docs/**/*.md", "docs/a/b/c.md", True),
        ("docs/**/*.md", "docs/c.md", True),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
    ],
)
def test_globs_match_like_a_shell(pattern: str, path: str, hit: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is hit


def test_index_dir_outside_the_workspace_is_a_one_line_error_and_stores_nothing(
    tmp_path: Path, store: KnowledgeStore
) -> None:
    ws = ws_for(tmp_path, store)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("outside text")
    os.symlink(tmp_path / "outside", ws.root / "escape")
    for path in ("../outside", str(tmp_path / "outside"), "escape", "missing"):
        out = failing(ws, "index_dir", path=path)
        assert "\n" not in out and out.startswith("Error:")
    assert store.documents() == []


def test_remember_and_recall_lessons_with_tags_and_dedupe(tmp_path: Path, store: KnowledgeStore) -> None:
    ws = ws_for(tmp_path, store, "builder")
    assert (
        tool(ws, "remember", lesson="Run make test before commit", tags="workflow, testing")
        == "remembered lesson #1 (agent:builder)"
    )
    assert tool(ws, "remember", lesson="run make  test before commit") == "already remembered as lesson #1"
    out = tool(ws, "recall", query="what to do before a commit")
    assert "Run make test before commit" in out and "tags: workflow, testing" in out
    assert "no lessons" in tool(ws_for(tmp_path, store, "other"), "recall", query="commit")


def test_bad_knowledge_input_is_a_one_line_error(tmp_path: Path, store: KnowledgeStore) -> None:
    ws = ws_for(tmp_path, store)
    assert "empty" in failing(ws, "kb_add", text="   ")
    assert "over the limit" in failing(ws, "kb_add", text="x" * 200_001)
    assert "between 1 and 20" in failing(ws, "kb_search", query="x", k=50)
    assert "keep it short" in failing(ws, "remember", lesson="y" * 2001)
    assert store.documents() == [] and store.lessons() == []
    bare = Workspace(ws.root)
    assert "no knowledge base" in failing(bare, "kb_search", query="x")


def test_plan_mode_searches_but_does_not_store(tmp_path: Path, store: KnowledgeStore) -> None:
    ws = ws_for(tmp_path, store)
    assert call_tool("kb_add", {"text": "x"}, ws, mode="plan").verdict == "denied"
    assert call_tool("kb_search", {"query": "x"}, ws, mode="plan").ok
    assert call_tool("recall", {"query": "x"}, ws, mode="plan").ok
    assert call_tool("remember", {"lesson": "x"}, ws, mode="plan").verdict == "denied"


def test_an_index_that_stops_at_the_file_cap_removes_nothing(
    tmp_path: Path, store: KnowledgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = ws_for(tmp_path, store)
    for n in range(5):
        (ws.root / f"f{n}.txt").write_text(f"file number {n}")
    tool(ws, "index_dir")
    monkeypatch.setattr("agent.knowledge.indexing.MAX_FILES", 2)
    out = tool(ws, "index_dir")
    assert "stopped at 2 files" in out and "0 removed" in out
    assert len(store.documents()) == 5
