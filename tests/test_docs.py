"""The manual keeps its word: the README is the front door with exactly its two set-up commands,
every page of docs/ is in the index and every link lands, and every `hearth` or `hearth-loop`
command in a `sh` block of the README or a page parses with the real parsers, options and all,
naming only profiles a fresh machine has."""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import re
import shlex
from pathlib import Path

import pytest

from hearth.cli.loop import build_parser as build_loop_parser
from hearth.cli.main import build_parser
from hearth.run.profiles import BUILTIN
from hearth.settings import Settings
from tests.conftest import ROOT

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
PROGRAMS = ("hearth", "hearth-loop")
SEPARATORS = {"&&", "||", "|", ";", "&", "(", ")"}
REDIRECTS = {"<", ">", ">>", "<<"}


def sh_blocks(page: Path) -> list[str]:
    """The text of every fenced `sh` block of a page, list items' indented ones too."""
    found = re.findall(r"^([ \t]*)```sh\n(.*?)^[ \t]*```", page.read_text(), re.S | re.M)
    return ["\n".join(line.removeprefix(indent) for line in body.splitlines()) for indent, body in found]


def commands(block: str) -> list[list[str]]:
    """Each `hearth ...` or `hearth-loop ...` of a block as its argv, program first, cut at pipes,
    `&&` and redirections, without the comment."""
    return [argv for argv, _ in commented(block)]


def commented(block: str) -> list[tuple[list[str], list[str]]]:
    """Each command of a block with the options its line's comment names (`# ... (--json, --all)`),
    which are the last command's of the line."""
    found: list[tuple[list[str], list[str]]] = []
    for line in block.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        argv: list[str] = []
        skip = False
        for word in [*lexer, ";"]:
            if skip:
                skip = False
            elif word in REDIRECTS:
                skip = True
            elif word in SEPARATORS:
                if argv and Path(argv[0]).name in PROGRAMS:
                    found.append(([Path(argv[0]).name, *argv[1:]], []))
                argv = []
            else:
                argv.append(word)
        comment = re.search(r"\s#\s(.*)$", line)
        if comment and found and found[-1][0] and not found[-1][1]:
            found[-1] = (found[-1][0], re.findall(r"(?<![\w-])--[a-z][\w-]*", comment.group(1)))
    return found


def documented() -> list[tuple[str, list[str]]]:
    return [(page.name, argv) for page in PAGES for block in sh_blocks(page) for argv in commands(block)]


@functools.cache
def parser_for(program: str) -> argparse.ArgumentParser:
    return build_parser() if program == "hearth" else build_loop_parser(Settings.from_env({}))


def parse(argv: list[str]) -> argparse.Namespace:
    """argv parsed as the program would parse it; what it refuses fails the test with its own words."""
    program, *rest = argv
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            return parser_for(program).parse_args(rest)
    except SystemExit:
        pytest.fail(f"{shlex.join(argv)}: {said.getvalue().strip()}")


def options_of(argv: list[str]) -> set[str]:
    """The options the command argv names takes: its own subcommand's and the program's."""
    parser = parser_for(argv[0])
    known = set(parser._option_string_actions)
    for word in argv[1:]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and word in subs[0].choices:
            parser = subs[0].choices[word]
            known |= set(parser._option_string_actions)
    return known


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def test_every_hearth_command_in_the_readme_and_the_manual_parses_with_the_options_it_names() -> None:
    found = documented()
    pages = {page for page, _ in found}
    assert {"README.md", "run.md", "queue.md", "leash.md", "long-work.md", "tools.md"} <= pages, pages
    assert {argv[0] for _, argv in found} == set(PROGRAMS)
    for _, argv in found:
        parse(argv)


def test_every_option_a_command_s_comment_names_is_an_option_of_that_command() -> None:
    named = [
        (page.name, argv, flags) for page in PAGES for block in sh_blocks(page) for argv, flags in commented(block)
    ]
    assert any(flags for _, _, flags in named)
    for page, argv, flags in named:
        unknown = set(flags) - options_of(argv)
        assert not unknown, f"{page}: {shlex.join(argv)} has no option {sorted(unknown)}"


def test_the_parser_check_refuses_an_option_that_does_not_exist() -> None:
    ((argv, said),) = commented("hearth runs --colour red   # the runs in colour (--hue, --json)")
    assert argv == ["hearth", "runs", "--colour", "red"] and said == ["--hue", "--json"]
    assert "--hue" not in options_of(argv) and "--json" in options_of(argv)
    with pytest.raises(pytest.fail.Exception, match="unrecognized arguments: --colour red"):
        parse(argv)


def test_the_examples_name_only_profiles_a_fresh_machine_has() -> None:
    named = {
        args.agent_name
        for _, argv in documented()
        if (args := parse(argv)) and getattr(args, "agent_name", None) is not None
    }
    assert named <= set(BUILTIN), named - set(BUILTIN)


def test_the_readme_has_exactly_the_two_set_up_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set up\n", 1)[1].split("\n## ", 1)[0]
    first = sh_blocks_of(setup)[0]
    assert [line.split("#")[0].strip() for line in first.splitlines()] == ["make demo", "make test"]
    makes = [line for block in sh_blocks(ROOT / "README.md") for line in block.splitlines() if "make " in line]
    assert [m.split("#")[0].strip() for m in makes] == ["make demo", "make test"]


def test_the_readme_says_how_long_each_set_up_command_takes() -> None:
    setup = (ROOT / "README.md").read_text().split("## Set up\n", 1)[1].split("\n## ", 1)[0]
    said = " ".join(setup.split())
    assert re.search(r"first `make demo` takes [^.]*minutes", said), "how long the first make demo takes"
    assert re.search(r"`make test` takes [^.]*(hour|minutes)", said), "how long make test takes"


def sh_blocks_of(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)


def test_every_page_of_the_manual_is_in_its_index_and_on_the_front_door() -> None:
    index = (DOCS / "README.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for page in DOCS.glob("*.md"):
        if page.name != "README.md":
            assert f"]({page.name})" in index, f"docs/README.md does not link {page.name}"
            assert f"](docs/{page.name})" in readme, f"README.md does not link docs/{page.name}"


def test_every_link_between_the_pages_lands_on_a_file_and_a_heading_that_exist() -> None:
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            landed = (page.parent / path).resolve() if path else page
            assert landed.exists(), f"{page.name} links {target}, which does not exist"
            if anchor:
                assert anchor in anchors(landed), f"{page.name} links {target}: no such heading"
