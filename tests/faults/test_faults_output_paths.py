"""Issue 26, outputs: a path that is not a regular file is refused before any work, and every
filesystem failure is one named error (never a traceback, never a replaced device or link)."""
from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys

import pytest
from faults_helpers import ROOT, cli

from mnistforge.errors import NotWritableError, OutputPathError
from mnistforge.io.atomic import atomic_dir, atomic_file, check_output_file, output_lock

ROOT_USER = os.geteuid() == 0


def _targets(tmp_path):
    """A symlink to a file of the user's, a FIFO, a character device (root only), a folder."""
    mine = tmp_path / "mine.txt"
    mine.write_text("user data")
    out = {"symlink": tmp_path / "link", "fifo": tmp_path / "fifo", "folder": tmp_path / "dir"}
    os.symlink(mine, out["symlink"])
    os.mkfifo(out["fifo"])
    out["folder"].mkdir()
    if ROOT_USER:  # our own /dev/full (major 1, minor 7), so no test can ever touch the real one
        out["device"] = tmp_path / "full"
        os.mknod(out["device"], stat.S_IFCHR | 0o666, os.makedev(1, 7))
    return mine, out


def _unchanged(mine, paths):
    assert mine.read_text() == "user data"
    assert os.path.islink(paths["symlink"]) and os.readlink(paths["symlink"]) == str(mine)
    assert stat.S_ISFIFO(os.lstat(paths["fifo"]).st_mode)
    assert paths["folder"].is_dir() and not any(paths["folder"].iterdir())
    if "device" in paths:
        assert stat.S_ISCHR(os.lstat(paths["device"]).st_mode)


KINDS = ["symlink", "fifo", "device", "folder"]


@pytest.mark.parametrize("kind", KINDS)
def test_atomic_file_never_replaces_a_link_fifo_device_or_folder(tmp_path, kind):
    mine, paths = _targets(tmp_path)
    if kind not in paths:
        pytest.skip("making a device node needs root")
    with pytest.raises(OutputPathError, match="the output path is"):
        with atomic_file(paths[kind]) as f:
            f.write(b"new")
    _unchanged(mine, paths)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_path_that_becomes_a_symlink_during_the_write_is_refused(tmp_path):
    mine = tmp_path / "mine.txt"
    mine.write_text("user data")
    out = tmp_path / "out.json"
    with pytest.raises(OutputPathError, match="symbolic link"):
        with atomic_file(out, "w") as f:
            f.write("{}")
            os.symlink(mine, out)   # a hostile swap between the check and the rename
    assert mine.read_text() == "user data" and out.is_symlink()


# every file output of the command line (grep commands/ for output arguments); each run
# would work (or fail later) with a new name, so only the output path can stop it
COMMANDS = {
    "info --json": lambda p, s: ["info", "mnist", "--json", p],
    "verify --json": lambda p, s: ["verify", s, "--json", p, "--no-near"],
    "show --out": lambda p, s: ["show", s, "--out", p],
    "evaluate --predictions": lambda p, s: ["evaluate", "linear", "--train", s, "--test", s,
                                            "--predictions", p],
    "evaluate --save-model": lambda p, s: ["evaluate", "linear", "--train", s, "--test", s,
                                           "--save-model", p],
    "tarp --plot": lambda p, s: ["tarp", s, "--task", "0v1", "--plot", p, "--runs", "1"],
    "tarp --json": lambda p, s: ["tarp", s, "--task", "0v1", "--json", p, "--runs", "1"],
    "significance --json": lambda p, s: ["significance", "--example", "keysers2006", "--json", p],
    "significance --plot": lambda p, s: ["significance", "--example", "keysers2006", "--plot", p],
    "sd19 --json": lambda p, s: ["sd19", "info", s, "--json", p],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("kind", ["symlink", "fifo", "device"])
def test_every_file_output_refuses_a_link_fifo_or_device(tmp_path, built, command, kind):
    mine, paths = _targets(tmp_path)
    if kind not in paths:
        pytest.skip("making a device node needs root")
    target = paths[kind]
    if command == "evaluate --save-model":    # --save-model M writes M.npz and M.json
        os.rename(target, tmp_path / "model.npz")
        target, paths[kind] = tmp_path / "model", tmp_path / "model.npz"
    argv = COMMANDS[command](target, built)
    r = cli(*argv, timeout=120, env={"MNISTFORGE_OFFLINE": "1"})   # a FIFO must not hang
    assert r.returncode == 2, (argv, r.stdout, r.stderr)
    last = r.stderr.strip().splitlines()[-1]   # (argparse shows the usage above it)
    assert "Traceback" not in r.stderr and last.startswith(f"mnistforge {argv[0]}: error:"), r.stderr
    assert "the output path is" in last or "the --save-model path is" in last, r.stderr
    _unchanged(mine, paths)


@pytest.mark.parametrize("command", ["build", "synth-sd19", "export", "verify --report",
                                     "manitest --plot", "demo"])
def test_a_folder_output_that_is_a_symlink_is_refused(tmp_path, built, tiny_sd19, command):
    theirs = tmp_path / "elsewhere"
    theirs.mkdir()
    (theirs / "keep").write_text("user data")
    link = tmp_path / "link"
    os.symlink(theirs, link)
    argv = {"build": ["build", "mnist", "--sd19", tiny_sd19, "--out", link, "--overwrite"],
            "synth-sd19": ["synth-sd19", link, "--overwrite", "--scale", "0.0005"],
            "export": ["export", "hf", built, "--out", link, "--overwrite"],
            "verify --report": ["verify", built, "--report", link, "--no-near"],
            "manitest --plot": ["manitest", built, "--classifier", "linear", "--plot", link],
            "demo": ["demo", "--out", link, "--overwrite"]}[command]
    r = cli(*argv, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "symbolic link" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert sorted(p.name for p in theirs.iterdir()) == ["keep"]
    assert (theirs / "keep").read_text() == "user data" and link.is_symlink()


def test_dash_is_standard_output_and_a_regular_file_is_replaced(tmp_path):
    assert check_output_file("-") is None
    old = tmp_path / "old.json"
    old.write_text("stale")
    r = cli("info", "mnist", "--json", old)
    assert r.returncode == 0 and '"name": "mnist"' in old.read_text()
    r = cli("info", "mnist", "--json", "-")
    assert r.returncode == 0 and '"name": "mnist"' in r.stdout


# --------------------------------------------------------------------------- named failures

def test_a_name_too_long_is_one_named_error(tmp_path, tiny_sd19):
    long = tmp_path / ("a" * 250)
    for argv in (["build", "mnist", "--sd19", tiny_sd19, "--out", long],
                 ["info", "mnist", "--json", long], ["show", "mnist", "--out", long]):
        r = cli(*argv)
        assert r.returncode == 2 and "too long" in r.stderr and "Traceback" not in r.stderr, r.stderr
    with pytest.raises(OutputPathError, match="too long"):
        with output_lock(tmp_path / ("b" * 252)):   # fits, but not with ".lock"
            pass
    with pytest.raises(OutputPathError, match="too long"):
        with atomic_file(tmp_path / ("c" * 245)):  # fits, but not its temporary name
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_lock_path_that_is_a_folder_link_or_file_of_the_users(tmp_path, tiny_sd19):
    out = tmp_path / "b"
    (tmp_path / "b.lock").mkdir()
    r = cli("build", "mnist", "--sd19", tiny_sd19, "--out", out, "--workers", "1")
    assert r.returncode == 2 and "lock path is a folder" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and (tmp_path / "b.lock").is_dir()
    (tmp_path / "b.lock").rmdir()
    mine = tmp_path / "mine.txt"
    mine.write_text("user data")
    os.symlink(mine, tmp_path / "b.lock")
    with pytest.raises(OutputPathError, match="symbolic link"):
        with output_lock(out):
            pass
    assert mine.read_text() == "user data"     # never truncated to hold a process id
    (tmp_path / "b.lock").unlink()
    (tmp_path / "b.lock").write_text("my notes, not a process id")
    with pytest.raises(OutputPathError, match="did not write"):
        with atomic_dir(out):
            pass
    assert (tmp_path / "b.lock").read_text() == "my notes, not a process id"
    with pytest.raises(OutputPathError, match="under a file"):
        with output_lock(mine / "x"):             # a lock whose parent is a file
            pass
    (tmp_path / "b.lock").write_text("12345")  # a killed run's lock: reused and removed
    with atomic_dir(out) as tmp:
        (tmp / "x").write_text("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "mine.txt"]


def _immutable(path) -> bool:
    if not shutil.which("chattr"):
        return False
    return subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0


@pytest.mark.skipif(not ROOT_USER, reason="chattr +i needs CAP_LINUX_IMMUTABLE (root); the "
                    "read-only test below covers other users")
def test_an_immutable_parent_of_the_lock_is_one_named_error(tmp_path, tiny_sd19):
    # works as root, unlike permissions: the kernel refuses even root (EPERM)
    parent = tmp_path / "frozen"
    parent.mkdir()
    if not _immutable(parent):
        pytest.skip("this file system does not support chattr +i")
    try:
        r = cli("build", "mnist", "--sd19", tiny_sd19, "--out", parent / "b", "--workers", "1")
        assert r.returncode == 1, r.stderr
        assert "not writable" in r.stderr and "Traceback" not in r.stderr, r.stderr
        r = cli("info", "mnist", "--json", parent / "i.json")
        assert r.returncode == 1 and "not writable" in r.stderr, r.stderr
        with pytest.raises(NotWritableError, match="cannot write here"):
            with output_lock(parent / "b"):       # the lock itself (fetch takes it this way)
                pass
    finally:
        subprocess.run(["chattr", "-i", str(parent)], check=True)
    assert list(parent.iterdir()) == []


def test_a_read_only_mount_under_the_lock_is_one_named_error(tmp_path, tiny_sd19):
    # a read-only bind mount: EROFS, which root meets too
    src, ro = tmp_path / "src", tmp_path / "ro"
    src.mkdir()
    ro.mkdir()
    made = subprocess.run(["mount", "--bind", str(src), str(ro)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("no bind mounts here (needs CAP_SYS_ADMIN)")
    try:
        if subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)],
                          capture_output=True).returncode != 0:
            pytest.skip("cannot remount read-only here")
        r = cli("build", "mnist", "--sd19", tiny_sd19, "--out", ro / "b", "--workers", "1")
        assert r.returncode == 1 and "not writable" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
        with pytest.raises(NotWritableError, match="Read-only file system"):
            with output_lock(ro / "b"):
                pass
    finally:
        subprocess.run(["umount", str(ro)], check=True)
    assert list(src.iterdir()) == []


@pytest.mark.parametrize("kind", ["tmpfs", "bind"])
def test_an_out_that_is_a_mount_point_is_one_named_error(tmp_path, tiny_sd19, kind):
    src, mp = tmp_path / "disk", tmp_path / "b"
    src.mkdir()
    mp.mkdir()
    cmd = (["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mp)] if kind == "tmpfs"
           else ["mount", "--bind", str(src), str(mp)])
    if subprocess.run(cmd, capture_output=True).returncode:
        pytest.skip("cannot mount here (needs CAP_SYS_ADMIN)")
    try:
        r = cli("build", "mnist", "--sd19", tiny_sd19, "--out", mp, "--overwrite", "--workers", "1")
        # another device: refused when parsed; a bind mount of the same file system looks like
        # a folder until the rename says EBUSY (after the work, still one named error)
        assert r.returncode == 2 and "mount point" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    finally:
        subprocess.run(["umount", str(mp)], check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "disk"]


@pytest.mark.skipif(ROOT_USER, reason="root ignores permissions (the immutable and read-only mount "
                    "tests cover root)")
def test_a_read_only_parent_of_the_lock_is_one_named_error(tmp_path, tiny_sd19):
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        r = cli("build", "mnist", "--sd19", tiny_sd19, "--out", parent / "b", "--workers", "1")
        assert r.returncode == 1 and "not writable" in r.stderr, r.stderr
        with pytest.raises(NotWritableError):
            with output_lock(parent / "b"):
                pass
    finally:
        parent.chmod(0o755)


@pytest.mark.parametrize("how", ["env", "flag", "under-a-file"])
def test_a_cache_path_that_is_a_file(tmp_path, how):
    f = tmp_path / "cache.txt"
    f.write_text("not a folder")
    env = {"MNISTFORGE_OFFLINE": "1"}
    extra = []
    if how == "env":
        env["MNISTFORGE_HOME"] = str(f)
    elif how == "flag":
        extra = ["--cache", str(f)]
    else:
        env["MNISTFORGE_HOME"] = str(f / "sub")
    for argv in (["fetch", "mnist"], ["show", "mnist:test", "--out", tmp_path / "g.png"]):
        r = cli(*argv, *extra, env=env)
        assert r.returncode == 2, r.stderr
        assert "is not a folder" in r.stdout + r.stderr and "Traceback" not in r.stderr, r.stderr
    assert f.read_text() == "not a folder"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_full_standard_output_is_one_line_and_exit_1(tmp_path):
    with open("/dev/full", "w") as full:
        for argv in (["info", "mnist"], ["info", "--json", "-"]):
            e = dict(os.environ, PYTHONPATH=str(ROOT))
            r = subprocess.run([sys.executable, "-m", "mnistforge", *argv], stdout=full,
                               stderr=subprocess.PIPE, text=True, env=e, timeout=120)
            assert r.returncode == 1, r.stderr
            lines = [ln for ln in r.stderr.splitlines() if "error" in ln]
            assert lines == [lines[0]] and "cannot write to standard output" in lines[0], r.stderr
            assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr


def test_a_closed_pipe_ends_quietly(tmp_path):
    # `mnistforge info | head -c1` with the reader already gone: EPIPE on the first write
    r_fd, w_fd = os.pipe()
    os.close(r_fd)
    e = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "mnistforge", "info"], stdout=w_fd,
                       stderr=subprocess.PIPE, text=True, env=e, timeout=120)
    os.close(w_fd)
    assert p.returncode == 0, p.stderr
    assert p.stderr == "", p.stderr


def test_named_os_errors_say_path_expected_found_and_what_to_do():
    from mnistforge.io.atomic import named_os_error

    for code, cls in ((errno.ENOSPC, "DiskFullError"), (errno.EROFS, "NotWritableError"),
                      (errno.EACCES, "NotWritableError"), (errno.ENAMETOOLONG, "OutputPathError"),
                      (errno.ENOTDIR, "OutputPathError"), (errno.EISDIR, "OutputPathError")):
        e = named_os_error(OSError(code, os.strerror(code), "/x/y"), "/x")
        assert type(e).__name__ == cls
        assert e.path == "/x/y" and e.expected and e.found and e.hint, (code, str(e))
    other = OSError(errno.EIO, "Input/output error")
    assert named_os_error(other, "/x") is other
