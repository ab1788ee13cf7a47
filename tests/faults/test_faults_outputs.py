"""Items 1 and 2 of issue 17: concurrent runs into one --out, --overwrite and overlapping paths;
plus a full disk (one named error naming the path)."""
from __future__ import annotations

import errno
import os
import shutil
import sys
import textwrap
import time

import pytest
from faults_helpers import ROOT, cli, start_cli

from mnistforge.errors import BuildError, ConfigError, DiskFullError, OutputInUseError
from mnistforge.io.atomic import atomic_dir, atomic_file, check_output_path, output_lock

# A process that holds atomic_dir(out) until told to finish: the "first run".
HOLDER = textwrap.dedent("""
    import pathlib, sys, time
    sys.path.insert(0, {root!r})
    from mnistforge.io.atomic import atomic_dir
    out, ready, go = map(pathlib.Path, sys.argv[1:4])
    with atomic_dir(out) as tmp:
        (tmp / "first.txt").write_text("first run")
        ready.write_text("ready")
        while not go.exists():
            time.sleep(0.05)
""")


def _hold(tmp_path, out):
    import subprocess

    ready, go = tmp_path / "ready", tmp_path / "go"
    for p in (ready, go):
        if p.exists():
            p.unlink()
    proc = subprocess.Popen([sys.executable, "-c", HOLDER.format(root=str(ROOT)), str(out),
                             str(ready), str(go)])
    while not ready.exists():
        assert proc.poll() is None, "the holder died"
        time.sleep(0.02)
    return proc, go


@pytest.mark.parametrize("attempt", range(3))
def test_second_run_into_the_same_out_fails_and_the_first_completes(tmp_path, tiny_sd19,
                                                                    attempt):
    # issue 17, item 1: the second run must neither delete the first one's work nor succeed
    out = tmp_path / "X"
    first, go = _hold(tmp_path, out)
    try:
        second = cli("build", "mnist", "--sd19", tiny_sd19, "--out", out, "--workers", "1")
        assert second.returncode != 0
        assert "another mnistforge run is writing" in second.stderr, second.stderr
        assert "Traceback" not in second.stderr
        assert (tmp_path / "X.incomplete" / "first.txt").read_text() == "first run"
    finally:
        go.write_text("go")
        assert first.wait(timeout=60) == 0
    assert sorted(p.name for p in out.iterdir()) == ["first.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["X", "go", "ready"]


@pytest.mark.parametrize("attempt", range(3))
def test_two_concurrent_synth_runs_leave_one_whole_output(tmp_path, attempt):
    out = tmp_path / "s"
    args = ("synth-sd19", out, "--scale", "0.0005", "--workers", "1")
    procs = [start_cli(*args), start_cli(*args)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    codes = sorted(rc for rc, _ in results)
    assert codes[0] == 0 and codes[1] != 0, results
    loser = next(err for rc, err in results if rc != 0)
    assert "another mnistforge run is writing" in loser or "already exists" in loser, loser
    assert "Traceback" not in loser
    # the winner's output is whole and readable
    from mnistforge.sd19 import open_sd19
    assert len(open_sd19(out).index) > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_lock_is_exclusive_and_released(tmp_path):
    out = tmp_path / "o"
    with output_lock(out):
        assert (tmp_path / "o.lock").is_file()
    assert not (tmp_path / "o.lock").exists()
    with output_lock(out):  # reusable after release
        pass


def test_lock_held_by_another_process_is_a_named_error(tmp_path):
    out = tmp_path / "o"
    proc, go = _hold(tmp_path, out)
    try:
        with pytest.raises(OutputInUseError, match=r"process \d+"):
            with atomic_dir(out):
                pass
    finally:
        go.write_text("go")
        proc.wait(timeout=60)


def test_lock_of_a_killed_run_does_not_block(tmp_path):
    out = tmp_path / "o"
    proc, _go = _hold(tmp_path, out)
    proc.kill()
    proc.wait(timeout=60)
    # the killed run left <out>.incomplete (with the package's mark) and its lock file
    assert (tmp_path / "o.incomplete" / "first.txt").exists()
    with atomic_dir(out) as tmp:
        (tmp / "second.txt").write_text("x")
    assert sorted(p.name for p in out.iterdir()) == ["second.txt"]
    assert not (tmp_path / "o.incomplete").exists()


def test_a_foreign_incomplete_folder_is_never_deleted(tmp_path):
    (tmp_path / "o.incomplete").mkdir()
    (tmp_path / "o.incomplete" / "precious").write_text("user data")
    with pytest.raises(BuildError, match="did not write"):
        with atomic_dir(tmp_path / "o"):
            pass
    assert (tmp_path / "o.incomplete" / "precious").read_text() == "user data"


# --------------------------------------------------------------------------- item 2

def test_overwrite_never_deletes_the_input_it_contains(tmp_path, tiny_sd19):
    # issue 17, item 2: `build all --sd19 /p/sd19 --out /p --overwrite` removed /p/sd19
    p = tmp_path / "p"
    shutil.copytree(tiny_sd19, p / "sd19")
    (p / "notes.txt").write_text("mine")
    before = sorted(str(q.relative_to(p)) for q in p.rglob("*"))
    r = cli("build", "all", "--sd19", p / "sd19", "--out", p, "--overwrite", "--workers", "1")
    assert r.returncode == 2, r.stderr
    assert "contains an input" in r.stderr and "Traceback" not in r.stderr
    assert sorted(str(q.relative_to(p)) for q in p.rglob("*")) == before


@pytest.mark.parametrize("where", ["same", "inside", "contains"])
def test_output_overlapping_an_input_is_refused(tmp_path, where):
    src = tmp_path / "src"
    src.mkdir()
    out = {"same": src, "inside": src / "out", "contains": tmp_path}[where]
    with pytest.raises(ConfigError, match="output folder"):
        check_output_path(out, [src])
    with pytest.raises(ConfigError):
        with atomic_dir(out, overwrite=True, inputs=[src]):
            pass
    assert src.is_dir()


def test_overwrite_replaces_only_a_folder_the_package_wrote(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "precious").write_text("user data")
    with pytest.raises(BuildError, match="only a folder mnistforge wrote"):
        with atomic_dir(out, overwrite=True):
            pass
    assert (out / "precious").read_text() == "user data"


def test_overwrite_of_an_export_needs_an_export(tmp_path, tiny_sd19):
    out = tmp_path / "repo"
    out.mkdir()
    (out / "README.md").write_text("my own notes\n")
    r = cli("export", "hf", "mnist:test", "--out", out, "--overwrite", "--no-download")
    assert r.returncode != 0
    assert (out / "README.md").read_text() == "my own notes\n"


@pytest.mark.parametrize("case", ["file", "under-file", "dot"])
def test_out_that_is_a_file_or_under_one_or_the_cwd(tmp_path, tiny_sd19, case):
    f = tmp_path / "f.txt"
    f.write_text("keep")
    out = {"file": f, "under-file": f / "sub", "dot": "."}[case]
    # `--out .` from a folder holding the user's file (run there, never in the repository)
    r = cli("build", "mnist", "--sd19", tiny_sd19, "--out", out, "--workers", "1",
            *(["--overwrite"] if case == "dot" else []), cwd=tmp_path)
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert f.read_text() == "keep"


# --------------------------------------------------------------------------- disk full

def test_disk_full_is_one_named_error_naming_the_path(tmp_path):
    out = tmp_path / "o"
    with pytest.raises(DiskFullError, match="no space left") as e:
        with atomic_dir(out) as tmp:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp / "big.idx"))
    assert "big.idx" in str(e.value) and isinstance(e.value, OSError)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(DiskFullError, match="a.bin"):
        with atomic_file(tmp_path / "a.bin"):
            raise OSError(errno.ENOSPC, "No space left on device")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_real_enospc_from_dev_full(tmp_path):
    # a real ENOSPC from the kernel (a full tmpfs needs root): writing to /dev/full
    with pytest.raises(DiskFullError):
        with atomic_dir(tmp_path / "o"):
            with open("/dev/full", "wb") as f:
                f.write(b"x" * 10)
                f.flush()
    assert list(tmp_path.iterdir()) == []
