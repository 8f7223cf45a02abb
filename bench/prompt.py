"""What a run pays before its goal is read: the system prompt and the tool schemas, in tokens.

For the `default` profile in each mode, then for each profile the examples describe (the built-in
ones, the agent.toml shown in docs/run.md, the NixOS module's `services.hearth.agents` example),
the prompt is rendered as `hearth doctor --context` renders it (hearth/run/prompting.py's
`preview`, in a scratch config directory, no workspace) and counted at hearth's estimate of four
characters a token (agent/context/compaction.py). The targets of issue 25 are printed beside:
the default profile under 1,500 tokens in `auto`, under 900 in `plan`.

With a llama.cpp server named (`--tokenizer openai+http://127.0.0.1:11501`, the real-model cache's
llama-server; its `/tokenize` answers while a generation runs), the default profile is counted again
with that model's own tokenizer, the prompt and the schemas each as the text a request carries, and
held against issue 37's target: at most 800 tokens before the goal.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.context.compaction import CHARS_PER_TOKEN
from agent.safety.policy import MODES
from hearth.run.profiles import BUILTIN, load_profile
from hearth.run.prompting import preview
from hearth.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"auto": 1500, "plan": 900}
REAL_TARGET = 800  # issue 37: the default profile, auto, counted by a real tokenizer


def docs_profile() -> str:
    """The agent.toml block of docs/run.md, as an operator would copy it."""
    text = (ROOT / "docs" / "run.md").read_text(encoding="utf-8")
    return re.search(r"```toml\n(model = .*?)```", text, re.S).group(1)  # type: ignore[union-attr]


def nix_profile() -> str:
    """The NixOS module's agents example (`notes`: mode and allowedTools) as the agent.toml it writes."""
    text = (ROOT / "nix" / "module.nix").read_text(encoding="utf-8")
    found = re.search(r'notes = \{ mode = "(\w+)"; allowedTools = \[ ([^\]]*) \]', text)
    assert found, "the NixOS module's agents example has moved; update bench/prompt.py"
    tools = ", ".join(f'"{t}"' for t in re.findall(r'"([^"]+)"', found.group(2)))
    return f'mode = "{found.group(1)}"\nallowed_tools = [{tools}]\n'


def tokens(settings: Settings, name: str, mode: str | None = None) -> tuple[int, int, int]:
    """(tokens, prompt chars, schema chars) before the goal of a run of profile `name`."""
    prompt, schemas = preview(settings, load_profile(settings.config_dir, name), num_ctx=8192, mode=mode)
    schema_chars = len(json.dumps(schemas))
    return (len(prompt.text) + schema_chars) // CHARS_PER_TOKEN, len(prompt.text), schema_chars


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "config"
        for name, toml in (("docs-example", docs_profile()), ("notes", nix_profile())):
            (config / "agents" / name).mkdir(parents=True)
            (config / "agents" / name / "agent.toml").write_text(toml, encoding="utf-8")
        settings = Settings.from_env({"HEARTH_STATE_DIR": f"{scratch}/state", "HEARTH_CONFIG_DIR": str(config)})
        print("tokens before the goal (prompt + tool schemas, 4 chars a token)")
        for mode in MODES:
            count, prompt, schema = tokens(settings, "default", mode)
            target = (
                f"  target < {TARGETS[mode]:,}: {'met' if count < TARGETS[mode] else 'MISSED'}"
                if mode in TARGETS
                else ""
            )
            print(f"  default in {mode:<7} {count:>6,}  ({prompt:,} + {schema:,} chars){target}")
        everything = Settings.from_env({**settings_env(settings), "HEARTH_TOOL_SET": "all"})
        count, prompt, schema = tokens(everything, "default", "auto")
        print(f"  default, tool_set all, auto {count:>6,}  ({prompt:,} + {schema:,} chars)")
        for name in (*BUILTIN, "docs-example", "notes"):
            count, prompt, schema = tokens(settings, name)
            print(f"  profile {name:<14} {count:>6,}  ({prompt:,} + {schema:,} chars)")
        if "--tokenizer" in sys.argv:
            real_tokens(sys.argv[sys.argv.index("--tokenizer") + 1], settings)


def real_tokens(host: str, settings: Settings) -> None:
    """The default profile counted by the server's own tokenizer (llama.cpp's /tokenize)."""
    import httpx

    from agent.model.host import parse_host

    base = parse_host(host).base

    def count(text: str) -> int:
        answer = httpx.post(f"{base}/tokenize", json={"content": text}, timeout=120)
        answer.raise_for_status()
        return len(answer.json()["tokens"])

    prompt, schemas = preview(settings, load_profile(settings.config_dir, "default"), num_ctx=8192, mode="auto")
    said, tools = count(prompt.text), count(json.dumps(schemas))
    met = "met" if said + tools <= REAL_TARGET else "MISSED"
    print(
        f"default in auto, the server's tokenizer: {said + tools} tokens ({said} prompt + {tools} tool schemas)"
        f"  target <= {REAL_TARGET}: {met}"
    )
    for schema in schemas:
        print(f"  {schema['function']['name']:<14} {count(json.dumps(schema)):>4}")


def settings_env(settings: Settings) -> dict[str, str]:
    return {"HEARTH_STATE_DIR": str(settings.state_dir), "HEARTH_CONFIG_DIR": str(settings.config_dir)}


if __name__ == "__main__":
    main()
