"""A server's file under $HEARTH_CONFIG_DIR/mcp/ read as the operator wrote it, and a bad one
refused naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from hearth.errors import ConfigError
from hearth.mcp.config import ToolRule, load_server, load_servers


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "mcp" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_stdio_server_is_read_with_its_tools_and_unnamed_tools_are_dangerous(tmp_path: Path) -> None:
    write(
        tmp_path,
        "files",
        'command = "/usr/bin/python3"\nargs = ["toy.py"]\nenv = { TOKEN = "github" }\n'
        'read = ["/opt/toy"]\ntimeout = 5\n[tools.read_note]\nrisk = "safe"\n[tools.crash]\noffered = false\n',
    )
    [server] = load_servers(tmp_path)
    assert (server.name, server.transport, server.command, server.args) == (
        "files",
        "stdio",
        "/usr/bin/python3",
        ("toy.py",),
    )
    assert server.env == (("TOKEN", "github"),) and server.egress == () and server.timeout_s == 5.0
    assert server.rule("read_note") == ToolRule("safe", True)
    assert server.rule("crash") == ToolRule("dangerous", False)
    assert server.rule("never_named") == ToolRule("dangerous", True)


def test_an_http_server_needs_a_url_and_no_command(tmp_path: Path) -> None:
    server = load_server(write(tmp_path, "web", 'transport = "http"\nurl = "http://127.0.0.1:8931/mcp"\n'))
    assert (server.transport, server.url) == ("http", "http://127.0.0.1:8931/mcp")
    headed = 'transport = "http"\nurl = "http://x/mcp"\nheaders = { Authorization = "Bearer cred:web" }\n'
    assert load_server(write(tmp_path, "web", headed)).headers == (("Authorization", "Bearer cred:web"),)
    with pytest.raises(ConfigError, match=r"web\.toml: command is for transport stdio"):
        load_server(write(tmp_path, "web", 'transport = "http"\nurl = "http://x/mcp"\ncommand = "x"\n'))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('command = "x"\ncolour = "red"\n', "unknown key 'colour'"),
        ('command = "x"\n[tools.echo]\nrisk = "harmless"\n', "tools.echo.risk must be one of safe, edit, dangerous"),
        ('command = "x"\n[tools.echo]\noffered = "yes"\n', "tools.echo.offered must be true or false"),
        ('command = "x"\n[tools.echo]\nrisky = "safe"\n', "tools.echo: unknown key 'risky'"),
        ('command = "x"\nenv = { TOKEN = "ghp_abc def" }\n', "env.TOKEN must name a credential"),
        ('command = "x"\ntimeout = 0\n', "timeout must be a number of seconds from 1 to 600"),
        ('transport = "carrier-pigeon"\n', "transport must be one of stdio, http"),
        ('args = ["x"]\n', "command is required for transport stdio"),
        ('command = "x"\nread = ["relative"]\n', "read: 'relative' is not an absolute path"),
        ("command = \n", "is not valid TOML"),
        ('command = "x"\nheaders = { A = "b" }\n', "headers are for transport http"),
        ('transport = "http"\nurl = "http://x/"\nenv = { T = "t" }\n', "env is for transport stdio"),
        ('transport = "http"\nurl = "http://x/"\nheaders = { "A B" = "c" }\n', "must be a header name"),
    ],
)
def test_a_bad_file_is_refused_naming_the_file_and_the_key(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path, "files", text)
    with pytest.raises(ConfigError) as refused:
        load_servers(tmp_path)
    assert str(path) in str(refused.value) and problem in str(refused.value)


def test_a_server_name_that_could_not_join_a_tool_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="server name 'my__files'"):
        load_servers(tmp_path) if write(tmp_path, "my__files", 'command = "x"\n') else None


def test_no_mcp_directory_is_no_servers(tmp_path: Path) -> None:
    assert load_servers(tmp_path) == []
