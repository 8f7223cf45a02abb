"""How the command center's templates read the audit's rows (hearth/web/pages.py's environment)."""

from __future__ import annotations

from hearth.web.pages import environment


def test_a_row_s_value_is_read_by_its_key_and_escaped_like_any_value() -> None:
    page = environment().from_string("{{ r.goal }}|{{ r.absent }}|{{ r.items()|list|length }}|{{ o.real }}")
    assert page.render(r={"goal": "<b>x</b>", "n": 1}, o=3) == "&lt;b&gt;x&lt;/b&gt;||2|3"


def test_a_row_s_key_wins_over_a_dict_method_of_the_same_name_and_only_when_present() -> None:
    page = environment().from_string("{{ r.items }}|{{ (s.items() | list)[0][0] }}")
    assert page.render(r={"items": "kept"}, s={"k": 1}) == "kept|k"
