"""Workspace containment, tested on real directories against both resolvers (openat2 and the walk)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agent.safety.workspace import Entry, PathRefused, Workspace, openat2_available

REPO = Path(__file__).resolve().parents[3]
SECRET = b"outside secret\n"


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest) -> str:
    if request.param == "openat2" and not openat2_available():
        pytest.skip("this kernel has no openat2 with RESOLVE_BENEATH")
    return request.param


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret").write_bytes(SECRET)
    return directory


@pytest.fixture
def ws(tmp_path: Path, outside: Path, resolver: str) -> Workspace:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "f.txt").write_text("inside\n")
    with Workspace(root, resolver=resolver) as workspace:
        yield workspace


def outside_untouched(outside: Path) -> bool:
    return sorted(os.listdir(outside)) == ["secret"] and (outside / "secret").read_bytes() == SECRET


# --- lexical paths -------------------------------------------------------------------------------


def test_dotdot_leaving_the_root_is_refused(ws: Workspace) -> None:
    for path in ["..", "../outside/secret", "sub/../../outside/secret", "a/b/../../../x"]:
        with pytest.raises(PathRefused, match="outside the workspace"):
            ws.read_bytes(path, limit=100)


def test_dotdot_that_stays_inside_is_normalised(ws: Workspace) -> None:
    assert ws.relpath("sub/../sub/./f.txt") == "sub/f.txt"
    assert ws.read_bytes("x/../sub/f.txt", limit=100) == (b"inside\n", False)


def test_absolute_path_elsewhere_is_refused(ws: Workspace, outside: Path) -> None:
    for path in ["/etc/passwd", str(outside / "secret"), f"{ws.root}-sibling/x"]:
        with pytest.raises(PathRefused, match="outside the workspace"):
            ws.relpath(path)


def test_absolute_path_inside_is_made_relative(ws: Workspace) -> None:
    assert ws.relpath(f"{ws.root}/sub/f.txt") == "sub/f.txt"
    assert ws.relpath(str(ws.root)) == "."
    assert ws.read_bytes(f"{ws.root}/sub/f.txt", limit=100)[0] == b"inside\n"


def test_empty_path_is_the_root(ws: Workspace) -> None:
    assert ws.relpath("") == "."
    assert ws.stat("") == Entry(".", "dir", 0)


def test_nul_byte_is_refused(ws: Workspace) -> None:
    with pytest.raises(PathRefused, match="NUL"):
        ws.read_bytes("sub/f.txt\0.png", limit=10)


def test_refusal_is_one_line_naming_the_path(ws: Workspace) -> None:
    with pytest.raises(PathRefused) as caught:
        ws.relpath("../evil\nname")
    assert "\n" not in str(caught.value) and "evil" in str(caught.value)


# --- symlinks ------------------------------------------------------------------------------------


def test_symlink_to_outside_as_middle_component_is_refused(ws: Workspace, outside: Path) -> None:
    (ws.root / "out").symlink_to(outside)
    with pytest.raises(PathRefused):
        ws.read_bytes("out/secret", limit=100)
    with pytest.raises(PathRefused):
        ws.write_bytes("out/new", b"x")
    with pytest.raises(PathRefused):
        ws.iter_dir("out")
    assert outside_untouched(outside)


def test_symlink_to_outside_as_last_component_is_refused(ws: Workspace, outside: Path) -> None:
    (ws.root / "link").symlink_to(outside / "secret")
    with pytest.raises(PathRefused):
        ws.read_bytes("link", limit=100)
    with pytest.raises(PathRefused, match="symlink"):
        ws.write_bytes("link", b"overwritten")
    assert outside_untouched(outside)


def test_relative_symlink_climbing_out_is_refused(ws: Workspace, outside: Path) -> None:
    (ws.root / "sub" / "up").symlink_to("../../outside")
    with pytest.raises(PathRefused):
        ws.read_bytes("sub/up/secret", limit=100)
    with pytest.raises(PathRefused):
        ws.write_bytes("sub/up/new", b"x")
    assert outside_untouched(outside)


def test_dangling_symlink_out_is_refused(ws: Workspace, outside: Path) -> None:
    (ws.root / "dangle").symlink_to(outside / "not-yet")
    (ws.root / "dangle-dir").symlink_to(outside / "no-dir")
    with pytest.raises(PathRefused):
        ws.read_bytes("dangle", limit=100)
    with pytest.raises(PathRefused):
        ws.write_bytes("dangle", b"x")
    with pytest.raises(PathRefused):
        ws.write_bytes("dangle-dir/f", b"x")
    with pytest.raises(PathRefused):
        ws.mkdirs("dangle-dir/a/b")
    assert outside_untouched(outside)


def test_symlink_that_stays_inside_is_followed(ws: Workspace) -> None:
    (ws.root / "alias").symlink_to("sub")
    (ws.root / "sub" / "again").symlink_to("../sub/f.txt")
    assert ws.read_bytes("alias/f.txt", limit=100)[0] == b"inside\n"
    assert ws.read_bytes("alias/again", limit=100)[0] == b"inside\n"
    ws.write_bytes("alias/new.txt", b"via alias")
    assert (ws.root / "sub" / "new.txt").read_bytes() == b"via alias"


def test_absolute_symlink_is_refused_even_when_it_points_inside(ws: Workspace) -> None:
    (ws.root / "abs").symlink_to(ws.root / "sub")
    with pytest.raises(PathRefused):
        ws.read_bytes("abs/f.txt", limit=100)


def test_symlink_loop_is_refused(ws: Workspace) -> None:
    (ws.root / "a").symlink_to("b")
    (ws.root / "b").symlink_to("a")
    with pytest.raises(PathRefused, match="symlink"):
        ws.read_bytes("a", limit=10)


def test_device_reached_through_a_symlink_is_refused(ws: Workspace) -> None:
    (ws.root / "zero").symlink_to("/dev/zero")
    (ws.root / "proc-root").symlink_to("/proc/self/root")
    for path in ["zero", "proc-root/etc/passwd"]:
        with pytest.raises(PathRefused):
            ws.read_bytes(path, limit=10)


def test_device_node_inside_is_refused(ws: Workspace) -> None:
    try:
        os.mknod(ws.root / "null", 0o20666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("cannot mknod here")
    with pytest.raises(PathRefused, match="device"):
        ws.read_bytes("null", limit=10)


def test_fifo_is_refused_without_blocking(ws: Workspace) -> None:
    os.mkfifo(ws.root / "pipe")
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            ws.read_bytes("pipe", limit=10)
        except BaseException as exc:  # handed to the main thread, which asserts on it
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=3)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert isinstance(outcome[0], PathRefused) and "FIFO" in str(outcome[0])
    with pytest.raises(PathRefused, match="FIFO"):
        ws.write_bytes("pipe", b"x")


def test_directory_is_not_read_as_a_file(ws: Workspace) -> None:
    with pytest.raises(PathRefused, match="directory"):
        ws.read_bytes("sub", limit=10)


# --- writing -------------------------------------------------------------------------------------


def test_hard_linked_file_is_not_written(ws: Workspace, outside: Path) -> None:
    os.link(outside / "secret", ws.root / "hard")
    with pytest.raises(PathRefused, match="hard link"):
        ws.write_bytes("hard", b"overwritten")
    assert outside_untouched(outside)


def test_write_replaces_atomically_and_leaves_no_temp_behind(ws: Workspace) -> None:
    (ws.root / "sub" / "f.txt").chmod(0o640)
    ws.write_bytes("sub/f.txt", b"new content")
    ws.write_bytes("deep/er/g.txt", b"made parents")
    assert sorted(os.listdir(ws.root / "sub")) == ["f.txt"]
    assert (ws.root / "sub" / "f.txt").read_bytes() == b"new content"
    assert (ws.root / "sub" / "f.txt").stat().st_mode & 0o777 == 0o640
    assert os.listdir(ws.root / "deep" / "er") == ["g.txt"]


def test_write_without_mkdirs_needs_the_parent(ws: Workspace) -> None:
    with pytest.raises(FileNotFoundError):
        ws.write_bytes("nope/f", b"x", mkdirs=False)
    assert ws.stat("nope") is None


def test_failed_write_leaves_old_content_and_no_temp(ws: Workspace, resolver: str) -> None:
    # a real failure: the file size limit makes write(2) fail with EFBIG half way
    script = (
        "import resource, signal, sys\n"
        "from agent.safety.workspace import Workspace\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "try:\n"
        "    Workspace(sys.argv[1], resolver=sys.argv[2]).write_bytes('sub/f.txt', b'x' * 100000)\n"
        "except OSError as exc:\n"
        "    print('failed', exc.errno)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(ws.root), resolver],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert done.stdout.startswith("failed 27")  # EFBIG
    assert (ws.root / "sub" / "f.txt").read_bytes() == b"inside\n"
    assert os.listdir(ws.root / "sub") == ["f.txt"]


def test_root_cannot_be_written_or_removed(ws: Workspace) -> None:
    for action in (lambda: ws.write_bytes(".", b"x"), lambda: ws.remove("")):
        with pytest.raises(PathRefused, match="root"):
            action()


# --- listing and removing ------------------------------------------------------------------------


def test_stat_reports_a_final_symlink_without_following_it(ws: Workspace, outside: Path) -> None:
    (ws.root / "link").symlink_to(outside / "secret")
    assert ws.stat("link") == Entry("link", "symlink", 0)
    assert ws.stat("sub/f.txt") == Entry("f.txt", "file", 7)
    assert ws.stat("missing") is None
    assert ws.stat("missing/deeper") is None


def test_iter_dir_is_sorted_and_does_not_follow(ws: Workspace) -> None:
    (ws.root / "b.txt").write_text("b")
    (ws.root / "a-link").symlink_to("sub")
    assert [(e.name, e.kind) for e in ws.iter_dir()] == [("a-link", "symlink"), ("b.txt", "file"), ("sub", "dir")]


def test_walk_skips_named_dirs_and_never_descends_a_symlink(ws: Workspace, outside: Path) -> None:
    (ws.root / ".git" / "objects").mkdir(parents=True)
    (ws.root / "sub" / "deep").mkdir()
    (ws.root / "sub" / "deep" / "z").write_text("z")
    (ws.root / "out").symlink_to(outside)
    (ws.root / "loop").symlink_to(".")
    walked = [path for path, _ in ws.walk(skip_dirs=frozenset({".git"}))]
    assert walked == ["loop", "out", "sub", "sub/deep", "sub/deep/z", "sub/f.txt"]
    assert [path for path, _ in ws.walk("sub/deep")] == ["sub/deep/z"]


def test_remove_takes_the_link_not_its_target(ws: Workspace, outside: Path) -> None:
    (ws.root / "link").symlink_to(outside / "secret")
    (ws.root / "empty").mkdir()
    ws.remove("link")
    ws.remove("empty")
    assert ws.stat("link") is None and ws.stat("empty") is None
    assert outside_untouched(outside)
    with pytest.raises(OSError):
        ws.remove("sub")  # not empty


def test_read_text_refuses_binary_and_cuts_cleanly(ws: Workspace) -> None:
    (ws.root / "blob").write_bytes(b"PK\x03\x04\0\0data")
    (ws.root / "utf").write_bytes("héllo".encode())
    with pytest.raises(PathRefused, match="binary"):
        ws.read_text("blob", limit=100)
    assert ws.read_text("utf", limit=2) == ("h", True)
    assert ws.read_text("utf", limit=100) == ("héllo", False)


def test_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for root in (tmp_path / "missing", tmp_path / "file"):
        with pytest.raises(ValueError, match="not an existing directory"):
            Workspace(root)


# --- races ---------------------------------------------------------------------------------------


def flip_until(stop: threading.Event, root: Path, escapes: list[str]) -> None:
    """Swap root/d between a real directory and a symlink out, alternating the escape targets."""
    turn = 0
    while not stop.is_set():
        os.rename(root / "d", root / "d.real")
        os.symlink(escapes[turn % 2], root / "d")
        os.unlink(root / "d")
        os.rename(root / "d.real", root / "d")
        turn += 1


def use_d_once(ws: Workspace, seen: dict[str, int]) -> None:
    try:  # a walk that listed d as a dir must not enter it once it has become a symlink
        assert not [path for path, _ in ws.walk() if path.endswith("/secret")]
    except OSError:
        pass
    for action in (lambda: ws.read_bytes("d/x", limit=100), lambda: ws.write_bytes("d/x", b"inside", mkdirs=False)):
        try:
            result = action()
        except (PathRefused, OSError):  # refused, or caught mid-flip: missing / not a dir
            seen["refused"] += 1
            continue
        assert result is None or result[0] == b"inside"
        seen["ok"] += 1


def test_swapping_a_dir_for_a_symlink_mid_use_never_reaches_outside(ws: Workspace, outside: Path) -> None:
    (ws.root / "d").mkdir()
    (ws.root / "d" / "x").write_bytes(b"inside")
    (outside / "x").write_bytes(SECRET)
    stop, seen = threading.Event(), {"ok": 0, "refused": 0}
    flipper = threading.Thread(target=flip_until, args=(stop, ws.root, [str(outside), "../outside"]), daemon=True)
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # hand the GIL over often so the flips land mid-resolution
    flipper.start()
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            use_d_once(ws, seen)
    finally:
        stop.set()
        flipper.join()
        sys.setswitchinterval(old_interval)
    assert (outside / "x").read_bytes() == SECRET
    assert sorted(os.listdir(outside)) == ["secret", "x"]
    assert seen["ok"] > 0 and seen["refused"] > 0, seen  # both states were really hit


# --- the test-only switch ------------------------------------------------------------------------


def test_enforce_false_really_follows_links_and_dotdot(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "out").symlink_to(outside)
    (root / "secret-link").symlink_to(outside / "secret")
    with Workspace(root, enforce=False) as loose:
        assert loose.read_bytes("out/secret", limit=100)[0] == SECRET
        assert loose.read_bytes("../outside/secret", limit=100)[0] == SECRET
        loose.write_bytes("secret-link", b"written through")
        loose.write_bytes("out/new", b"new")
    assert (outside / "secret").read_bytes() == b"written through"
    assert (outside / "new").read_bytes() == b"new"
