"""The doctor's checks of what this machine gives runs: Ollama and the models the profiles name, a
command sandbox, whether other users (nobody) can reach hearth's venv, code and exposed paths, git
(for checkpoints), the cgroup hierarchy the units' limits rely on, and systemd's hearth units.

Its own room because these ask something outside hearth (a server, the kernel, a program, PID 1),
not a path hearth keeps (files.py) or a file the operator wrote (config.py); the probe, `which` and
PID 1's name come in as arguments, so a test can answer for the machine.
"""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from agent.model.host import parse_host
from agent.safety.sandbox import SandboxUnavailable, detect
from hearth.doctor.finding import Finding
from hearth.run.router import AUTO, Route, against_pulled, pull_hint


def check_ollama(host: str, models: dict[str, list[str]], probe: Callable[[str], list[str] | None]) -> list[Finding]:
    """The one model host (HEARTH_MODEL_HOST, else OLLAMA_HOST), of its kind; `models`: model name ->
    the profiles that use it."""
    server = parse_host(host)
    pulled = probe(host)
    if pulled is None:
        # still an error (doctor answers "can a real run work now?", and none can), but the demo that
        # just worked needs no model server: say so, so a working demo and a failing doctor do not read as a contradiction
        fix = (
            "is ollama.service running? (OLLAMA_HOST)"
            if server.kind == "ollama"
            else "is it running? (HEARTH_MODEL_HOST)"
        )
        return [
            Finding(
                "ollama",
                "error",
                f"cannot reach {kind_name(server.kind)} at {server.base}; {fix}. "
                "`hearth demo` needs no model server (it plays a scripted model); real runs do",
            )
        ]
    found = [Finding("ollama", "ok", f"{kind_name(server.kind)} at {server.base} answers with {len(pulled)} model(s)")]
    return found + model_findings(models, pulled)


def model_findings(models: dict[str, list[str]], pulled: list[str], where: str = "") -> list[Finding]:
    """Each profile's model as its runs resolve it (hearth/run/router.py): pulled, or pulled by its
    tag (`qwen2.5-coder` as `qwen2.5-coder:7b`); not pulled, its runs take another pulled model (a
    warning naming it, and the name likely meant); nothing pulled, no run can work (an error)."""
    found = []
    for model, users in sorted(models.items()):
        who = f"profiles: {', '.join(users)}"
        chosen = against_pulled(Route(AUTO, model, "profile"), pulled)
        if chosen.problem:
            line = f"model {model} ({who}) is not pulled{where}, nor is any other; {pull_hint(model, pulled)}"
            found.append(Finding("models", "error", line))
        elif chosen.reason != "fallback":
            tagged = f" as {chosen.model}" if chosen.model not in (model, f"{model}:latest") else ""
            found.append(Finding("models", "ok", f"model {model} is pulled{tagged}{where} ({who})"))
        else:
            line = (
                f"model {model} ({who}) is not pulled{where}: its runs take {chosen.model}; {pull_hint(model, pulled)}"
            )
            found.append(Finding("models", "warn", line))
    return found


def kind_name(kind: str) -> str:
    """How a line names a server of this kind."""
    return {"ollama": "Ollama", "openai": "the OpenAI-compatible server"}.get(kind, kind)


def check_sandbox(kind: str) -> list[Finding]:
    try:
        used = detect(kind)
    except SandboxUnavailable as exc:
        return [Finding("sandbox", "error", f"no command sandbox here ({exc}); run_command will refuse to run")]
    except ValueError as exc:
        return [Finding("sandbox", "error", f"HEARTH_SANDBOX: {exc}")]
    if used == "none":
        return [Finding("sandbox", "warn", "HEARTH_SANDBOX=none: commands run without an OS sandbox")]
    return [Finding("sandbox", "ok", f"commands run under {used}" + (" (asked: auto)" if kind == "auto" else ""))]


def check_reach(places: Iterable[tuple[str, str]]) -> list[Finding]:
    """Whether a user other than hearth's own can enter each (what, path): hearth's venv and code,
    the paths exposed to commands. Commands hearth runs as nobody (the sandbox's user, the
    ordinary-user checks) start its Python and import hearth from there; a parent directory only
    its owner may enter (a home, a `mktemp -d` directory, mode 0700) stops them."""
    walls: dict[Path, list[str]] = {}
    for what, path in places:
        wall = closed_parent(Path(path))
        if wall is not None:
            walls.setdefault(wall, []).append(f"{what} {path}")
    findings = []
    for wall, blocked in walls.items():
        info = wall.stat()
        findings.append(
            Finding(
                "reach",
                "warn",
                f"{' and '.join(blocked)} {'is' if len(blocked) == 1 else 'are'} beneath {wall} "
                f"(mode {stat.S_IMODE(info.st_mode):04o}, owner {_owner(info.st_uid)}), "
                "which other users may not enter: a command hearth runs as nobody cannot start its Python or "
                "import hearth from there (ModuleNotFoundError); install hearth where every user may enter "
                f"(VENV=/opt/hearth/venv sh scripts/bootstrap.sh) or let them through (chmod o+x {wall})",
                str(wall),
            )
        )
    if not findings:
        findings.append(
            Finding("reach", "ok", "other users (nobody, whom commands run as) can reach hearth's venv and code")
        )
    return findings


def closed_parent(path: Path) -> Path | None:
    """The first directory on the way to `path` (itself included) that others may not search."""
    for directory in [*reversed(path.parents), path]:
        try:
            info = directory.stat()
        except OSError:
            return None  # gone or unreadable to hearth too: other checks say so
        if stat.S_ISDIR(info.st_mode) and not info.st_mode & stat.S_IXOTH:
            return directory
    return None


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def hearth_places(prefix: str, expose: Iterable[str]) -> list[tuple[str, str]]:
    """What commands run as nobody may need of hearth: its venv, its code, the exposed paths."""
    import hearth

    code = str(Path(hearth.__file__).resolve().parent)
    places = [("hearth's venv", prefix)] if prefix else []
    if not any(code.startswith(place + os.sep) for _, place in places):
        places.append(("hearth's code", code))
    return places + [("the exposed path", path) for path in expose]


def check_git(which: Callable[[str], str | None]) -> list[Finding]:
    if which("git") is None:
        return [Finding("git", "warn", "git is not installed: runs get no workspace checkpoints")]
    return [Finding("git", "ok", "git is installed: workspaces get checkpoint commits")]


def check_systemd(pid1: str, systemctl: str = "systemctl") -> list[Finding]:
    if pid1 != "systemd":
        return [Finding("systemd", "info", f"systemd is not PID 1 (PID 1 is {pid1!r}): hearth units not checked")]
    try:
        proc = subprocess.run(
            [systemctl, "list-units", "hearth*", "--all", "--plain", "--no-legend", "--no-pager"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [Finding("systemd", "error", f"cannot ask systemd about hearth units: {exc}")]
    units = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    if not units:
        return [Finding("systemd", "warn", "no hearth units are loaded; is services.hearth enabled?")]
    failed = [u[0] for u in units if len(u) > 2 and u[2] == "failed"]
    if failed:
        return [
            Finding("systemd", "error", f"failed hearth units: {', '.join(failed)}; see: journalctl -u {failed[0]}")
        ]
    return [Finding("systemd", "ok", f"{len(units)} hearth unit(s) loaded, none failed")]


def check_cgroups(fs: Path = Path("/sys/fs/cgroup")) -> list[Finding]:
    """cgroup v2 (one hierarchy, `cgroup.controllers` at its root) lets systemd enforce the agent
    unit's IPAddressDeny=/IPAddressAllow= (a BPF filter) and TasksMax=; under v1 or a hybrid it cannot,
    and the booted tests (tests/system/) skip those checks for the same reason."""
    if (fs / "cgroup.controllers").is_file():
        return [Finding("cgroups", "ok", "cgroup v2: the units' IPAddressDeny= and TasksMax= are enforced")]
    if not fs.is_dir():
        return [Finding("cgroups", "info", f"no cgroup hierarchy at {fs}: the units' limits were not checked")]
    return [
        Finding(
            "cgroups",
            "warn",
            "cgroup v1 here: systemd cannot enforce the agent unit's IPAddressDeny=/IPAddressAllow= (no BPF "
            "firewall), so a unit's own network is not confined to the model's address (commands still go "
            "through the run's proxy); boot with systemd.unified_cgroup_hierarchy=1 to enforce it",
        )
    ]


def pid1_name() -> str:
    try:
        return Path("/proc/1/comm").read_text().strip()
    except OSError:
        return "unknown"
