"""Declare the toy server (tests/mcp_servers/toy.py) in a config directory, as an operator would."""

from __future__ import annotations

import json
import sys
from pathlib import Path

TOY = Path(__file__).resolve().parent / "toy.py"


def declare(
    config_dir: Path,
    name: str = "toy",
    *,
    description: Path | None = None,
    extra: str = "",
    timeout: int = 20,
    lock: Path | None = None,
    script: Path = TOY,
) -> Path:
    """`<config>/mcp/<name>.toml` for the toy server; `description` is the file its echo tool reads
    its description from (change it between two runs: the "rug pull"); `lock` the file it holds
    locked while it lives (in the run's workspace: the only path it may write)."""
    args = [str(script), *(["--description-file", str(description)] if description else [])]
    args += ["--lock", str(lock)] if lock else []
    # the interpreter and the test's servers, read-only inside the sandbox
    read = sorted({sys.prefix, sys.base_prefix, str(TOY.parent), *([str(description.parent)] if description else [])})
    path = config_dir / "mcp" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"command = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\nread = {json.dumps(read)}\n"
        f"timeout = {timeout}\n" + extra
    )
    return path
