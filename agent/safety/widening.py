"""Which changes to hearth's own NixOS configuration widen its security.

One table (SECURITY_PATTERNS) read two ways:

- ``diff_findings(diff)``: why a proposal's diff touches security settings at all (hearth/evolve.py
  flags the proposal; either direction counts there, a person reads it).
- ``widening(old, new)``: why writing ``new`` over ``old`` widens security, for write_self_config's
  risk (agent/tools/config_repo.py): a widening write is ``dangerous`` (asks in auto), any other
  stays ``edit``. A line counts with the keys of the lists and sets it stands in (a host added on
  its own line inside ``allowedHosts = [`` is an egress change). Added security lines widen; a
  removed line widens too unless it only granted something (ALLOWANCE: a mode of auto or bypass,
  auto-approved commands, allowed tools, hosts, writable paths), whose removal narrows.
"""

from __future__ import annotations

import difflib
import re

# Changed lines that widen (or may widen) hearth's security; each pattern carries its reason,
# which starts with the kind of widening: sandbox, credentials, mode, tools, egress, writable
# paths, hardening, users, module.
SECURITY_PATTERNS = [
    (
        r"services\.hearth\.(sandbox|submitters|credentials|configRepo|limits|package)\b|\b(sandbox|submitters|credentials|configRepo)\s*=",
        "sandbox, credentials or submitters: changes services.hearth's sandbox, submitters, credentials, config repo or limits",
    ),
    (
        r"\b(HEARTH_SANDBOX|bwrap|landlock|seccomp|SystemCallFilter|NoNewPrivileges|CapabilityBoundingSet|AmbientCapabilities)\b",
        "sandbox: changes the command sandbox or a unit's system-call and capability limits",
    ),
    (
        r"\b(LoadCredential|SetCredential|LoadCredentialEncrypted|CREDENTIALS_DIRECTORY)\b",
        "credentials: changes which credentials a unit is handed",
    ),
    (
        r"\b(defaultMode|mode|max_mode|maxMode|HEARTH_MODE)\s*=\s*\"?(auto|bypass)|\b(autoCommands|HEARTH_AUTO_COMMANDS|autoApprovedCommands)\b",
        "mode: lets agents run more without asking (auto or bypass mode, auto-approved commands)",
    ),
    (r"allowedTools|allowed_tools|maxTools|max_tools", "tools: changes what tools agents get"),
    (
        r"\b(egress|allowedHosts|allowed_hosts|netPrivateHosts|HEARTH_NET_PRIVATE_HOSTS|PrivateNetwork|IPAddressAllow|IPAddressDeny|RestrictAddressFamilies)\b",
        "egress: changes where agents' network tools or units may connect",
    ),
    (
        r"\b(ReadWritePaths|BindPaths|BindReadOnlyPaths|writablePaths|ReadOnlyPaths|InaccessiblePaths|ProtectSystem|ProtectHome|StateDirectory|workspaceRoot)\b",
        "writable paths: changes what a unit or an agent may write",
    ),
    (
        r"systemd\.(services|paths|timers)\.\"?hearth|serviceConfig|\bhardening\b",
        "hardening: overrides a hearth unit or its hardening",
    ),
    (
        r"users\.(users|groups)\.(hearth|\"hearth)|security\.(polkit|sudo|wrappers)",
        "users: changes the hearth user, polkit, sudo or setuid wrappers",
    ),
    (r"^\+\+\+ b/.*(hearth|module\.nix|units\.nix)", "module: edits a file of hearth's own module"),
]

# What a line grants rather than restricts: taking one away narrows.
ALLOWANCE = re.compile(
    r"\b(defaultMode|mode|max_mode|maxMode|HEARTH_MODE)\s*=\s*\"?(auto|bypass)|\b(autoCommands|HEARTH_AUTO_COMMANDS|autoApprovedCommands)\b"
    r"|allowedTools|allowed_tools|maxTools|max_tools"
    r"|\b(allowedHosts|allowed_hosts|netPrivateHosts|HEARTH_NET_PRIVATE_HOSTS|IPAddressAllow)\b"
    r"|\b(ReadWritePaths|BindPaths|writablePaths)\b"
)
_OPENERS = "[{("
_CLOSERS = "]})"


def diff_findings(diff: str) -> list[str]:
    """Why a unified diff touches hearth's own security settings (changed lines and file names only)."""
    changed = [
        line
        for line in diff.splitlines()
        if line.startswith(("+", "-")) and not line.startswith(("--- ", "+++ ")) or line.startswith("+++ b/")
    ]
    return [reason for pattern, reason in SECURITY_PATTERNS if any(re.search(pattern, line) for line in changed)]


def widening(old: str | None, new: str, path: str = "") -> list[str]:
    """Why replacing `old` (None: a new file) by `new` at `path` widens security; empty when it does not."""
    old_lines = [] if old is None else old.splitlines()
    new_lines = new.splitlines()
    old_ctx, new_ctx = _in_context(old_lines), _in_context(new_lines)
    added: list[str] = [f"+++ b/{path}"] if old is None and path else []
    removed: list[str] = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            pairs = [(o, n) for o, n in zip(old_ctx[i1:i2], new_ctx[j1:j2]) if not _only_fewer(o, n)]
            removed.extend(o for o, _ in pairs)
            added.extend(n for _, n in pairs)
            continue
        if tag in ("replace", "delete"):
            removed.extend(old_ctx[i1:i2])
        if tag in ("replace", "insert"):
            added.extend(new_ctx[j1:j2])
    reasons = []
    for pattern, reason in SECURITY_PATTERNS:
        if any(re.search(pattern, line) for line in added) or any(
            re.search(pattern, line) and not ALLOWANCE.search(line) for line in removed
        ):
            reasons.append(reason)
    return reasons


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _only_fewer(old: str, new: str) -> bool:
    """Whether `new` is an allowance line `old` with some of its quoted values taken away."""
    if not ALLOWANCE.search(old) or _STRING.sub("", old).split() != _STRING.sub("", new).split():
        return False
    return set(_STRING.findall(new)) <= set(_STRING.findall(old))


def _in_context(lines: list[str]) -> list[str]:
    """Each line prefixed by the lines that opened the brackets it stands in (`allowedHosts = [`)."""
    stack: list[str] = []
    out = []
    for line in lines:
        out.append(" ".join([*stack, line]))
        code = re.sub(r'"(?:[^"\\]|\\.)*"|#.*$', "", line)  # strings and comments do not count
        for char in code:
            if char in _OPENERS:
                stack.append(line.strip())
            elif char in _CLOSERS and stack:
                stack.pop()
    return out
