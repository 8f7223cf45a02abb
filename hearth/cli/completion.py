"""Shell completion for `hearth` and `hearth-loop`, generated from their argparse parsers.

`hearth completion bash|zsh|fish` prints the script; nix/package.nix installs all three at build
time. Nothing here runs when a command runs: the scripts are static tables of each (sub)command's
words (its subcommands and options) and of the options that take a value (completed as files, or
as their choices), so completing costs the shell a table look-up, not a Python start.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

SHELLS = ("bash", "zsh", "fish")


@dataclass
class Command:
    """One parser in the tree: `path` is the words that reach it, e.g. ("creds", "set")."""

    program: str
    path: tuple[str, ...]
    help: str
    options: list[argparse.Action] = field(default_factory=list)
    subcommands: dict[str, str] = field(default_factory=dict)  # name -> one-line help
    choices: list[str] = field(default_factory=list)  # of its positional arguments


def walk(program: str, parser: argparse.ArgumentParser) -> list[Command]:
    """Every parser under `parser`, the top one first, each with its options and subcommands."""
    found: list[Command] = []

    def visit(p: argparse.ArgumentParser, path: tuple[str, ...], summary: str) -> None:
        command = Command(program, path, summary or (p.description or ""))
        found.append(command)
        for action in p._actions:
            if action.option_strings and action.help != argparse.SUPPRESS:
                command.options.append(action)
            elif action.choices and not isinstance(action, argparse._SubParsersAction):
                command.choices += [str(choice) for choice in action.choices]
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help or "" for a in action._choices_actions}
                for name, child in action.choices.items():
                    command.subcommands[name] = helps.get(name, "")
                    visit(child, (*path, name), helps.get(name, ""))

    visit(parser, (), parser.description or "")
    return found


def render(shell: str, trees: list[list[Command]]) -> str:
    if shell == "bash":
        return _bash(trees)
    if shell == "zsh":
        return _zsh(trees)
    if shell == "fish":
        return _fish(trees)
    raise ValueError(f"no completion for {shell!r}; use one of {', '.join(SHELLS)}")


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0 and not isinstance(action, argparse._HelpAction)


def _key(command: Command) -> str:
    return " ".join((command.program, *command.path))


def _words(command: Command) -> list[str]:
    return [*command.subcommands, *command.choices, *(s for a in command.options for s in a.option_strings)]


def _tables(trees: list[list[Command]]) -> str:
    """`_hearth_words KEY`, `_hearth_subs KEY` and `_hearth_value KEY OPTION` in shell both bash
    and zsh read: a case statement per table."""
    words, subs, values = [], [], []
    for command in (c for tree in trees for c in tree):
        key = _key(command)
        words.append(f"    '{key}') echo '{' '.join(_words(command))}' ;;")
        if command.subcommands:
            subs.append(f"    '{key}') echo '{' '.join(command.subcommands)}' ;;")
        for action in command.options:
            if _takes_value(action):
                choices = " ".join(map(str, action.choices)) if action.choices else "@files"
                values += [f"    '{key} {option}') echo '{choices}' ;;" for option in action.option_strings]
    return "\n".join(
        [
            '_hearth_words() {\n  case "$1" in',
            *words,
            "  esac\n}",
            '_hearth_subs() {\n  case "$1" in',
            *subs,
            "  esac\n}",
            '_hearth_value() {\n  case "$1 $2" in',
            *values,
            "    *) return 1 ;;\n  esac\n}",
        ]
    )


HEADER = (
    "# {shell} completion for hearth and hearth-loop, generated from their parsers by `hearth completion {shell}`\n"
)

_BASH = """
_hearth_complete() {
  local key="${COMP_WORDS[0]##*/}" i w subs
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${COMP_WORDS[i]}"
    [[ $w == -* ]] && continue
    subs=" $(_hearth_subs "$key") "
    [[ $subs == *" $w "* ]] && key="$key $w"
  done
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" value
  if [[ $prev == -* ]] && value="$(_hearth_value "$key" "$prev")"; then
    if [[ $value == @files ]]; then
      COMPREPLY=($(compgen -f -- "$cur"))
    else
      COMPREPLY=($(compgen -W "$value" -- "$cur"))
    fi
    return
  fi
  COMPREPLY=($(compgen -W "$(_hearth_words "$key")" -- "$cur"))
}
complete -o default -F _hearth_complete hearth hearth-loop
"""

_ZSH = """
_hearth_complete() {
  local key="${words[1]:t}" i w
  for ((i = 2; i < CURRENT; i++)); do
    w="${words[i]}"
    [[ $w == -* ]] && continue
    [[ " $(_hearth_subs "$key") " == *" $w "* ]] && key="$key $w"
  done
  local prev="${words[CURRENT-1]}" value
  if [[ $prev == -* ]] && value="$(_hearth_value "$key" "$prev")"; then
    if [[ $value == @files ]]; then
      _files
    else
      compadd -- ${=value}
    fi
    return
  fi
  compadd -- ${=$(_hearth_words "$key")}
}
compdef _hearth_complete hearth hearth-loop
"""


def _bash(trees: list[list[Command]]) -> str:
    return HEADER.format(shell="bash") + _tables(trees) + _BASH


def _zsh(trees: list[list[Command]]) -> str:
    return "#compdef hearth hearth-loop\n" + HEADER.format(shell="zsh") + _tables(trees) + _ZSH


def _fish(trees: list[list[Command]]) -> str:
    lines = [HEADER.format(shell="fish").rstrip()]
    for command in (c for tree in trees for c in tree):
        condition = _fish_condition(command, tree_subs(trees, command))
        for name, summary in command.subcommands.items():
            lines.append(f"complete -c {command.program} -f -n {_q(condition)} -a {name} -d {_q(summary)}")
        if command.choices:
            lines.append(f"complete -c {command.program} -f -n {_q(condition)} -a {_q(' '.join(command.choices))}")
        for action in command.options:
            lines.append(f"complete -c {command.program} -n {_q(condition)} {_fish_option(action)}")
    return "\n".join(lines) + "\n"


def tree_subs(trees: list[list[Command]], command: Command) -> list[str]:
    """The subcommand names of the parser above `command` and of `command` itself (what, once
    seen on the line, means the words are no longer this parser's)."""
    tree = next(t for t in trees if command in t)
    return sorted({name for c in tree for name in c.subcommands if len(c.path) >= len(command.path)})


def _fish_condition(command: Command, below: list[str]) -> str:
    seen = [f"__fish_seen_subcommand_from {word}" for word in command.path]
    own = [name for name in below if name in command.subcommands]
    if not command.path:
        return "__fish_use_subcommand" if own else "true"
    last = seen + ([f"not __fish_seen_subcommand_from {' '.join(own)}"] if own else [])
    return "; and ".join(last)


def _fish_option(action: argparse.Action) -> str:
    parts = []
    for option in action.option_strings:
        parts.append(f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}")
    if _takes_value(action):
        parts.append(f"-x -a {_q(' '.join(map(str, action.choices)))}" if action.choices else "-r")
    if action.help:
        parts.append(f"-d {_q(action.help.split(';')[0][:80])}")
    return " ".join(parts)


def _q(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
