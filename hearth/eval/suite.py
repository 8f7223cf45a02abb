"""A suite: `$HEARTH_CONFIG_DIR/evals/SUITE.toml`, read and checked, every error naming file, line and key.

    description = "the chores of the notes box"
    [[case]]
    name = "hello"                       1-40 characters from A-Z a-z 0-9 . _ -
    goal = "Write hello.txt saying hi"   required
    profile = "default"                  the agent profile that runs it
    mode = "auto"                        plan | auto | bypass (absent: the profile's)
    workspace = "fixtures/hello"         a directory under the evals directory, copied in
    from_run = "20261201T101500-ab12cd"  or: a recorded run's `before` checkpoint, restored as follow-ups are
    [case.check]
    files = ["hello.txt"]                must exist
    match = { "hello.txt" = "^hi" }      must match (a regular expression, searched; ^ and $ at each line)
    command = "grep -q hi hello.txt"     must exit 0 in the command sandbox
    summary_contains = ["hello.txt"]
    tools_called = ["write_file"]
    tools_not_called = ["run_command"]
    max_iterations = 4
    max_tokens = 20000
    no_denial = true                     (the default)
    no_tripwire = true                   (the default)
    judge = "Does hello.txt greet the reader?"   the marathon judge's call, asked this question

`add_case` appends a case to a suite's file as text, so the operator's comments stay.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hearth.errors import ConfigError, NotFound
from hearth.eval.fixture import fixture_problem
from hearth.tomlcheck import read_toml

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")
SUITE_KEYS = ("description", "case")
CASE_KEYS = ("name", "goal", "profile", "mode", "workspace", "from_run", "check")
CHECK_KEYS = (
    "files",
    "match",
    "command",
    "summary_contains",
    "tools_called",
    "tools_not_called",
    "max_iterations",
    "max_tokens",
    "no_denial",
    "no_tripwire",
    "judge",
)
MODES = ("plan", "auto", "bypass")
_CASE_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*case[ \t]*\]\]", re.MULTILINE)


@dataclass(frozen=True)
class Checks:
    files: tuple[str, ...] = ()
    match: tuple[tuple[str, str], ...] = ()  # (path, regular expression)
    command: str = ""
    summary_contains: tuple[str, ...] = ()
    tools_called: tuple[str, ...] = ()
    tools_not_called: tuple[str, ...] = ()
    max_iterations: int | None = None
    max_tokens: int | None = None
    no_denial: bool = True
    no_tripwire: bool = True
    judge: str = ""


@dataclass(frozen=True)
class Case:
    name: str
    goal: str
    profile: str = "default"
    mode: str | None = None
    workspace: str = ""  # an absolute directory under the evals directory, to copy in ("" : none)
    from_run: str = ""  # a recorded run whose `before` checkpoint is the start ("" : none)
    checks: Checks = field(default_factory=Checks)
    line: int = 0

    @property
    def start(self) -> dict[str, str]:
        """Where the case starts, as eval_results.start keeps it."""
        if self.from_run:
            return {"run": self.from_run}
        return {"directory": self.workspace} if self.workspace else {}


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    cases: tuple[Case, ...]
    description: str = ""


def evals_dir(config_dir: Path) -> Path:
    return config_dir / "evals"


def suite_names(config_dir: Path) -> list[str]:
    directory = evals_dir(config_dir)
    return sorted(p.stem for p in directory.glob("*.toml")) if directory.is_dir() else []


def suite_path(config_dir: Path, name: str) -> Path:
    if not NAME.fullmatch(name):
        raise ConfigError(f"{name!r} cannot name a suite: use 1-40 characters from A-Z a-z 0-9 . _ -")
    return evals_dir(config_dir) / f"{name}.toml"


def load_suite(config_dir: Path, name: str) -> Suite:
    """The suite `name`; NotFound when it has no file, ConfigError naming file, line and key."""
    path = suite_path(config_dir, name)
    if not path.is_file():
        known = ", ".join(suite_names(config_dir)) or "none"
        raise NotFound(
            f"no suite {name!r}: {path} does not exist; suites: {known} (hearth eval add RUN --suite {name})"
        )
    data = read_toml(path)
    _known(f"{path}", data, SUITE_KEYS)
    raw_cases = data.get("case", [])
    if not isinstance(raw_cases, list) or not raw_cases:
        raise ConfigError(f"{path}: a suite needs at least one [[case]]")
    lines = _case_lines(path)
    cases = tuple(_case(path, lines[i] if i < len(lines) else 0, raw) for i, raw in enumerate(raw_cases))
    names = [c.name for c in cases]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice:
        raise ConfigError(f"{path}: two cases are named {twice!r}; each case needs its own name")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(f"{path}: description must be text")
    return Suite(name, path, cases, description)


def _case_lines(path: Path) -> list[int]:
    text = path.read_text(encoding="utf-8")
    return [text.count("\n", 0, m.start()) + 1 for m in _CASE_HEADER.finditer(text)]


def _case(path: Path, line: int, raw: Any) -> Case:
    where = f"{path}:{line}: case"
    _known(where, raw, CASE_KEYS)
    name = raw.get("name")
    if not (isinstance(name, str) and NAME.fullmatch(name)):
        raise ConfigError(f"{where}: name must be 1-40 characters from A-Z a-z 0-9 . _ -, got {name!r}")
    where = f"{path}:{line}: case {name!r}"
    goal = raw.get("goal")
    if not (isinstance(goal, str) and goal.strip()):
        raise ConfigError(f"{where}: goal must say what the agent should do")
    mode = raw.get("mode")
    if mode is not None and mode not in MODES:
        raise ConfigError(f"{where}: mode must be one of {', '.join(MODES)}, got {mode!r}")
    workspace, from_run = _text(where, raw, "workspace"), _text(where, raw, "from_run")
    if workspace and from_run:
        raise ConfigError(f"{where}: workspace and from_run cannot be combined; a case starts from one of them")
    if workspace and not Path(workspace).is_absolute():
        workspace = str(path.parent / workspace)
    problem = fixture_problem(Path(workspace), path.parent) if workspace else None
    if problem:
        raise ConfigError(f"{where}: {problem}")
    checks = _checks(f"{where}: check", raw.get("check", {}))
    profile = _text(where, raw, "profile") or "default"
    return Case(name, goal, profile, mode, workspace, from_run, checks, line)


def _checks(where: str, raw: Any) -> Checks:
    _known(where, raw, CHECK_KEYS)
    match = raw.get("match", {})
    if not isinstance(match, dict) or not all(isinstance(v, str) for v in match.values()):
        raise ConfigError(f"{where}: match must be a table of file = regular expression")
    for path, pattern in match.items():
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"{where}: match.{path}: {pattern!r} is not a regular expression: {exc}") from None
    return Checks(
        files=_texts(where, raw, "files"),
        match=tuple(sorted(match.items())),
        command=_text(where, raw, "command"),
        summary_contains=_texts(where, raw, "summary_contains"),
        tools_called=_texts(where, raw, "tools_called"),
        tools_not_called=_texts(where, raw, "tools_not_called"),
        max_iterations=_count(where, raw, "max_iterations"),
        max_tokens=_count(where, raw, "max_tokens"),
        no_denial=_flag(where, raw, "no_denial"),
        no_tripwire=_flag(where, raw, "no_tripwire"),
        judge=_text(where, raw, "judge"),
    )


def _known(where: str, raw: Any, keys: tuple[str, ...]) -> None:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(raw) - set(keys))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(keys)}")


def _text(where: str, raw: dict[str, Any], key: str) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be text, got {value!r}")
    return value


def _texts(where: str, raw: dict[str, Any], key: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f'{where}: {key} must be a list of text, such as ["a", "b"], got {value!r}')
    return tuple(value)


def _count(where: str, raw: dict[str, Any], key: str) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: {key} must be a whole number of at least 1, got {value!r}")
    return value


def _flag(where: str, raw: dict[str, Any], key: str) -> bool:
    value = raw.get(key, True)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: {key} must be true or false, got {value!r}")
    return value


def case_spec(case: Case) -> dict[str, Any]:
    """The case as JSON, as an eval result keeps it."""
    return asdict(case)


def case_from_spec(spec: dict[str, Any]) -> Case:
    checks = dict(spec.get("checks") or {})
    for key in ("files", "summary_contains", "tools_called", "tools_not_called"):
        checks[key] = tuple(checks.get(key) or ())
    checks["match"] = tuple((path, pattern) for path, pattern in checks.get("match") or ())
    return Case(**{**spec, "checks": Checks(**checks)})


def case_text(case: Case) -> str:
    """The case as TOML (JSON's string escapes are TOML's basic strings'), to append to a suite."""
    lines = ["", "[[case]]", f"name = {json.dumps(case.name)}", f"goal = {json.dumps(case.goal)}"]
    lines.append(f"profile = {json.dumps(case.profile)}")
    if case.mode:
        lines.append(f"mode = {json.dumps(case.mode)}")
    if case.from_run:
        lines.append(f"from_run = {json.dumps(case.from_run)}")
    if case.workspace:
        lines.append(f"workspace = {json.dumps(case.workspace)}")
    lines.append("[case.check]")
    c = case.checks
    for key, value in (
        ("files", list(c.files)),
        ("summary_contains", list(c.summary_contains)),
        ("tools_called", list(c.tools_called)),
        ("tools_not_called", list(c.tools_not_called)),
    ):
        if value:
            lines.append(f"{key} = {json.dumps(value)}")
    if c.match:
        lines.append("match = { " + ", ".join(f"{json.dumps(p)} = {json.dumps(r)}" for p, r in c.match) + " }")
    for key, text in (("command", c.command), ("judge", c.judge)):
        if text:
            lines.append(f"{key} = {json.dumps(text)}")
    for key, number in (("max_iterations", c.max_iterations), ("max_tokens", c.max_tokens)):
        if number is not None:
            lines.append(f"{key} = {number}")
    lines += [f"no_denial = {str(c.no_denial).lower()}", f"no_tripwire = {str(c.no_tripwire).lower()}"]
    return "\n".join(lines) + "\n"


def add_case(config_dir: Path, name: str, case: Case) -> Path:
    """Append `case` to suite `name` (made when missing); ConfigError when the name is taken
    or the suite would not load afterwards (the file is then left as it was)."""
    path = suite_path(config_dir, name)
    existed = path.exists()
    before = path.read_text(encoding="utf-8") if existed else f"description = {json.dumps(f'suite {name}')}\n"
    if existed and case.name in {c.name for c in load_suite(config_dir, name).cases}:
        raise ConfigError(f"{path}: a case named {case.name!r} is there already; pass --name to name this one")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(before + case_text(case), encoding="utf-8")
    except OSError as exc:  # /etc/hearth as a plain user, a read-only or missing place
        raise ConfigError(
            f"cannot write {path}: {exc.strerror or exc}; HEARTH_CONFIG_DIR names where suites live: "
            "set it to a directory you may write (the README's tour: $PWD/.hearth/config)"
        ) from None
    try:
        load_suite(config_dir, name)
    except ConfigError:
        if existed:
            path.write_text(before, encoding="utf-8")
        else:
            path.unlink()
        raise
    return path
