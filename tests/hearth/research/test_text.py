"""What "the same words" and "the same page" mean to a research run: the snapshot's normalisation,
the word-for-word check an excerpt must pass, the canonical URL two spellings of a page share."""

from __future__ import annotations

import pytest

from hearth.research.text import canonical, flat, normalise, query_key, quotations, urls_in, verbatim

PAGE = "The cycle garbage collector is now\u00a0incremental, which means that\n\n  maximum pause times are\treduced."


def test_a_snapshot_keeps_its_lines_tidied_and_drops_what_no_reader_sees() -> None:
    text = normalise("Hello\u200b  \u201cworld\u201d \u2014 it\u2019s\n\n\n  second\tline ")
    assert text == 'Hello "world" - it\'s\nsecond line'


def test_an_excerpt_is_found_word_for_word_across_lines_and_typography() -> None:
    snapshot = flat(normalise(PAGE))
    assert verbatim("is now incremental, which means that maximum pause times", snapshot) is not None
    assert verbatim("\u201cthe cycle garbage collector is now incremental\u201d", snapshot) is None  # case counts
    assert verbatim('"The cycle garbage collector is now incremental..."', snapshot) == 0


@pytest.mark.parametrize(
    "quote",
    [
        "The cycle garbage collector is now fully incremental",  # a word added
        "maximum pause times are reduced by half",  # a paraphrase
        "garbage",  # too short to prove anything
        "",
    ],
)
def test_an_excerpt_not_in_the_page_word_for_word_is_not_found(quote: str) -> None:
    assert verbatim(quote, flat(normalise(PAGE))) is None


def test_two_spellings_of_one_page_share_a_canonical_url_and_other_pages_do_not() -> None:
    same = [
        "http://Docs.Test:80/gc/?utm_source=feed&b=2&a=1#top",
        "https://docs.test/gc?a=1&b=2",
        "https://docs.test:443//gc?fbclid=x&a=1&b=2",
    ]
    assert len({canonical(url) for url in same}) == 1
    assert canonical("https://docs.test/gc?a=2&b=2") != canonical(same[0])
    assert canonical("https://docs.test:8443/gc?a=1&b=2") != canonical(same[0])
    assert canonical("ftp://docs.test/gc") == canonical("not a url") == ""


def test_a_search_is_the_same_whatever_its_case_and_spacing() -> None:
    assert query_key("  Python 3.13   GC ") == query_key("python 3.13 gc")


def test_quotations_and_web_addresses_are_found_in_a_claim() -> None:
    claim = (
        'The notes say \u201cthe collector is now incremental\u201d (see https://docs.test/gc). "short" www.blog.test'
    )
    assert quotations(claim) == ["the collector is now incremental"]
    assert urls_in(claim) == ["https://docs.test/gc", "www.blog.test"]
