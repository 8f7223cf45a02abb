"""Credentials: the 0600 store, systemd's directory, host binding, run lists, `hearth creds`."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from agent.net.guard import CredentialRefused
from agent.safety.redaction import Redactor
from agent.safety.sandbox import SandboxPolicy, SandboxUnavailable, run_sandboxed
from hearth.credentials import CredentialStore, RunCredentials, check_run_credentials
from hearth.errors import ConfigError, UsageError
from tests.cli_support import run_cli_input
from tests.conftest import run_cli

VALUE = "hc-canary-5f0e9d2a7b"


def resolver(tmp_path: Path, allowed: list[str], systemd: Path | None = None) -> tuple[RunCredentials, Redactor]:
    redactor = Redactor()
    return RunCredentials(CredentialStore(tmp_path / "credentials.json", systemd), allowed, redactor), redactor


def test_the_store_is_0600_and_a_value_resolves_only_for_its_hosts(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    store.set("GH", ["api.github.com", "*.githubusercontent.com"], VALUE + "\n")
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    creds, redactor = resolver(tmp_path, ["GH"])
    assert creds("GH", "api.github.com") == VALUE
    assert creds("GH", "raw.githubusercontent.com") == VALUE
    assert redactor(f"echo {VALUE}") == "echo [redacted:GH]"
    for host in ("github.com", "evil.test", "api.github.com.evil.test"):
        with pytest.raises(CredentialRefused, match=f"may not be sent to {host}"):
            creds("GH", host)


def test_unlisted_unknown_and_odd_names_are_refused_with_a_clear_error_never_an_empty_value(tmp_path: Path) -> None:
    CredentialStore(tmp_path / "credentials.json").set("GH", ["api.github.com"], VALUE)
    creds, _ = resolver(tmp_path, ["GH", "NOPE"])
    with pytest.raises(CredentialRefused, match="not listed for this run"):
        resolver(tmp_path, [])[0]("GH", "api.github.com")
    with pytest.raises(CredentialRefused, match="'NOPE' is unknown; an operator adds it with: hearth creds set NOPE"):
        creds("NOPE", "api.github.com")
    for odd in ("a b", "../x", "x$y", "", "1abc", "ä"):
        with pytest.raises(CredentialRefused, match="is not valid"):
            creds(odd, "api.github.com")


def test_a_systemd_credential_wins_over_the_store_and_still_needs_a_host_binding(tmp_path: Path) -> None:
    systemd = tmp_path / "creds"
    systemd.mkdir()
    (systemd / "DB").write_text("from-systemd-0123\n")
    (systemd / "LOOSE").write_text("unbound-value-999")
    store = CredentialStore(tmp_path / "credentials.json", systemd)
    store.set("DB", ["db.example.com"], None)
    creds, redactor = resolver(tmp_path, ["DB", "LOOSE"], systemd)
    assert creds("DB", "db.example.com") == "from-systemd-0123"
    with pytest.raises(CredentialRefused, match="'LOOSE' is unknown"):
        creds("LOOSE", "db.example.com")
    assert store.values() == {"DB": "from-systemd-0123", "LOOSE": "unbound-value-999"}
    sources = {e["name"]: e["source"] for e in store.entries()}
    assert sources == {"DB": "systemd", "LOOSE": "systemd (not bound to any host: unusable)"}


def test_a_store_readable_by_others_is_refused(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    store.set("GH", ["api.github.com"], VALUE)
    os.chmod(store.path, 0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        store.load()


def test_short_multiline_and_hostless_values_are_refused(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    with pytest.raises(UsageError, match="at least 8"):
        store.set("GH", ["a.com"], "short")
    with pytest.raises(UsageError, match="one line"):
        store.set("GH", ["a.com"], "two\nlines-of-value")
    with pytest.raises(UsageError, match="at least one --host"):
        store.set("GH", [], VALUE)
    with pytest.raises(UsageError, match="not a valid host"):
        store.set("GH", ["bad host"], VALUE)
    assert not store.path.exists()


def test_a_run_listing_an_unset_or_odd_credential_is_rejected_up_front(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    store.set("GH", ["api.github.com"], VALUE)
    check_run_credentials(["GH"], store)
    with pytest.raises(UsageError, match="'MISSING' listed for this run is not set"):
        check_run_credentials(["GH", "MISSING"], store)
    with pytest.raises(UsageError, match="not valid"):
        check_run_credentials(["bad name"], store)


def test_creds_cli_reads_the_value_from_stdin_and_never_prints_it(state_dir: Path) -> None:
    proc = run_cli_input(["creds", "set", "GH", "--host", "api.github.com"], VALUE + "\n")
    assert proc.returncode == 0, proc.stderr
    assert VALUE not in proc.stdout + proc.stderr
    listed = run_cli("hearth", "creds", "list", "--json")
    assert json.loads(listed.stdout)[0] | {"updated_at": ""} == {
        "name": "GH",
        "hosts": ["api.github.com"],
        "source": "store",
        "updated_at": "",
    }
    assert VALUE not in listed.stdout and VALUE not in run_cli("hearth", "creds", "list").stdout
    assert run_cli("hearth", "creds", "rm", "GH").returncode == 0
    assert json.loads(run_cli("hearth", "creds", "list", "--json").stdout) == []


def test_creds_cli_bad_input_is_one_line_and_stores_nothing(state_dir: Path) -> None:
    for argv, stdin, message in [
        (["creds", "set", "bad name", "--host", "a.com"], VALUE, "is not valid"),
        (["creds", "set", "GH", "--host", "a.com"], "", "no value for GH on stdin"),
        (["creds", "set", "GH", "--host", "a.com"], "short", "at least 8"),
        (["creds", "rm", "NOPE"], "", "no credential named 'NOPE'"),
    ]:
        proc = run_cli_input(argv, stdin)
        assert proc.returncode == 2 and message in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert not (state_dir / "credentials.json").exists()


def test_a_child_process_sees_no_credential_value_directory_or_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    systemd = tmp_path / "creds"
    systemd.mkdir()
    (systemd / "DB").write_text(VALUE)
    state = tmp_path / "state"
    CredentialStore(state / "credentials.json").set("GH", ["a.com"], VALUE)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(systemd))
    ws = tmp_path / "ws"
    ws.mkdir()
    try:
        result = run_sandboxed(
            f"env; cat {systemd}/DB {state}/credentials.json; echo done",
            ws,
            policy=SandboxPolicy(kind="auto", hide=(str(state),)),
            timeout_s=30,
        )
    except SandboxUnavailable as exc:
        pytest.skip(f"no command sandbox here: {exc}")
    assert "done" in result.output
    assert VALUE not in result.output and "CREDENTIALS_DIRECTORY" not in result.output


def test_a_run_with_an_unset_credential_or_a_bad_egress_entry_is_rejected_and_recorded(state_dir: Path) -> None:
    for args, message in [
        (["--credential", "NOPE"], "'NOPE' listed for this run is not set"),
        (["--credential", "a b"], "is not valid"),
        (["--egress", "bad host"], "bad egress entry"),
    ]:
        proc = run_cli("hearth-loop", "--ollama-host", "127.0.0.1:9", *args, "do it")
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    runs = json.loads(run_cli("hearth", "runs", "--json").stdout)
    assert [r["status"] for r in runs] == ["rejected"] * 3
