"""Workspace checkpoints: commits before and after a run, hearth's identity, never a parent repo's history."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent.safety.sandbox import SandboxPolicy
from hearth.run.checkpoints import Checkpoints, repository_kind, tag_name
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, Raw, final_answer, tool_call

pytestmark = pytest.mark.skipif(
    subprocess.run(["sh", "-c", "command -v git"]).returncode != 0,
    reason="git is not installed (scripts/bootstrap.sh installs it as root)",
)

MACHINE = {
    "GIT_AUTHOR_NAME": "Machine Person",
    "GIT_AUTHOR_EMAIL": "machine@example.com",
    "GIT_COMMITTER_NAME": "Machine Person",
    "GIT_COMMITTER_EMAIL": "machine@example.com",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **MACHINE, "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def history(state_dir: Path, name: str) -> Path:
    """hearth's own git directory for a workspace's checkpoints (never inside the workspace)."""
    [found] = [p for p in (state_dir / "checkpoints").iterdir() if p.name.startswith(name)]
    return found


def hgit(git_dir: Path, ws: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(ws)}
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True, env=env, cwd=ws).stdout.strip()


def user_repo(path: Path, branch: str = "feature") -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", branch)
    (path / "README").write_text("a project\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "the user's commit")
    return path


def hearth_loop(fake: FakeOllama, workspace: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return run_cli(
        "hearth-loop",
        "--ollama-host",
        fake.url,
        "--workspace",
        str(workspace),
        "--mode",
        "bypass",
        *args,
        "the goal",
        env=env,
    )


def show(run_id: str) -> dict[str, Any]:
    return json.loads(run_cli("hearth", "show", run_id, "--json").stdout)


def last_run_id() -> str:
    return json.loads(run_cli("hearth", "runs", "--json", "--limit", "1").stdout)[0]["id"]


def test_a_plain_workspace_gets_its_history_in_hearths_own_git_directory(state_dir: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with FakeOllama([tool_call("write_file", {"path": "out.txt", "content": "made"}), final_answer("ok")]) as fake:
        assert hearth_loop(fake, ws).returncode == 0
    run_id = last_run_id()
    assert not (ws / ".git").exists()  # the workspace is only the work tree
    gd = history(state_dir, "ws-")
    assert (
        hgit(gd, ws, "log", "--format=%an <%ae> %cn|%s")
        == f"hearth <hearth@localhost> hearth|hearth: run {run_id} done"
    )
    assert hgit(gd, ws, "tag") == f"hearth/{run_id}/done" and hgit(gd, ws, "branch", "--show-current") == "main"
    assert hgit(gd, ws, "show", "--name-only", "--format=", "HEAD") == "out.txt"
    before, after = show(run_id)["checkpoints"]
    assert (before["phase"], before["status"], before["commit_sha"]) == ("before", "unchanged", None)
    assert (after["phase"], after["status"], after["tag"], after["files"]) == (
        "after",
        "committed",
        f"hearth/{run_id}/done",
        1,
    )
    assert after["commit_sha"] == hgit(gd, ws, "rev-parse", "HEAD") and after["git_dir"] == str(gd)


def test_what_the_agent_plants_in_a_plain_workspace_is_never_run_by_hearths_git(
    state_dir: Path, tmp_path: Path
) -> None:
    """During the run the agent makes a .git of its own with a filter, an fsmonitor and hooks, and a
    .gitattributes naming the filter: hearth's history lives elsewhere with hearth's config, so
    none of it is even read."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "work.txt").write_text("w")
    marker = ws / "PLANTED-RAN"  # inside the workspace: anything that ran could write it
    plant = (
        "git init -q && "
        f"git config filter.evil.clean 'touch {marker}; cat' && git config core.fsmonitor 'touch {marker}' && "
        f"for h in pre-commit post-commit reference-transaction; do printf '#!/bin/sh\\ntouch {marker}\\n' "
        "> .git/hooks/$h; chmod +x .git/hooks/$h; done && echo '* filter=evil' > .gitattributes && echo m > more.txt"
    )
    with FakeOllama([tool_call("run_command", {"command": plant}), final_answer("ok")]) as fake:
        assert hearth_loop(fake, ws).returncode == 0
    assert (ws / ".git" / "hooks" / "pre-commit").exists() and not marker.exists()
    gd = history(state_dir, "ws-")
    assert hgit(gd, ws, "show", "--name-only", "--format=", "HEAD").split() == [".gitattributes", "more.txt"]
    assert hgit(gd, ws, "show", "HEAD:more.txt") == "m"  # stored as written: no filter touched it
    assert (
        f"compare: git --git-dir={gd} --work-tree={ws.resolve()} diff"
        in run_cli("hearth", "show", last_run_id()).stdout
    )


def test_a_dirty_user_repo_gets_a_before_and_an_after_commit_on_its_current_branch(
    state_dir: Path, tmp_path: Path
) -> None:
    ws = user_repo(tmp_path / "project")
    (ws / "README").write_text("a project, edited by the user\n")
    with FakeOllama([tool_call("write_file", {"path": "new.txt", "content": "n"}), final_answer("ok")]) as fake:
        assert hearth_loop(fake, ws).returncode == 0
    run_id = last_run_id()
    subjects = git(ws, "log", "--format=%s").splitlines()
    assert subjects == [f"hearth: run {run_id} done", f"hearth: checkpoint before run {run_id}", "the user's commit"]
    assert git(ws, "branch", "--show-current") == "feature"
    assert git(ws, "show", "--name-only", "--format=", f"hearth/{run_id}/before") == "README"
    body = git(ws, "log", "-1", "--format=%B")
    assert f"Hearth-Run: {run_id}" in body and "Hearth-Outcome: done" in body and "Hearth-Goal: the goal" in body
    text = run_cli("hearth", "show", run_id).stdout
    before, after = (git(ws, "rev-parse", "--short=12", f"hearth/{run_id}/{t}") for t in ("before", "done"))
    assert f"before committed {before}" in " ".join(text.split())
    assert f"compare: git -C {ws} diff {before} {after}" in text


def test_a_clean_run_that_changes_nothing_makes_no_commit(state_dir: Path, tmp_path: Path) -> None:
    ws = user_repo(tmp_path / "project")
    with FakeOllama([tool_call("list_files", {}), final_answer("looked")]) as fake:
        assert hearth_loop(fake, ws).returncode == 0
    assert git(ws, "log", "--format=%s") == "the user's commit" and git(ws, "tag") == ""
    assert [c["status"] for c in show(last_run_id())["checkpoints"]] == ["unchanged", "unchanged"]


def test_the_outcome_tags_a_failed_run_too(state_dir: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    script = [tool_call("write_file", {"path": "half.txt", "content": "h"}), Raw(200, "garbage", "text/plain")]
    with FakeOllama(script) as fake:
        assert hearth_loop(fake, ws).returncode == 1
    assert hgit(history(state_dir, "ws-"), ws, "tag") == f"hearth/{last_run_id()}/failed"


def test_a_workspace_inside_another_repository_is_never_committed_to(state_dir: Path, tmp_path: Path) -> None:
    parent = user_repo(tmp_path / "project")
    ws = parent / "sub"
    ws.mkdir()
    with FakeOllama([tool_call("write_file", {"path": "x.txt", "content": "x"}), final_answer("ok")]) as fake:
        proc = hearth_loop(fake, ws)
    assert proc.returncode == 0
    assert git(parent, "log", "--format=%s") == "the user's commit" and git(parent, "tag") == ""
    assert not (ws / ".git").exists()
    assert f"the workspace is inside the git repository at {parent}" in proc.stdout
    assert [c["status"] for c in show(last_run_id())["checkpoints"]] == ["skipped", "skipped"]


def test_the_machines_git_config_and_hooks_are_never_used(state_dir: Path, tmp_path: Path) -> None:
    ws = user_repo(tmp_path / "project")
    marker = tmp_path / "hook-ran"
    global_config = tmp_path / "gitconfig"
    global_config.write_text(
        f"[user]\n  name = Global Person\n  email = global@example.com\n[core]\n  hooksPath = {tmp_path / 'hooks'}\n"
    )
    (tmp_path / "hooks").mkdir()
    hook = tmp_path / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (ws / "dirty.txt").write_text("d")
    with FakeOllama([final_answer("ok")]) as fake:
        proc = hearth_loop(fake, ws, env={"GIT_CONFIG_GLOBAL": str(global_config), "HOME": str(tmp_path)})
    assert proc.returncode == 0
    assert git(ws, "log", "-1", "--format=%an <%ae>") == "hearth <hearth@localhost>"
    assert not marker.exists()


def test_a_user_repository_whose_config_names_a_filter_is_never_committed_to(state_dir: Path, tmp_path: Path) -> None:
    """A previous run could have written .git/config: hearth runs no filter, so it does not commit there."""
    ws = user_repo(tmp_path / "project")
    marker = ws / "PLANTED-RAN"  # inside the workspace: the sandbox would let a filter write it
    with open(ws / ".git" / "config", "a") as config:
        config.write(f'[filter "evil"]\n  clean = "touch {marker}; cat"\n')
    (ws / ".gitattributes").write_text("* filter=evil\n")
    with FakeOllama([tool_call("write_file", {"path": "more.txt", "content": "m"}), final_answer("ok")]) as fake:
        proc = hearth_loop(fake, ws)
    assert proc.returncode == 0 and not marker.exists()
    assert git(ws, "log", "--format=%s") == "the user's commit"
    before, after = show(last_run_id())["checkpoints"]
    assert (before["status"], after["status"]) == ("skipped", "skipped")
    assert "defines clean/smudge filters (evil)" in before["detail"]


def test_hooks_fsmonitor_and_drivers_in_a_user_repository_never_run(state_dir: Path, tmp_path: Path) -> None:
    ws = user_repo(tmp_path / "project")
    marker = ws / "PLANTED-RAN"
    with open(ws / ".git" / "config", "a") as config:
        config.write(
            f'[core]\n  fsmonitor = "touch {marker}"\n  pager = "touch {marker}"\n  editor = "touch {marker}"\n'
            f'[diff "evil"]\n  textconv = "touch {marker}"\n[gpg]\n  program = "touch {marker}"\n'
            "[commit]\n  gpgSign = true\n"
        )
    (ws / ".gitattributes").write_text("* diff=evil\n")
    for hook in ("pre-commit", "commit-msg", "post-commit", "post-index-change", "reference-transaction"):
        (ws / ".git" / "hooks" / hook).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (ws / ".git" / "hooks" / hook).chmod(0o755)
    with FakeOllama([tool_call("write_file", {"path": "more.txt", "content": "m"}), final_answer("ok")]) as fake:
        assert hearth_loop(fake, ws).returncode == 0
    assert not marker.exists()
    assert git(ws, "log", "-1", "--format=%s").endswith(" done")


def test_a_config_changed_during_the_run_refuses_the_after_commit(state_dir: Path, tmp_path: Path) -> None:
    ws = user_repo(tmp_path / "project")
    marker = ws / "PLANTED-RAN"
    plant = f"printf '[core]\\n  fsmonitor = \"touch {marker}\"\\n' >> .git/config && echo x > work.txt"
    script = [tool_call("run_command", {"command": plant}), final_answer("ok")]
    with FakeOllama(script) as fake:
        assert hearth_loop(fake, ws).returncode == 0
    assert "fsmonitor" in (ws / ".git" / "config").read_text() and not marker.exists()
    after = show(last_run_id())["checkpoints"][1]
    assert after["status"] == "refused" and "git config changed during the run" in after["detail"]
    assert git(ws, "log", "--format=%s") == "the user's commit"


def test_an_agents_own_commits_get_the_outcome_tag(state_dir: Path, tmp_path: Path) -> None:
    ws = user_repo(tmp_path / "project")
    commit = "git add -A && git -c user.name=agent -c user.email=a@b commit -q -m 'agent work'"
    script = [
        tool_call("write_file", {"path": "w.txt", "content": "w"}),
        tool_call("run_command", {"command": commit}),
        final_answer("committed"),
    ]
    with FakeOllama(script) as fake:
        assert hearth_loop(fake, ws).returncode == 0
    run_id = last_run_id()
    assert git(ws, "log", "-1", "--format=%s") == "agent work"
    assert git(ws, "tag", "--points-at", "HEAD") == f"hearth/{run_id}/done"
    assert show(run_id)["checkpoints"][1]["status"] == "tagged"


def test_state_inside_the_workspace_and_the_sandbox_tmp_are_never_committed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "state").mkdir(parents=True)
    (ws / "state" / "audit.db").write_text("db")
    (ws / ".tmp").mkdir()
    (ws / ".tmp" / "scratch").write_text("s")
    (ws / "work.txt").write_text("w")
    points = Checkpoints(ws, "r1", SandboxPolicy(kind="none"), exclude=("state",), history=tmp_path / "histories")
    first = points.before(agent_name="a", model="m", goal="g")
    assert first.status == "committed" and first.files == 1
    assert hgit(Path(points.history_dir or ""), ws, "ls-files") == "work.txt"


def test_the_repository_kind_decides_where_hearth_may_commit(tmp_path: Path) -> None:
    user_repo(tmp_path / "repo")
    (tmp_path / "repo" / "sub").mkdir()
    (tmp_path / "plain").mkdir()
    assert repository_kind(tmp_path / "repo") == ("own", tmp_path / "repo")
    assert repository_kind(tmp_path / "repo" / "sub") == ("parent", tmp_path / "repo")
    assert repository_kind(tmp_path / "plain")[0] == "none"
    git(tmp_path / "repo", "worktree", "add", "-q", str(tmp_path / "wt"))
    assert repository_kind(tmp_path / "wt") == ("linked", tmp_path / "wt")


def test_a_worktree_workspace_gets_no_checkpoints_and_its_repository_is_untouched(
    state_dir: Path, tmp_path: Path
) -> None:
    repo = user_repo(tmp_path / "repo")
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"))
    with FakeOllama([tool_call("write_file", {"path": "w.txt", "content": "w"}), final_answer("ok")]) as fake:
        proc = hearth_loop(fake, tmp_path / "wt")
    assert proc.returncode == 0
    assert "whose repository lies outside it" in proc.stdout
    assert git(repo, "log", "--all", "--format=%s") == "the user's commit"
    assert git(tmp_path / "wt", "status", "--porcelain") == "?? w.txt"


def test_tag_names_are_always_valid_refs() -> None:
    assert tag_name("20260101T000000-abc123", "done") == "hearth/20260101T000000-abc123/done"
    assert tag_name("weird id/..:~^", "iteration_limit") == "hearth/weird-id/iteration_limit"


def test_a_fresh_per_run_workspace_is_its_own_repository_even_under_a_project(tmp_path: Path) -> None:
    """`make demo` keeps its state in ./.hearth inside the checkout: its workspaces are still hearth's."""
    project = user_repo(tmp_path / "project")
    (project / "AGENTS.md").write_text("NOTES OF THE ENCLOSING PROJECT")
    state = project / ".hearth"
    with FakeOllama([tool_call("write_file", {"path": "f.txt", "content": "f"}), final_answer("ok")]) as fake:
        proc = run_cli(
            "hearth-loop",
            "--ollama-host",
            fake.url,
            "go",
            env={"HEARTH_STATE_DIR": str(state), "HEARTH_CONFIG_DIR": str(tmp_path / "cfg")},
        )
    assert proc.returncode == 0, proc.stderr
    [ws] = (state / "agents").iterdir()
    assert hgit(history(state, ws.name), ws, "log", "--format=%s").startswith("hearth: run ")
    assert git(project, "log", "--format=%s") == "the user's commit"
    assert "NOTES OF THE ENCLOSING PROJECT" not in fake.requests[0]["messages"][0]["content"]
