"""The model server page and /api/models: what the configured Ollama has pulled and has loaded, or one line when it is down."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.settings import Settings
from tests.browser_support import Browser
from tests.fake_ollama import FakeOllama
from tests.hearth.web.operate_support import VIEWER, looked_at, signed_in
from tests.web_support import Center, free_port

TOKENS = {"operator": "operator-token-0123456789abcdef", "viewer": VIEWER}
DETAILS = {
    "qwen2.5-coder:7b": {
        "size": 4_683_087_332,
        "details": {"family": "qwen2", "parameter_size": "7.6B", "quantization_level": "Q4_K_M"},
    },
    "llama3.2:latest": {"size": 2_019_393_189, "details": {"family": "llama", "parameter_size": "3.2B"}},
}
LOADED = [
    {
        "name": "qwen2.5-coder:7b",
        "size": 6_000_000_000,
        "size_vram": 4_500_000_000,
        "expires_at": "2026-12-02T05:10:00Z",
        "context_length": 8192,
        "details": {"family": "qwen2", "parameter_size": "7.6B"},
    }
]


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    models = ("qwen2.5-coder:7b", "llama3.2:latest")
    with FakeOllama(models=models, tag_details=DETAILS, loaded=LOADED) as server:
        yield server


@pytest.fixture
def served(state_dir: Path, fake: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> Iterator[Center]:
    monkeypatch.setenv("OLLAMA_HOST", fake.url)
    with Center(Settings.from_env(), tokens=TOKENS) as center:
        yield center


def test_the_pulled_and_loaded_models_come_from_tags_and_ps(served: Center, fake: FakeOllama) -> None:
    answer = served.client(Authorization=f"Bearer {VIEWER}").get("/api/models").json()
    assert answer["up"] is True and answer["host"] == fake.url and answer["problem"] == ""
    coder, llama = answer["pulled"]
    assert coder["name"] == "qwen2.5-coder:7b" and coder["size"] == 4_683_087_332 and coder["loaded"] is True
    assert coder["quantization_level"] == "Q4_K_M" and llama["loaded"] is False and llama["family"] == "llama"
    [loaded] = answer["loaded"]
    assert (loaded["name"], loaded["size"], loaded["size_vram"]) == ("qwen2.5-coder:7b", 6_000_000_000, 4_500_000_000)
    assert loaded["context_length"] == 8192 and loaded["expires_at"] == "2026-12-02T05:10:00Z"
    assert "/api/tags" in fake.paths and "/api/ps" in fake.paths


def test_ollama_down_is_one_line_naming_the_address(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    address = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("OLLAMA_HOST", address)
    with Center(Settings.from_env(), tokens=TOKENS) as center:
        answer = center.client(Authorization=f"Bearer {VIEWER}").get("/api/models")
    assert answer.status_code == 200 and answer.json()["up"] is False and answer.json()["pulled"] == []
    problem = answer.json()["problem"]
    assert problem == f"cannot reach Ollama at {address}: connection refused; is ollama.service running?"


def test_the_model_server_page_up_and_down(
    served: Center, browser: Browser, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = signed_in(served, browser, VIEWER)
    looked_at(browser, page, served.url + "/operate/models", "models")
    assert "4.7 GB" in page.inner_text("#pulled") and "4.5 GB (75%)" in page.inner_text("#loaded")
    monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{free_port()}")
    with Center(Settings.from_env(), tokens=TOKENS) as down:
        page = signed_in(down, browser, VIEWER)
        looked_at(browser, page, down.url + "/operate/models", "models-down")
        assert "connection refused" in page.inner_text("#ollama-down") and page.locator("#pulled").count() == 0


def test_with_several_hosts_each_shows_its_models_and_a_dead_one_says_why(
    state_dir: Path, tmp_path: Path, fake: FakeOllama, browser: Browser
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with FakeOllama(models=("llama3.2:3b",)) as second:
        (tmp_path / "config").mkdir(exist_ok=True)
        (tmp_path / "config" / "router.toml").write_text(
            f'[[host]]\nurl = "{fake.url}"\nlabel = "gpu1"\n[[host]]\nurl = "{second.url}"\nlabel = "gpu2"\n'
            f'[[host]]\nurl = "{dead}"\nlabel = "gpu3"\n'
        )
        with Center(Settings.from_env(), tokens=TOKENS) as center:
            answer = center.client(Authorization=f"Bearer {VIEWER}").get("/api/models").json()
            page = signed_in(center, browser, VIEWER)
            looked_at(browser, page, center.url + "/operate/models", "models-hosts")
            for width in (390,):
                page.set_viewport_size({"width": width, "height": 844})
                looked_at(browser, page, center.url + "/operate/models", f"models-hosts-{width}")
            text = page.inner_text("main")
    gpu1, gpu2, gpu3 = answer["hosts"]
    assert (gpu1["label"], gpu1["up"], [m["name"] for m in gpu1["loaded"]]) == ("gpu1", True, ["qwen2.5-coder:7b"])
    assert (gpu2["label"], gpu2["up"], [m["name"] for m in gpu2["pulled"]]) == ("gpu2", True, ["llama3.2:3b"])
    assert (
        gpu3["up"] is False
        and gpu3["problem"] == f"cannot reach Ollama at {dead}: connection refused; is ollama.service running?"
    )
    assert answer["up"] is True and answer["host"] == fake.url  # the first host's, as with one
    assert "Host gpu1" in text and "Pulled on gpu2" in text and "Host gpu3" in text and "connection refused" in text
