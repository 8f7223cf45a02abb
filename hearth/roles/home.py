"""A role's home: a durable directory under the state directory that every run of the role works in.

    <state>/roles/NAME/                 the home (the run's workspace: its walls are any run's)
        agent/record.md                 what the role knows and decided; YAML frontmatter
                                        (last_strategic_review, and whatever else the role keeps)
        agent/inbox.md                  what waits for the role (frontmatter optional)
        prompts/heartbeat.md            the upkeep turn's prompt
        prompts/strategic-review.md     the strategic review's prompt
        skills/                         the role's skills, where skills exist (not made here)

A file of the home that is missing is made from its template when a run of the role is admitted,
never overwriting one that is there: the operator's `$HEARTH_CONFIG_DIR/agents/NAME/templates/FILE`
(record.md, inbox.md, heartbeat.md, strategic-review.md) when it exists, else the one hearth ships
(hearth/roles/templates/); `{role}` in a template is the role's name. Once made, the home's copy
is the one used: the role (or the operator) edits it there.

A record's frontmatter is read strictly: a problem is one ConfigError line naming the file and
what is wrong. The runtime writes one key of it itself, `last_strategic_review`, after a
strategic review ends done (`stamp_review`): only that line changes, the rest is the role's.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hearth.atomic import write_atomic
from hearth.errors import ConfigError, UsageError
from hearth.settings import Settings

RECORD = "agent/record.md"
INBOX = "agent/inbox.md"
HEARTBEAT_PROMPT = "prompts/heartbeat.md"
REVIEW_PROMPT = "prompts/strategic-review.md"
MADE = {RECORD: "record.md", INBOX: "inbox.md", HEARTBEAT_PROMPT: "heartbeat.md", REVIEW_PROMPT: "strategic-review.md"}
SHIPPED = Path(__file__).resolve().parent / "templates"
REVIEWED = "last_strategic_review"
_FRONT = re.compile(r"\A---[ \t]*\n(?P<yaml>.*?)^---[ \t]*$\n?", re.S | re.M)
_REVIEW_LINE = re.compile(rf"^{REVIEWED}[ \t]*:.*$", re.M)


def roles_dir(settings: Settings) -> Path:
    return settings.state_dir / "roles"


def home_of(settings: Settings, name: str) -> Path:
    return roles_dir(settings) / name


def prepare_home(settings: Settings, name: str) -> tuple[Path, list[str]]:
    """The role's home, made if missing, with each missing file made from its template; and the
    files made now. UsageError when it cannot be (a symlink on the way, no right to write)."""
    settings.writable_state_dir()
    home = home_of(settings, name)
    for directory in (roles_dir(settings), home, home / "agent", home / "prompts"):
        _real_directory(directory)
    made = [relative for relative in MADE if _made(home / relative, template_text(settings.config_dir, name, relative))]
    return home.resolve(), made


def _real_directory(path: Path) -> None:
    if path.is_symlink():
        raise UsageError(f"{path} is a symlink; a role's home is made only of real directories")
    try:
        path.mkdir(mode=0o750, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot make the role's directory {path}: {exc.strerror or exc}") from None
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory; move it away so the role's home can be made")


def _made(path: Path, text: str) -> bool:
    """Write `text` to `path` only if nothing is there (O_EXCL: a file made meanwhile wins)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640)
    except FileExistsError:
        return False
    except OSError as exc:
        raise UsageError(f"cannot make {path} from its template: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    return True


def template_text(config_dir: Path, name: str, relative: str) -> str:
    """The template of a home's file: the operator's for this role, else the shipped one."""
    file = MADE[relative]
    own = config_dir / "agents" / name / "templates" / file
    path = own if own.is_file() else SHIPPED / file
    try:
        return path.read_text(encoding="utf-8").replace("{role}", name)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the template {path}: {exc}") from None


@dataclass(frozen=True)
class Markdown:
    """A markdown file of the home: its frontmatter (empty when it has none) and its body."""

    path: Path
    front: dict[str, Any]
    body: str
    fronted: bool  # it had a frontmatter block


def read_markdown(path: Path, *, front_required: bool) -> Markdown:
    """The file read strictly; ConfigError (one line: the file and the problem) when it is not
    UTF-8 text, its frontmatter is not a YAML mapping, or a required one is missing."""
    import yaml  # only when a home's file is read

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    match = _FRONT.match(text)
    if match is None:
        if front_required:
            raise ConfigError(f"{path} has no frontmatter; it must begin with a '---' line, YAML, and a '---' line")
        return Markdown(path, {}, text, False)
    try:
        front = yaml.safe_load(match["yaml"]) or {}
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 2}" if where is not None else ""
        raise ConfigError(f"{path}: its frontmatter is not valid YAML{line}; fix it or remove the file") from None
    if not isinstance(front, dict):
        raise ConfigError(f"{path}: its frontmatter must be keys and values (key: value), not a {type(front).__name__}")
    return Markdown(path, front, text[match.end() :], True)


def read_record(home: Path) -> Markdown:
    """The role's record, its frontmatter checked (last_strategic_review empty or a time)."""
    record = read_markdown(home / RECORD, front_required=True)
    last_review(record)
    return record


def last_review(record: Markdown) -> datetime | None:
    """When the role last reviewed its strategy (None: never, or not set); ConfigError if not a time."""
    value = record.front.get(REVIEWED)
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        raise ConfigError(
            f"{record.path}: {REVIEWED} must be a time such as 2026-12-07T21:00:00+00:00, got {str(value)[:60]!r}"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def stamp_review(home: Path, when: datetime) -> None:
    """Set last_strategic_review to `when`, changing that line only (added after the opening
    '---' when absent); a record with no frontmatter gets one."""
    path = home / RECORD
    text = path.read_text(encoding="utf-8")
    line = f"{REVIEWED}: {when.isoformat(timespec='seconds')}"
    match = _FRONT.match(text)
    if match is None:
        text = f"---\n{line}\n---\n{text}"
    elif _REVIEW_LINE.search(match["yaml"]):
        front = _REVIEW_LINE.sub(line, match["yaml"], count=1)
        text = text[: match.start("yaml")] + front + text[match.end("yaml") :]
    else:
        text = text[: match.start("yaml")] + line + "\n" + text[match.start("yaml") :]
    write_atomic(path, text.encode("utf-8"))
