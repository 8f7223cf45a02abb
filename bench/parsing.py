"""What reading calls out of reply text costs: calls parsed per second on a mixed corpus, and the
worst growth on pathological replies (deep nesting, a 1 MB reply, thousands of unbalanced braces,
quotes and tags), printed as time(2N) / time(N): the median over doublings from 64 KiB to 512 KiB,
the sizes timed round-robin, so a machine busy with other work does not pass for a slow parser.

All numbers are measured in this one run on this machine. The ratio says the parser is linear:
about 2 when the reply doubles, where a quadratic parser shows 4. Nothing here may hang or raise
(a RecursionError would be printed, not hidden).
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.parsing import parse_tool_calls

TOOLS = {"read_file": ["path"], "write_file": ["path", "content"], "list_files": ["path"], "run_command": ["command"]}
READ = '{"name": "read_file", "arguments": {"path": "src/app.py"}}'
CORPUS = [
    f"I'll read the file first.\n<tool_call>\n{READ}\n</tool_call>",
    f"```json\n{READ}\n```",
    '[TOOL_CALLS]list_files[ARGS]{"path": "."}[TOOL_CALLS]read_file[ARGS]{"path": "a.txt"}',
    "<think>\nThe user wants the listing.\n</think>\n<tool_call>\n<function=list_files>\n<parameter=path>\n.\n"
    "</parameter>\n</function>\n</tool_call>",
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{"path": "a.txt"}\n```'
    "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    '<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{"path": "a"}'
    "<|tool_call_end|><|tool_calls_section_end|>",
    "<|channel|>analysis<|message|>Read it.<|end|><|start|>assistant<|channel|>commentary to=functions.read_file "
    '<|constrain|>json<|message|>{"path": "a.txt"}<|call|>',
    '<minimax:tool_call>\n<invoke name="run_command">\n<parameter name="command">make test</parameter>\n</invoke>\n'
    "</minimax:tool_call>",
    "<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a.txt</arg_value>\n</tool_call>",
    'write_file(path="notes.md", content="""# Notes\nDone.\n""")',
    '[list_files(path="."), read_file(path="a.txt")]',
    '<|tool_call>call:read_file{path:<|"|>a.txt<|"|>}<tool_call|>',
    '>>>read_file\n{"path": "a.txt"}',
    '{"tool_calls": [{"type": "function", "function": {"name": "read_file", "arguments": "{\\"path\\": \\"a\\"}"}}]}',
    "The tests pass now. I changed the retry loop in src/app.py so it backs off (1s, 2s, 4s) and stops at 5.",
    '```python\ncall = {"name": "read_file", "arguments": {"path": "a.txt"}}\nsend(call)\n```',
    'For example:\n{"name": "read_file", "arguments": {"path": "notes.txt"}}',
    'Earlier I ran {"name": "run_command", "arguments": {"command": "make"}} and it failed.',
]


BLOCK = "\n\n".join(CORPUS) + "\n\n"


def seconds(fn: Callable[[], object], rounds: int = 5) -> float:
    """The best of `rounds` timings with the garbage collector paused, as timeit does: the one
    least disturbed by the rest of the machine."""
    best = float("inf")
    gc.disable()
    try:
        for _ in range(rounds):
            started = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - started)
    finally:
        gc.enable()
    return best


def doubling_ratios(texts: list[str], rounds: int = 5) -> list[float]:
    """time(texts[i + 1]) / time(texts[i]) for sizes that double, all timed round-robin so a busy
    machine slows every size alike; each time is the best of `rounds`."""
    best = [float("inf")] * len(texts)
    for _ in range(rounds):
        for i, text in enumerate(texts):
            best[i] = min(best[i], seconds(lambda text=text: parse_tool_calls(text, TOOLS), 1))
    return [large / max(small, 1e-9) for small, large in zip(best, best[1:])]


def throughput() -> None:
    calls = sum(len(parse_tool_calls(reply, TOOLS)) for reply in CORPUS)
    rounds = 200
    took = seconds(lambda: [parse_tool_calls(reply, TOOLS) for _ in range(rounds) for reply in CORPUS], 1)
    print(
        f"mixed corpus ({len(CORPUS)} replies, {calls} calls): {calls * rounds / took:,.0f} calls/s, "
        f"{len(CORPUS) * rounds / took:,.0f} replies/s"
    )


# Each pathological reply as a function of its size in characters (about).
PATHOLOGICAL: dict[str, Callable[[int], str]] = {
    "deep nesting, unclosed": lambda n: "[" * n,
    "deep nesting, closed": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "nested objects, cut off": lambda n: '{"a": ' * (n // 6),
    "unbalanced open braces": lambda n: "{ " * (n // 2),
    "unbalanced close braces": lambda n: "} " * (n // 2),
    "unbalanced quotes": lambda n: '{"a": "b" ' * (n // 10),
    "lone quotes in prose": lambda n: "say \"hi and 'bye " * (n // 17),
    "unclosed <tool_call>": lambda n: "<tool_call>\n" * (n // 12),
    "unclosed <function=>": lambda n: "<function=read_file>\n" * (n // 21),
    "unclosed <invoke>": lambda n: '<invoke name="read_file">\n' * (n // 26),
    "unclosed parameters": lambda n: "<function=write_file><parameter=content>x\n" * (n // 42),
    "unclosed <think>": lambda n: "x <think> y\n" * (n // 12),
    "[TOOL_CALLS] without JSON": lambda n: "[TOOL_CALLS]read_file[ARGS]\n" * (n // 28),
    "python calls never closed": lambda n: "[read_file(path=\n" * (n // 18),
    "calls on one long line": lambda n: f"<tool_call>{READ}</tool_call>" * (n // (len(READ) + 23)),
    "a reply of many calls": lambda n: f"Next one.\n<tool_call>\n{READ}\n</tool_call>\n" * (n // (len(READ) + 37)),
    "one huge write_file": lambda n: json.dumps(
        {"name": "write_file", "arguments": {"path": "a", "content": "x\n" * (n // 2)}}
    ),
    "mixed corpus, repeated": lambda n: BLOCK * max(1, n // len(BLOCK)),
}


def growth(sizes: list[int]) -> None:
    worst_name, worst = "", 0.0
    for name, make in PATHOLOGICAL.items():
        try:
            ratios = doubling_ratios([make(size) for size in sizes])
        except RecursionError as exc:
            print(f"  {name}: RecursionError: {exc}")
            continue
        median = sorted(ratios)[len(ratios) // 2]
        print(f"  {name:28} time(2N)/time(N) = {median:4.2f}  ({' '.join(f'{r:.2f}' for r in ratios)})")
        if median > worst:
            worst_name, worst = name, median
    span = f"{sizes[0] // 1024} KiB to {sizes[-1] // 1024} KiB"
    print(f"worst growth when the reply doubles ({span}, median of the doublings): {worst:.2f} ({worst_name})")


def megabyte() -> None:
    reply = PATHOLOGICAL["mixed corpus, repeated"](1 << 20)
    took = seconds(lambda: parse_tool_calls(reply, TOOLS), 1)
    calls = len(parse_tool_calls(reply, TOOLS))
    print(f"a 1 MB reply ({len(reply):,} characters, {calls} distinct calls): {took * 1e3:.0f} ms")
    worst = max(seconds(lambda make=make: parse_tool_calls(make(1 << 20), TOOLS), 1) for make in PATHOLOGICAL.values())
    print(f"the slowest 1 MB pathological reply: {worst * 1e3:.0f} ms")


def main() -> None:
    throughput()
    growth([64 * 1024, 128 * 1024, 256 * 1024, 512 * 1024])
    megabyte()


if __name__ == "__main__":
    main()
