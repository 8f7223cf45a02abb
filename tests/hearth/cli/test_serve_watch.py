"""`hearth serve --watch` as a person at its terminal reads it: a line per run as it starts, waits
for a person, goes on and really ends, and nothing of the libraries' own logging. A real `hearth
serve` process, the local launcher, `hearth approve`, the fake Ollama."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.cli_support import serving
from tests.conftest import run_cli
from tests.fake_ollama import FakeOllama, final_answer, tool_call
from tests.queue_support import rows, wait_for
from tests.web_support import Client, free_port, run_status, wait_for_answer


def test_a_run_that_waits_for_a_person_is_said_suspended_then_going_on_then_its_real_end(
    state_dir: Path,
) -> None:
    port, said = free_port(), state_dir.parent / "serve.err"
    script = [tool_call("run_command", {"command": "echo decided"}), final_answer("it printed")]
    with FakeOllama(script) as fake, said.open("w") as err:
        env = {
            "OLLAMA_HOST": fake.url,
            "HEARTH_LAUNCHER": "local",
            "HEARTH_SUSPEND_AFTER_S": "0",  # the run's process exits to wait
            "HEARTH_SANDBOX": "none",
        }
        with serving(port, env, err, "--watch") as serve:
            url = f"http://127.0.0.1:{port}"
            wait_for_answer(url + "/api/state", {})
            with Client(url, {}) as client:
                assert client.post_json("/api/enqueue", {"goal": "hi", "id": "w-1", "mode": "auto"}).status_code == 201
                wait_for(lambda: "run w-1 waits: suspended" in said.read_text(), what="the suspension to be said")
                assert client.get("/launch").status_code == 200  # asks the model server what it has, over httpx
            [approval] = rows(state_dir, "select id from approvals")
            assert run_cli("hearth", "approve", approval["id"]).returncode == 0
            wait_for(lambda: run_status(state_dir, "w-1") == "done", what="the run to finish")
            wait_for(lambda: "run w-1 ended" in said.read_text(), what="the end to be said")
            serve.send_signal(signal.SIGTERM)
            assert serve.wait(30) == 0
    text = said.read_text()
    told = [line.split(" ", 3)[3].split(":")[0] for line in text.splitlines() if "run w-1" in line]
    assert told[0] == "run w-1 started" and told[-2:] == ["run w-1 goes on", "run w-1 ended"], text
    assert "run w-1 ended: done" in text and "ended: waiting" not in text
    assert "HTTP Request" not in text and " INFO " not in text, text  # httpx's lines, at the SDK's INFO
