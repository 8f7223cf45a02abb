"""The fake Telegram Bot API inside the booted container: tests/fake_telegram.py on 127.0.0.1:8081.

Copied into the container with tests/fake_telegram.py and run there as a transient unit, before
`hearth install` starts hearth-channels.service (whose channels.toml points at it). It pushes one
message from ada (Telegram user ADA, whom install.toml's [users] declares) and writes every call
hearth makes, as JSON lines, to CALLS, which the booted test reads.
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

from tests.fake_telegram import FakeTelegram

PORT = 8081
ADA = 4242
GOAL = "write hello.txt (from a chat)"
CALLS = Path("/run/hearth-test/telegram-calls.jsonl")


def main() -> None:
    CALLS.parent.mkdir(parents=True, exist_ok=True)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    with FakeTelegram(port=PORT) as bot:
        print(f"fake Telegram on {bot.url}", flush=True)
        bot.text(ADA, GOAL)
        written = 0
        while not stopping.wait(0.2):
            calls = list(bot.calls)
            with CALLS.open("a") as out:
                for call in calls[written:]:
                    out.write(json.dumps({"method": call.method, "params": call.params}) + "\n")
            written = len(calls)


if __name__ == "__main__":
    main()
