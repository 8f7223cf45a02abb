"""The test suite's fake Ollama as a long-running service, for the NixOS VM test (nix/vm-test.nix).

Every chat gets the same two-step answer: write `hello.txt` in the workspace, then finish with a
summary once the tool result is in the conversation. Run with the repository on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import signal
from typing import Any

from tests.fake_ollama import FakeOllama, final_answer, tool_call


def answer(body: dict[str, Any]) -> dict[str, Any]:
    if any(message.get("role") == "tool" for message in body.get("messages", [])):
        return final_answer("Wrote hello.txt.")
    return tool_call("write_file", {"path": "hello.txt", "content": "hello from the VM test\n"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=11434)
    port = parser.parse_args().port
    with FakeOllama([answer], repeat_last=True, port=port):
        print(f"fake Ollama on 127.0.0.1:{port}", flush=True)
        signal.sigwait({signal.SIGTERM, signal.SIGINT})


if __name__ == "__main__":
    main()
