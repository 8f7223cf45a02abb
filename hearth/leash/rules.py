"""Standing approvals: "approve, and always allow this in this profile".

A rule is a row of the audit's `standing_rules` table: the profile (a run's agent name) it holds
in, the tool, and for run_command the one simple command it covers: its head exactly as written
(`./git` is not `git`, as for HEARTH_AUTO_COMMANDS) and its argument words as the shell reader
(agent.safety.shell_words) gives them after quote removal, so `git  'status'` is `git status`
and `git status --short` is not (the command's other arguments, run_command's bounded `timeout_s`,
are not part of it). A tool without a command is covered with any arguments. Each
rule says who made it, when, and from which approval; a removed rule keeps its row, with who
removed it and when.

No rule is made, or matches, for a call the policy's hard floor denies, nor for a line that is not
one simple command as `agent.safety.command_approval.simple_heads` judges it for auto-approval: no
redirection, substitution, subshell, assignment, chain or pipe, wrapper or shell (sudo, env,
xargs, sh -c, eval, find -exec). Neither for an argument whose meaning quoting decides
(`*`, `?`, `[`, `$`, a leading `~`): the words keep no quotes, so `rm '*'` and `rm *` would read alike.

`with_rules(approver, ...)` asks the rules before the person: a covered call is approved at once,
recorded as an approval born decided by `rule:<id>` and an `approval` step, as a terminal's is.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
from dataclasses import dataclass, fields, replace
from typing import Any

from agent.clock import stamp
from agent.safety import policy
from agent.safety.policy import COMMAND_ARGUMENTS, Approver, Decision
from hearth.audit import approvals
from hearth.audit import rules as rule_rows
from hearth.audit.approvals import Approval, Clock, utc_clock
from hearth.audit.store import AuditStore, Rows
from hearth.errors import HearthError, NotFound
from hearth.run.approvers import _record_step
from hearth.run.events import ApprovalAsked
from hearth.run.recorder import Recorder

_QUOTED_MEANING = re.compile(r"[*?\[$]|^~|[=:]~")  # a word that means one thing quoted and another not


class RuleRefused(HearthError):
    """A standing rule that may not be made (the hard floor, not one simple command) or was removed
    already; nothing changed (exit 1)."""


@dataclass(frozen=True)
class Scope:
    """What one rule covers: a tool, and for a command its head and argument words."""

    tool: str
    head: str | None = None
    arguments: tuple[str, ...] | None = None

    def shown(self) -> str:
        if self.head is None:
            return f"{self.tool} (any arguments)"
        return f"{self.tool}: {shlex.join([self.head, *(self.arguments or ())])}"


@dataclass
class Rule:
    id: str
    profile: str
    tool: str
    head: str | None
    arguments: str | None  # JSON list of the argument words; None for a tool without a command
    made_by: str
    made_at: str
    approval_id: str | None = None
    removed_by: str | None = None
    removed_at: str | None = None

    @property
    def scope(self) -> Scope:
        words = tuple(json.loads(self.arguments)) if self.arguments is not None else None
        return Scope(self.tool, self.head, words)

    @property
    def covers(self) -> str:
        return self.scope.shown()


def scope(tool: str, args: dict[str, Any]) -> Scope:
    """What a rule made from this call would cover; RuleRefused, with the reason, when none may."""
    key = COMMAND_ARGUMENTS.get(tool)
    if key is None:
        return Scope(tool)
    line = args.get(key)
    if not isinstance(line, str) or not line.strip():
        raise RuleRefused(f"no standing rule for {tool}: it has no {key} to cover")
    verdict = policy.decide(tool, "dangerous", "auto", None, args)
    if verdict.action == "deny":
        raise RuleRefused(f"no standing rule for this command: {verdict.reason}")
    words = _simple_words(line)
    loose = next((w for w in words[1:] if _QUOTED_MEANING.search(w)), None)
    if loose is not None:
        raise RuleRefused(
            f"no standing rule for this command: its argument {loose!r} means what its quoting says "
            "(* ? [ $ ~), which a rule does not keep; approve it once instead"
        )
    return Scope(tool, words[0], tuple(words[1:]))


def _simple_words(line: str) -> list[str]:
    """The words of ``line`` when it is one simple command, as auto-approval reads it."""
    from agent.safety import command_approval  # the shell reader: loaded once a command is judged
    from agent.safety.shell_tokens import DYNAMIC
    from agent.safety.shell_words import parse

    heads = command_approval.simple_heads(line)
    if heads is None:
        raise RuleRefused(f"no standing rule for this command: {_not_simple(line)}; approve it once instead")
    if len(heads) != 1:
        raise RuleRefused(
            f"no standing rule for this command: a rule covers one simple command and this line runs "
            f"{len(heads)} ({', '.join(heads)}); approve it once instead"
        )
    words = parse(line).commands[0].words
    if any(DYNAMIC in w for w in words):  # a substitution, which simple_heads refuses already
        raise RuleRefused("no standing rule for this command: part of it is known only when it runs")
    return words


def _not_simple(line: str) -> str:
    """Why `simple_heads` refused ``line``, in words (it decided; this only names the reason)."""
    from agent.safety.shell_words import parse

    parsed = parse(line)
    if not parsed.complete:
        return "the line is not complete (a quote or substitution is left open)"
    if parsed.substitutions:
        return "it holds a substitution ($(...), backticks or <(...)), known only when it runs"
    if parsed.functions:
        return "it defines a function"
    for command in parsed.commands:
        if command.redirects:
            operator, target = command.redirects[0]
            return f"it redirects ({operator} {target})"
        if command.assignments:
            return "it sets a variable in front of its program"
        if command.compound:
            return "it is a compound command (a group, if, while, ...)"
    if any(op in ("(", ")", "&", "|&") for op in parsed.operators):
        return "it runs in a subshell or in the background"
    from agent.safety import command_approval

    for command in parsed.commands:
        head = command.words[0] if command.words else ""
        if head and command_approval.simple_heads(shlex.quote(head)) is None:
            return f"{head} is a wrapper or a shell, or not a plain program name (sudo, env, xargs, sh -c, eval ...)"
    return "find -exec or -ok runs another program"


def make(
    audit: AuditStore,
    profile: str,
    tool: str,
    args: dict[str, Any],
    *,
    by: str,
    approval_id: str | None = None,
    now: Clock = utc_clock,
) -> Rule:
    """The standing rule for this call in ``profile`` (the one already standing, if there is one);
    RuleRefused when the call may not have one."""
    covered = scope(tool, args)
    with audit.transaction():
        same = next((r for r in _active(audit, profile, tool) if r.scope == covered), None)
        if same is not None:
            return same
        words = json.dumps(list(covered.arguments), ensure_ascii=False) if covered.arguments is not None else None
        rule = Rule(secrets.token_hex(4), profile, tool, covered.head, words, by, stamp(now()), approval_id)
        rule_rows.insert(audit, _columns(rule))
    return rule


def remove(audit: AuditStore, ident: str, *, by: str, now: Clock = utc_clock) -> Rule:
    """Remove a standing rule (its row stays, with who removed it and when)."""
    with audit.transaction():
        rule = find(audit, ident)
        if rule is None:
            raise NotFound(f"no standing rule with id {ident!r}; see: hearth approvals rules")
        if rule.removed_at is not None:
            raise RuleRefused(f"rule {rule.id} was already removed by {rule.removed_by} at {rule.removed_at}")
        moment = stamp(now())
        rule_rows.remove(audit, rule.id, by, moment)
    return replace(rule, removed_by=by, removed_at=moment)


def find(audit: AuditStore, ident: str) -> Rule | None:
    """A rule by its id or a unique prefix of at least 4 characters."""
    row = rule_rows.find(audit, ident)
    return from_row(row) if row else None


def listing(source: Rows, *, everything: bool = False) -> list[Rule]:
    """The standing rules, oldest first; with ``everything`` the removed ones too."""
    return [from_row(r) for r in rule_rows.listing(source, everything=everything)]


def rule_for(source: Rows, profile: str, tool: str, args: dict[str, Any]) -> Rule | None:
    """The standing rule of ``profile`` that covers this exact call, or None."""
    candidates = _active(source, profile, tool)
    if not candidates:
        return None
    try:
        wanted = scope(tool, args)
    except RuleRefused:
        return None
    return next((r for r in candidates if r.scope == wanted), None)


def with_rules(
    inner: Approver, recorder: Recorder, source: Rows, profile: str, *, resumed: Approval | None = None
) -> Approver:
    """``inner``, asked only when no standing rule of ``profile`` covers the call. A covered call is
    approved at once and recorded as approved by `rule:<id>`. The rules are read at each call, so a
    rule removed during a run stops covering its next call. ``resumed`` is the approval a resumed
    run waited on: its own call is answered by that decision (the person's), not by a rule made
    with it (`hearth approve ID --always`)."""
    return RulesFirst(inner, recorder, source, profile, resumed)


class RulesFirst:
    """The approver `with_rules` makes."""

    def __init__(
        self, inner: Approver, recorder: Recorder, source: Rows, profile: str, resumed: Approval | None
    ) -> None:
        self.inner, self.recorder, self.source, self.profile = inner, recorder, source, profile
        self.resumed = resumed

    def __call__(self, name: str, args: dict[str, Any], reason: str) -> Decision:
        resumed, self.resumed = self.resumed, None  # only the run's first call can be the one it waited on
        if resumed is not None and resumed.call_hash == approvals.call_hash(name, args):
            return self.inner(name, args, reason)
        rule = rule_for(self.source, self.profile, name, args)
        if rule is None:
            return self.inner(name, args, reason)
        return _approved_by(self.recorder, rule, name, args, reason)


def _approved_by(recorder: Recorder, rule: Rule, name: str, args: dict[str, Any], reason: str) -> Decision:
    by = f"rule:{rule.id}"
    note = f"standing rule of profile {rule.profile}: {rule.covers}"
    born = approvals.on_the_spot(recorder.run_id, name, args, reason, granted=True, by=by, note=note)
    approval = replace(born, via="rule")
    recorder.record(ApprovalAsked.of(approval))
    _record_step(recorder, approval)
    return Decision(True, by=by, detail=note, ref=approval.id)


def _active(source: Rows, profile: str, tool: str) -> list[Rule]:
    return [from_row(r) for r in rule_rows.active(source, profile, tool)]


def _columns(rule: Rule) -> dict[str, Any]:
    return {f.name: getattr(rule, f.name) for f in fields(Rule)}


def from_row(row: dict[str, Any]) -> Rule:
    names = {f.name for f in fields(Rule)}
    return Rule(**{k: v for k, v in row.items() if k in names})
