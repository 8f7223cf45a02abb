"""Whether a file just written is what its name says: a `.py` that compiles, a `.json` or `.toml` that
loads, a shell script bash can read. A write that is not gets a warning in its result, in words a
small model can act on: a 0.5B model wrote `Hello, world!` into hello.py and was told `ok`.

The write itself stands (a file may be written in parts, and refusing would lose the model's work);
nothing is run: Python is only compiled, a script only read by `bash -n`. A helper the tool kinds
share (agent/tools/files.py, edit.py), so no kind imports another.
"""

from __future__ import annotations

import json
import posixpath
import shutil
import subprocess
from collections.abc import Callable

CHECK_LIMIT = 2_000_000  # characters: a bigger file is not checked (nothing larger is written in one call)
BASH_TIMEOUT_S = 5.0


def note(path: str, text: str) -> str:
    """A warning line for the tool's result ("" when the file is fine, or of a kind not checked)."""
    check = _CHECKS.get(_kind(path, text))
    if check is None or len(text) > CHECK_LIMIT:
        return ""
    problem = check(text)
    if not problem:
        return ""
    what, example = _WHAT[_kind(path, text)]
    return (
        f"\nWarning: {path} is not valid {what}: {problem}. It was written as it is; a {what} file must "
        f"hold {example}: fix it with edit_file, or write it again."
    )


def _kind(path: str, text: str) -> str:
    extension = posixpath.splitext(path)[1].lower()
    if extension in (".sh", ".bash"):
        return "shell"
    if (
        not extension
        and text.startswith("#!")
        and text.split("\n", 1)[0].rstrip().endswith(("/sh", "/bash", " bash", " sh"))
    ):
        return "shell"
    return extension


def _python(text: str) -> str:
    try:
        compile(text, "<written>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError):
        return ""  # a NUL byte (refused before a write) or nesting compile cannot take: not ours to judge
    return ""


def _json(text: str) -> str:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
    except RecursionError:
        return ""
    return ""


def _toml(text: str) -> str:
    import tomllib  # only after a .toml write: every run imports this module

    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return str(exc)
    return ""


def _shell(text: str) -> str:
    bash = shutil.which("bash")
    if bash is None:
        return ""
    try:
        done = subprocess.run(
            [bash, "-n"], input=text, capture_output=True, text=True, timeout=BASH_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if done.returncode == 0:
        return ""
    said = done.stderr.strip().splitlines()
    return said[0].replace("bash: ", "", 1) if said else "bash cannot read it"


_CHECKS: dict[str, Callable[[str], str]] = {".py": _python, ".json": _json, ".toml": _toml, "shell": _shell}
_WHAT = {
    ".py": ("Python", 'Python code, e.g. print("hello")'),
    ".json": ("JSON", 'one JSON value, e.g. {"name": "value"}'),
    ".toml": ("TOML", 'TOML, e.g. name = "value"'),
    "shell": ("shell", "shell commands, e.g. echo hello"),
}
