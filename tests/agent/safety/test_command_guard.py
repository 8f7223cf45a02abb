"""The command guard: the hard floor sees through quoting, substitutions, wrappers and chains;
auto-approved heads cover exactly the programs a line runs."""

from __future__ import annotations

import pytest

from agent.safety.command_approval import auto_approved, heads
from agent.safety.command_floor import floor_violation
from agent.safety.shell_words import parse

WIPES = [
    "rm -rf /",
    "rm -rf /*",
    "rm -fr ~",
    "rm -r $HOME",
    'rm -rf "$HOME"/',
    "rm -rf ${HOME}",
    "rm -rf ~/..",
    "rm -rf //",
    "rm -rf /./",
    "rm -Rf /home",
    "rm -rf /home/alice",
    "rm -rf /root",
    "rm --recursive --force /",
    "rm -rf --no-preserve-root /",
    "rm -rf -- /",
    "rm -rf ${HOME:?}/",
    "find / -delete",
    "find ~ -exec rm -rf {} +",
]
FLOOR_PROGRAMS = [
    "mkfs.ext4 /dev/sda1",
    "mkfs -t xfs /dev/sdb",
    "mke2fs /dev/vda",
    "wipefs -a /dev/nvme0n1",
    "dd if=/dev/zero of=/dev/sda bs=1M",
    "cat image > /dev/nvme0n1",
    "tee /dev/sdb < image",
    "cp image /dev/mmcblk0",
    ":(){ :|:& };:",
    "bomb() { bomb | bomb & }; bomb",
    "function f { f | f & }; f",
    "shutdown -h now",
    "reboot",
    "halt",
    "poweroff",
    "systemctl poweroff",
    "systemctl --force reboot",
    "init 0",
    "telinit 6",
    "chmod -R 777 /",
    "chown -R nobody /",
    "chmod -Rf 000 /*",
    "chgrp --recursive users /",
]
DISGUISES = [
    "r'm' -rf /",
    '"rm" -rf /',
    "\\rm -rf /",
    "/bin/rm -rf /",
    "/bin/r? -rf /",
    "sudo rm -rf /",
    "sudo -u root rm -rf /",
    "doas rm -rf /",
    "env -i FOO=1 rm -rf /",
    "env -S 'rm -rf /'",
    "sh -c 'rm -rf /'",
    'bash -lc "rm -rf /"',
    "dash -ec 'rm -rf /'",
    "bash -o pipefail -c 'rm -rf /'",
    "nohup rm -rf / &",
    "timeout -s KILL 5 rm -rf /",
    "nice -n 19 ionice -c3 rm -rf /",
    "xargs rm -rf /",
    "setsid rm -rf /",
    "command rm -rf /",
    "exec rm -rf /",
    "time rm -rf /",
    "busybox rm -rf /",
    "stdbuf -o0 rm -rf /",
    "su -c 'rm -rf /'",
    "flock /tmp/l -c 'rm -rf /'",
    "watch -n 1 rm -rf /",
    "eval 'rm -rf /'",
    "echo 'rm -rf /' | sh",
    "printf 'rm -rf /' | bash",
    "echo hi; rm -rf /",
    "true && rm -rf /",
    "false || rm -rf /",
    "ls | rm -rf /",
    "ls\nrm -rf /",
    "sleep 1 & rm -rf /",
    "(rm -rf /)",
    "{ rm -rf /; }",
    "if true; then rm -rf /; fi",
    "! rm -rf /",
    "echo $(rm -rf /)",
    "echo `rm -rf /`",
    "cat <(rm -rf /)",
    "echo ${x:-$(rm -rf /)}",
    "x=$(rm -rf /)",
    "rm${IFS}-rf${IFS}/",
    "rm$IFS-rf$IFS/",
    "a=rm; $a -rf /",
    "export b=/; rm -rf $b",
    "{rm,-rf,/}",
    "rm -rf $'\\x2f'",
    "rm -rf $'\\057'",
    "sh -c \"sh -c 'rm -rf /'\"",
    "rm \\\n -rf /",
    "sudo sh -c 'nohup rm -rf ~ &'",
    "echo ok # harmless\nrm -rf /",
    "FOO=1 rm -rf /",
]
HARMLESS = [
    "rm -rf build",
    "rm -rf ./",
    "rm -rf /tmp/x",
    "rm -rf ~/project/build",
    "rm / ",
    "echo 'rm -rf /'",
    "echo rm -rf /",
    "printf '%s\\n' 'rm -rf /'",
    "git status && ls",
    "dd if=x of=y",
    "dd if=/dev/sda of=disk.img",
    "chmod -R 755 src",
    "chmod 755 /",
    "cat /dev/sda | wc -c",
    "wc < /dev/sda",
    "find . -delete",
    "find / -name '*.py'",
    "ls -la # ; rm -rf /",
    "grep -r 'shutdown' .",
    "python3 -c 'print(1)' > /dev/null",
    "echo x > /dev/stderr",
    "systemctl status",
    "sh script.sh",
    "f() { f; }; f",
    "mkdir -p home/root",
]


@pytest.mark.parametrize("line", WIPES + FLOOR_PROGRAMS)
def test_the_floor_denies_the_listed_commands(line: str) -> None:
    assert floor_violation(line)


@pytest.mark.parametrize("line", DISGUISES)
def test_the_floor_sees_through_quotes_substitutions_wrappers_and_chains(line: str) -> None:
    reason = floor_violation(line)
    assert reason and ("rm" in reason or "wipe" in reason), line


@pytest.mark.parametrize("line", HARMLESS)
def test_ordinary_commands_are_not_on_the_floor(line: str) -> None:
    assert floor_violation(line) is None


def test_the_reason_names_what_would_happen() -> None:
    assert floor_violation("sudo rm -rf /") == "rm -r would wipe /"
    assert floor_violation("dd if=/dev/zero of=/dev/sda") == "dd onto the block device /dev/sda"
    assert "fork bomb" in floor_violation(":(){ :|:& };:")
    assert floor_violation("systemctl reboot") == "systemctl reboot stops or restarts the machine"


def test_nesting_deeper_than_anyone_writes_is_refused_rather_than_guessed() -> None:
    line = "true"
    for _ in range(9):
        line = "eval '" + line.replace("'", "'\\''") + "'"
    assert "too deep" in floor_violation(line)


@pytest.mark.parametrize("line", ["find . -exec " * 500 + "true \\;", "sudo " * 500 + "ls", "xargs " * 500])
def test_pathological_nesting_is_too_deep_to_judge_not_a_crash(line: str) -> None:
    assert "too deep to judge" in floor_violation(line)
    assert heads(line) is None


def test_a_line_with_only_a_redirection_before_a_shell_is_read() -> None:
    assert floor_violation("> out | sh") is None
    assert floor_violation("/bin/echo 'rm -rf /' | sh") == "rm -r would wipe /"


def test_huge_and_broken_lines_are_judged_without_hanging() -> None:
    assert floor_violation("echo 'unclosed; rm -rf /") is None  # inside a quote: the shell would not run it
    assert floor_violation("rm -rf / 'unclosed") == "rm -r would wipe /"
    assert floor_violation("$(" * 20_000) is not None
    assert floor_violation("echo " + "{a,b}" * 40) is None
    assert floor_violation("x" * 200_000) is None


# --- heads and auto-approval ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("git status", ["git"]),
        ("git status && ls -la | wc -l", ["git", "ls", "wc"]),
        ("sudo -u bob git log", ["git"]),
        ("timeout 5 pytest -q", ["pytest"]),
        ("sh -c 'git diff; ls'", ["git", "ls"]),
        ("ls $(cat list.txt)", ["ls", "cat"]),
        ("find . -name '*.pyc' -exec rm {} +", ["rm", "find"]),
        ("ls | xargs", ["ls", "echo"]),
        ("PATH=. git status", None),
        ("env PATH=. git status", None),
        ("$EDITOR file", None),
        ("$(which git) status", None),
        ("l? -la", None),
        ("echo 'unclosed", None),
        ("", None),
    ],
)
def test_heads_are_every_program_the_line_runs_or_none_when_unknowable(line: str, expected: list[str] | None) -> None:
    assert heads(line) == expected


@pytest.mark.parametrize(
    ("line", "approved"),
    [
        ("git status", True),
        ("git log --oneline | head -5", False),  # head is not listed
        ("git status; rm -rf build", False),
        ("git status && curl http://example.com", False),
        ("ls `rm -rf build`", False),
        ("git status > out.txt", False),  # a redirection: not a simple command (issue 17)
        ("./git status", False),  # a program in the workspace named like a listed one
        ("/usr/bin/git status", False),
        ("PATH=.:$PATH git status", False),
        ("sh -c 'git status'", False),  # a shell wrapper: not a simple command (issue 17)
        ("env git status", False),
        ("git status | xargs ls", False),
        ("(git status)", False),
        ("{ git status; }", False),
        ("git status 2>/dev/null", False),
        ("git status &", False),
        ("PATH=. sh -c 'git status'", False),
        ("ls -la\npytest -q", True),
    ],
)
def test_auto_approval_needs_every_program_to_be_a_listed_head(line: str, approved: bool) -> None:
    assert auto_approved(line, ["git", "ls", "pytest"]) is approved


def test_an_empty_head_list_approves_nothing() -> None:
    assert not auto_approved("ls", [])
    assert not auto_approved("ls", ["  "])


def test_a_listed_path_matches_only_that_path() -> None:
    assert auto_approved("/usr/bin/git status", ["/usr/bin/git"])
    assert not auto_approved("git status", ["/usr/bin/git"])


# --- the shell reading itself --------------------------------------------------------------------


def test_redirections_are_taken_out_of_the_words_and_fd_numbers_dropped() -> None:
    [command] = parse("cmd a 2>/dev/null >> 'log file' b <in").commands
    assert command.words == ["cmd", "a", "b"]
    assert command.redirects == [(">", "/dev/null"), (">>", "log file"), ("<", "in")]


def test_ansi_c_quotes_decode_their_escapes() -> None:
    [command] = parse(r"echo $'a\tb' $'\x41\101\u00e9' $'it\'s'").commands
    assert command.words == ["echo", "a\tb", "AAé", "it's"]


def test_substitutions_are_read_and_comments_dropped() -> None:
    line = parse('echo "$(date) `whoami`" # $(rm -rf /)')
    assert line.substitutions == ["date", "whoami"]
    assert line.complete
