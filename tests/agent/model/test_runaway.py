"""A streamed reply that repeats one stretch of text is seen running away, and cut after the first
writing of what it repeats; text that only has some repetition of its own is left alone."""

from __future__ import annotations

import pytest

from agent.model.runaway import Runaway

CALL = '{"name": "list_files", "arguments": {"path": "."}}\n'


def fed(text: str, size: int = 7) -> Runaway:
    watch = Runaway()
    for start in range(0, len(text), size):
        if watch.feed(text[start : start + size]):
            break
    return watch


@pytest.mark.parametrize("before", ["", "Listing it.\n", '{"name": "read_file"}\n'], ids=["alone", "prose", "a call"])
def test_a_call_written_again_and_again_is_kept_once_after_what_came_before(before: str) -> None:
    watch = fed(before + CALL * 40 + '{"na')
    assert watch.keep >= 0 and watch.text() == before + CALL


def test_a_word_repeated_without_end_is_kept_once() -> None:
    assert fed("The answer is " + "hello " * 200).text().rstrip() == "The answer is hello"


@pytest.mark.parametrize(
    "text",
    [
        "def f():\n    return {\n" + "    }\n" * 5 + "\n" * 20 + "x = 1\n" * 12 + "print(x)\n",
        "| a | b |\n|---|---|\n" + "".join(f"| {n} | {n * n} |\n" for n in range(60)),
        "=" * 120 + "\nTitle\n" + "=" * 120 + "\n",
        CALL * 3 + "That is all.\n",
    ],
    ids=["code", "a table", "a ruler", "three calls then prose"],
)
def test_text_with_some_repetition_of_its_own_is_not_running_away(text: str) -> None:
    watch = fed(text)
    assert watch.keep == -1 and watch.text() == text


def test_a_long_stretch_written_twice_is_left_to_the_reply_cap() -> None:
    stretch = "".join(f"line {n} of a long file that is written once more\n" for n in range(12))
    assert fed(stretch * 5).keep == -1  # a period over 200 characters is not this watch's to judge
