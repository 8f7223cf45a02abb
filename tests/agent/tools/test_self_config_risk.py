"""write_self_config asks in auto when the write widens hearth's security, and stays an edit otherwise.

The risk is judged per call against the file as it is now (agent/safety/widening.py): adding a mode of
auto or bypass, a host, a writable path or a sandbox relaxation widens; taking one of them away narrows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.safety.policy import Decision
from agent.safety.workspace import Workspace
from agent.services import RunServices
from agent.tools.gate import call_tool

BASE = """{
  services.hearth = {
    defaultMode = "auto";
    settings.netPrivateHosts = [
      "printer.lan"
    ];
    sandbox.writablePaths = [ "/srv/a" ];
  };
}
"""


def asked_for(tmp_path: Path, content: str, *, mode: str = "auto") -> tuple[list[str], bool, str]:
    repo = tmp_path / "config"
    repo.mkdir(exist_ok=True)
    (repo / "box.nix").write_text(BASE)
    (tmp_path / "ws").mkdir(exist_ok=True)
    asked: list[str] = []

    def approve(name: str, args: dict[str, object], reason: str) -> Decision:
        asked.append(reason)
        return Decision(False, by="test", detail="the test said no")

    with Workspace(tmp_path / "ws", services=RunServices(config_repo=repo)) as ws:
        result = call_tool("write_self_config", {"path": "box.nix", "content": content}, ws, mode=mode, approve=approve)
    return asked, result.ok, (repo / "box.nix").read_text()


WIDENING = {
    "bypass mode": BASE.replace('defaultMode = "auto"', 'defaultMode = "bypass"'),
    "a private host added on its own line": BASE.replace('"printer.lan"', '"printer.lan"\n      "169.254.169.254"'),
    "a writable path": BASE.replace('[ "/srv/a" ]', '[ "/srv/a" "/" ]'),
    "the sandbox off": BASE.replace("  };\n}", "    sandbox = { enable = false; };\n  };\n}"),
    "a unit's hardening dropped": BASE + "# systemd.services.hearth-agent.serviceConfig.NoNewPrivileges = false;\n",
}
NARROWING = {
    "plan mode": BASE.replace('defaultMode = "auto"', 'defaultMode = "plan"'),
    "a private host removed": BASE.replace('      "printer.lan"\n', ""),
    "a writable path removed": BASE.replace('[ "/srv/a" ]', "[ ]"),
    "a comment": BASE + "# the printer is on the LAN\n",
}


@pytest.mark.parametrize("content", WIDENING.values(), ids=WIDENING.keys())
def test_a_write_that_widens_security_asks_in_auto_and_is_not_written_when_denied(tmp_path: Path, content: str) -> None:
    asked, ok, now = asked_for(tmp_path, content)
    assert asked == ["write_self_config is dangerous and auto mode asks before running it"]
    assert not ok and now == BASE


@pytest.mark.parametrize("content", NARROWING.values(), ids=NARROWING.keys())
def test_a_write_that_narrows_or_keeps_security_runs_in_auto_without_asking(tmp_path: Path, content: str) -> None:
    asked, ok, now = asked_for(tmp_path, content)
    assert asked == [] and ok and now == content


def test_plan_mode_refuses_a_widening_write_and_a_narrowing_one(tmp_path: Path) -> None:
    for content in (WIDENING["bypass mode"], NARROWING["plan mode"]):
        asked, ok, now = asked_for(tmp_path, content, mode="plan")
        assert asked == [] and not ok and now == BASE


def test_a_new_file_that_grants_more_asks_and_a_plain_new_file_does_not(tmp_path: Path) -> None:
    repo = tmp_path / "config"
    repo.mkdir()
    (tmp_path / "ws").mkdir()
    asked: list[str] = []

    def approve(name: str, args: dict[str, object], reason: str) -> Decision:
        asked.append(name)
        return Decision(True, by="test")

    with Workspace(tmp_path / "ws", services=RunServices(config_repo=repo)) as ws:
        plain = call_tool("write_self_config", {"path": "notes.nix", "content": "{ }\n"}, ws, approve=approve)
        assert plain.ok and asked == []
        wide = call_tool(
            "write_self_config",
            {"path": "more.nix", "content": '{ services.hearth.defaultMode = "bypass"; }\n'},
            ws,
            approve=approve,
        )
    assert wide.ok and asked == ["write_self_config"] and wide.verdict == "approved"


def test_in_evolves_proposal_checkout_a_widening_write_stays_an_edit(tmp_path: Path) -> None:
    """The config repository is the run's own workspace only in hearth evolve's scratch worktree,
    whose writes become a proposal branch that is flagged and held apart, never applied by hearth."""
    repo = tmp_path / "proposal"
    repo.mkdir()
    (repo / "box.nix").write_text(BASE)
    with Workspace(repo, services=RunServices(config_repo=repo)) as ws:
        result = call_tool("write_self_config", {"path": "box.nix", "content": WIDENING["bypass mode"]}, ws)
    assert result.ok and result.verdict == "run"
