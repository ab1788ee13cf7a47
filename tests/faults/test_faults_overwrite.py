"""Issue 26, outputs: `--overwrite` replaces only what a folder's own record lists, never a name
the run did not make itself (`<out>.old`), and Ctrl-C or a second run never leaves neither."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from faults_helpers import ROOT, cli, start_cli

from mnistforge.errors import BuildError, NotOwnedError
from mnistforge.io import atomic
from mnistforge.io.atomic import atomic_dir
from mnistforge.io.manifest import Manifest, build_folder_problems


def _tree(folder):
    return sorted((str(p.relative_to(folder)), p.read_bytes() if p.is_file() else None)
                  for p in folder.rglob("*"))


def _copy(src, dst):
    shutil.copytree(src, dst, symlinks=True)
    return dst


# --------------------------------------------------------------------------- build folders

def test_a_file_named_manifest_json_is_not_enough(tmp_path, tiny_sd19):
    # before: any folder holding a file named manifest.json was deleted with the user's files
    out = tmp_path / "mine"
    out.mkdir()
    (out / "manifest.json").write_text('{"my": "own notes"}')
    (out / "thesis.tex").write_text("years of work")
    before = _tree(out)
    r = cli("build", "mnist", "--sd19", tiny_sd19, "--out", out, "--overwrite", "--workers", "1")
    assert r.returncode == 1, r.stderr
    assert "only a folder mnistforge wrote" in r.stderr and "manifest.json" in r.stderr
    assert "Traceback" not in r.stderr
    assert _tree(out) == before


def test_a_build_folder_with_a_file_of_the_users_is_refused_before_any_work(tmp_path, built):
    out = _copy(built, tmp_path / "b")
    (out / "notes.txt").write_text("mine")
    before = _tree(out)
    # an --sd19 that is no source at all: the refusal must come first, before reading it
    empty = tmp_path / "not-sd19"
    empty.mkdir()
    r = cli("build", "mnist", "--sd19", empty, "--out", out, "--overwrite", "--workers", "1")
    assert r.returncode == 1, r.stderr
    assert "notes.txt (not listed)" in r.stderr and "nothing was removed" in r.stderr, r.stderr
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "not-sd19"]


@pytest.mark.parametrize("damage", ["grown", "symlink", "dotfile", "subfolder"])
def test_a_changed_listed_file_or_anything_extra_is_named(tmp_path, built, damage):
    out = _copy(built, tmp_path / "b")
    precious = tmp_path / "precious.txt"
    precious.write_text("user data")
    name = "train-labels-idx1-ubyte.gz"
    if damage == "grown":
        with open(out / name, "ab") as f:
            f.write(b"x")
        expect = f"{name} ("
    elif damage == "symlink":
        (out / name).unlink()
        os.symlink(precious, out / name)
        expect = f"{name} (a symbolic link)"
    elif damage == "dotfile":
        (out / ".my-settings").write_text("x")
        expect = ".my-settings (not listed)"
    else:
        (out / "extra").mkdir()
        (out / "extra" / "a.txt").write_text("x")
        expect = "extra/ (not listed)"
    problems = build_folder_problems(out)
    assert any(p.startswith(expect) for p in problems), problems
    with pytest.raises(NotOwnedError, match="only a folder mnistforge wrote"):
        with atomic_dir(out, overwrite=True, owned=build_folder_problems):
            pass
    assert precious.read_text() == "user data"


def test_overwrite_of_an_untouched_build_replaces_it(tmp_path, built, tiny_sd19):
    out = _copy(built, tmp_path / "b")
    r = cli("build", "mnist", "--sd19", tiny_sd19, "--out", out, "--overwrite", "--workers", "1")
    assert r.returncode == 0, r.stderr
    assert build_folder_problems(out) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


def test_build_all_follows_the_rule_per_subfolder(tmp_path, built, tiny_sd19):
    out = tmp_path / "all"
    for t in ("qmnist", "mnist"):
        _copy(built, out / t)
    assert build_folder_problems(out) == []
    (out / "mnist" / "notes.txt").write_text("mine")
    (out / "README").write_text("mine too")
    before = _tree(out)
    r = cli("build", "all", "--sd19", tiny_sd19, "--out", out, "--overwrite", "--workers", "1")
    assert r.returncode == 1, r.stderr
    assert "mnist/notes.txt (not listed)" in r.stderr and "README" in r.stderr, r.stderr
    assert _tree(out) == before


def test_a_manifest_whose_outputs_is_a_list_is_a_format_error_naming_the_file(tmp_path, built):
    from mnistforge.errors import FormatError

    out = _copy(built, tmp_path / "b")
    doc = json.loads((out / "manifest.json").read_text())
    doc["outputs"] = list(doc["outputs"])
    (out / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=r"manifest.json: malformed build manifest: 'outputs'"):
        Manifest.read(out)
    # --overwrite refuses it too (its record lists nothing it can trust)
    assert build_folder_problems(out)
    r = cli("verify", out, "--no-near")
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert "manifest.json" in r.stdout + r.stderr


# --------------------------------------------------------------------------- other outputs

def test_a_synthetic_sd19_with_a_file_of_the_users_is_refused(tmp_path, tiny_sd19):
    out = _copy(tiny_sd19, tmp_path / "s")
    args = ("synth-sd19", out, "--scale", "0.0005", "--workers", "1", "--overwrite")
    # read once: the SD19 index cache in .mnistforge/ is the package's own, overwrite works
    from mnistforge.sd19 import open_sd19
    assert len(open_sd19(out).index)
    assert (out / ".mnistforge").is_dir()
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    (out / "by_write.zip.bak").write_bytes(b"my backup")
    (out / ".mnistforge").mkdir(exist_ok=True)
    (out / ".mnistforge" / "notes").write_text("mine")
    r = cli(*args)
    assert r.returncode == 1, r.stderr
    assert "by_write.zip.bak (not listed)" in r.stderr and ".mnistforge/notes" in r.stderr
    assert (out / "by_write.zip.bak").read_bytes() == b"my backup"


def test_a_description_file_alone_is_not_enough(tmp_path):
    out = tmp_path / "s"
    out.mkdir()
    (out / "synthetic-sd19.json").write_text("{}")
    (out / "data.csv").write_text("1,2,3")
    r = cli("synth-sd19", out, "--scale", "0.0005", "--workers", "1", "--overwrite")
    assert r.returncode == 1 and "synthetic-sd19.json (no kind or outputs" in r.stderr, r.stderr
    assert (out / "data.csv").read_text() == "1,2,3"


def test_a_synthetic_sd19_described_before_outputs_were_listed(tmp_path, tiny_sd19):
    # zips: the configuration names them, so an older description still decides
    from mnistforge.sd19.synth.synthesize import synthetic_sd19_problems

    out = _copy(tiny_sd19, tmp_path / "s")
    desc = json.loads((out / "synthetic-sd19.json").read_text())
    del desc["outputs"]
    (out / "synthetic-sd19.json").write_text(json.dumps(desc))
    assert synthetic_sd19_problems(out) == []
    (out / "mine.zip").write_bytes(b"PK")
    assert synthetic_sd19_problems(out) == ["mine.zip (not listed)"]


def test_a_synthetic_sd19_in_folders_names_a_file_added_inside(tmp_path):
    from mnistforge.sd19.synth import SynthConfig, synthesize_sd19
    from mnistforge.sd19.synth.synthesize import synthetic_sd19_problems

    cfg = SynthConfig(scale=0.0005, edition=1, packaging="dir", fields="d", hierarchies=("by_write",),
                      workers=1)
    out = synthesize_sd19(tmp_path / "s", cfg, progress=False)
    assert synthetic_sd19_problems(out) == []
    hsf = sorted((out / "by_write").iterdir())[0]
    (hsf / "mine.txt").write_text("x")
    os.utime(hsf / "mine.txt", (2e9, 2e9))  # written after the description
    problems = synthetic_sd19_problems(out)
    assert any("by_write/" in p and "mine.txt" in p for p in problems), problems
    import dataclasses
    with pytest.raises(NotOwnedError):
        synthesize_sd19(out, dataclasses.replace(cfg, overwrite=True), progress=False)
    assert (hsf / "mine.txt").read_text() == "x"


def test_an_export_with_a_file_of_the_users_is_refused(tmp_path):
    import numpy as np

    from mnistforge.hub.export import ExportConfig, export_hf, export_problems

    cfg = ExportConfig("toy", {"test": (np.zeros((2, 28, 28), np.uint8), np.array([1, 0]))}, ["x", "y"])
    out = tmp_path / "repo"
    export_hf(out, [cfg], workers=1)
    assert export_problems(out) == []
    export_hf(out, [cfg], workers=1, overwrite=True)        # an untouched export: replaced
    (out / "data" / "my-notes.md").write_text("mine")
    with pytest.raises(NotOwnedError, match="data/my-notes.md"):
        export_hf(out, [cfg], workers=1, overwrite=True)
    assert (out / "data" / "my-notes.md").read_text() == "mine"
    # a card naming mnistforge but holding no record of shards is no export of ours
    other = tmp_path / "other"
    (other / "data").mkdir(parents=True)
    (other / "README.md").write_text("made with mnistforge, by hand\n")
    (other / "data" / "mine.parquet").write_bytes(b"x")
    assert export_problems(other) == ["README.md (no record of the shards mnistforge exported)"]


def test_demo_overwrite_never_deletes_a_folder_it_did_not_write(tmp_path):
    # before: `demo --out DIR --overwrite` removed DIR whatever it held
    out = tmp_path / "home"
    out.mkdir()
    (out / "photos").mkdir()
    (out / "photos" / "cat.jpg").write_bytes(b"\xff\xd8 cat")
    r = cli("demo", "--out", out, "--overwrite", "--scale", "0.002")
    assert r.returncode == 1, r.stderr
    assert "photos/ (not listed)" in r.stderr and "Traceback" not in r.stderr
    assert (out / "photos" / "cat.jpg").read_bytes() == b"\xff\xd8 cat"


# --------------------------------------------------------------------------- names of its own

def test_a_users_out_old_folder_is_never_removed(tmp_path, built, tiny_sd19):
    # before: the old output was moved to <out>.old, removing a folder of that name first
    out = _copy(built, tmp_path / "b")
    (tmp_path / "b.old").mkdir()
    (tmp_path / "b.old" / "precious").write_text("user data")
    r = cli("build", "mnist", "--sd19", tiny_sd19, "--out", out, "--overwrite", "--workers", "1")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "b.old" / "precious").read_text() == "user data"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "b.old"]


def _owned_folder(path, gen: int, files: int = 3):
    for i in range(files):
        (path / f"f{i}.txt").write_text(f"generation {gen}\n")
    Manifest(kind="test", parameters={"generation": gen}).write(path)


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_overwrite_replaces_through_names_it_made(tmp_path, monkeypatch, exchange):
    out = tmp_path / "o"
    out.mkdir()
    _owned_folder(out, 1)
    (tmp_path / "o.old").mkdir()
    (tmp_path / "o.old" / "keep").write_text("mine")
    if not exchange:
        monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    with atomic_dir(out, overwrite=True, owned=build_folder_problems) as tmp:
        _owned_folder(tmp, 2)
    assert (out / "f0.txt").read_text() == "generation 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o", "o.old"]
    assert (tmp_path / "o.old" / "keep").read_text() == "mine"


def test_the_old_output_comes_back_when_the_second_rename_fails(tmp_path, monkeypatch):
    out = tmp_path / "o"
    out.mkdir()
    _owned_folder(out, 1)
    monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    real = os.rename

    def failing(a, b):
        if str(b) == str(out):
            raise OSError(5, "Input/output error", str(b))
        return real(a, b)

    monkeypatch.setattr(atomic.os, "rename", failing)
    with pytest.raises(OSError):
        with atomic_dir(out, overwrite=True, owned=build_folder_problems) as tmp:
            _owned_folder(tmp, 2)
    assert (out / "f0.txt").read_text() == "generation 1\n"
    assert build_folder_problems(out) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


@pytest.fixture(params=[False, True], ids=["one-thread", "with-a-worker-thread"])
def worker_thread(request):
    """Optionally a second thread that does not block signals (a hashing or parquet thread):
    the kernel may then deliver a process-directed SIGINT to it instead of the main thread."""
    import threading

    if not request.param:
        yield
        return
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, daemon=True)
    t.start()
    yield
    stop.set()
    t.join()


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_ctrl_c_between_the_renames_waits_until_the_new_output_is_in_place(tmp_path, monkeypatch,
                                                                           exchange, worker_thread):
    out = tmp_path / "o"
    out.mkdir()
    _owned_folder(out, 1)
    real_exchange, real_replace = atomic._exchange, os.replace
    if not exchange:
        monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)

    def interrupted(fn):
        def step(a, b):
            done = fn(a, b)
            if str(a) == str(out) or str(b) == str(out):  # the swap's first step, not a file's
                os.kill(os.getpid(), signal.SIGINT)        # Ctrl-C right after it
            return done
        return step

    if exchange:
        monkeypatch.setattr(atomic, "_exchange", interrupted(real_exchange))
    else:
        monkeypatch.setattr(atomic.os, "replace", interrupted(real_replace))
    # another live thread (a pool's, say): a process-directed signal may land on it
    import threading
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            with atomic_dir(out, overwrite=True, owned=build_folder_problems) as tmp:
                _owned_folder(tmp, 2)
    finally:
        stop.set()
        other.join()
    monkeypatch.undo()
    assert (out / "f0.txt").read_text() == "generation 2\n" and build_folder_problems(out) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


def test_a_file_added_while_the_run_works_stops_the_replacement(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    _owned_folder(out, 1)
    with pytest.raises(NotOwnedError, match="late.txt"):
        with atomic_dir(out, overwrite=True, owned=build_folder_problems) as tmp:
            _owned_folder(tmp, 2)
            (out / "late.txt").write_text("written by the user during the build")
    assert (out / "late.txt").exists() and (out / "f0.txt").read_text() == "generation 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


# --------------------------------------------------------------------------- races, Ctrl-C, kill

# Overwrites `out` again and again (each generation whole), counting them in `count`.
LOOPER = textwrap.dedent("""
    import pathlib, sys
    sys.path.insert(0, {root!r})
    from mnistforge.io.atomic import atomic_dir
    from mnistforge.io.manifest import Manifest, build_folder_problems
    out, count = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    gen = 1
    while True:
        gen += 1
        with atomic_dir(out, overwrite=True, owned=build_folder_problems) as tmp:
            for i in range(20):
                (tmp / f"f{{i}}.txt").write_text(f"generation {{gen}}\\n" * 50)
            Manifest(kind="test", parameters={{"generation": gen}}).write(tmp)
        count.write_text(str(gen))
""")


def _whole(out) -> int:
    """The generation ``out`` holds, asserting it is one whole generation."""
    assert build_folder_problems(out) == [], sorted(p.name for p in out.iterdir())
    gen = Manifest.read(out).parameters["generation"]
    texts = {(out / f"f{i}.txt").read_text() for i in range(20)}
    assert texts == {f"generation {gen}\n" * 50}
    return gen


@pytest.mark.parametrize("sig,attempt", [(signal.SIGINT, 0), (signal.SIGINT, 1), (signal.SIGINT, 2),
                                         (signal.SIGKILL, 0), (signal.SIGKILL, 1)])
def test_ctrl_c_or_a_kill_during_overwrite_leaves_old_or_new_whole(tmp_path, sig, attempt):
    out, count = tmp_path / "o", tmp_path / "count"
    out.mkdir()
    _owned_folder(out, 1)
    proc = subprocess.Popen([sys.executable, "-c", LOOPER.format(root=str(ROOT)), str(out),
                             str(count)], stderr=subprocess.DEVNULL)
    try:
        while not count.exists() or int(count.read_text() or 0) < 3 + 4 * attempt:
            assert proc.poll() is None, "the overwriting process died"
            time.sleep(0.01)
        proc.send_signal(sig)
        # A Ctrl-C is, rarely (about 1 in 100-500 tries, only on a loaded machine, on Python
        # 3.11 and 3.13, whether the deferral swaps handlers or masks the signal), not seen by
        # the looping child at all: no KeyboardInterrupt, no pending signal, the handler in
        # place. Not found yet (issue noted); a user presses Ctrl-C again, and so does the
        # test: what it asserts is that the output stays whole, however the run ends.
        for _ in range(3):
            try:
                proc.wait(timeout=20)
                break
            except subprocess.TimeoutExpired:
                proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _whole(out) >= 2
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    assert set(leftovers) <= {"o", "count", "o.lock", "o.incomplete"}, leftovers
    # the next run cleans what a killed one left (or names it, never deletes a stranger)
    try:
        with atomic_dir(out, overwrite=True, owned=build_folder_problems) as tmp:
            _owned_folder(tmp, 100)
    except BuildError as e:
        assert "o.incomplete" in str(e) and sig == signal.SIGKILL
    else:
        assert (out / "f0.txt").read_text() == "generation 100\n"


@pytest.mark.parametrize("attempt", range(3))
def test_two_overwrites_at_once_leave_one_whole_build(tmp_path, built, tiny_sd19, attempt):
    out = _copy(built, tmp_path / "b")
    args = ("build", "mnist", "--sd19", tiny_sd19, "--out", out, "--overwrite", "--workers", "1")
    procs = [start_cli(*args), start_cli(*args)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    assert min(rc for rc, _ in results) == 0, results
    for rc, err in results:
        assert "Traceback" not in err
        assert rc == 0 or "another mnistforge run is writing" in err, err
    assert build_folder_problems(out) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]
    r = cli("verify", out, "--no-near")
    assert "hashes" in r.stdout and r.returncode == 0, r.stdout + r.stderr



def test_ctrl_c_right_after_the_temporary_folder_is_made_leaves_it_marked(tmp_path, monkeypatch):
    from pathlib import Path

    from mnistforge.io.outputs import INCOMPLETE_MARK

    out = tmp_path / "o"
    real_mkdir = Path.mkdir

    def mkdir_then_ctrl_c(self, *a, **kw):
        real_mkdir(self, *a, **kw)
        if self.name == "o.incomplete":
            os.kill(os.getpid(), signal.SIGINT)   # Ctrl-C before the mark is written

    monkeypatch.setattr(Path, "mkdir", mkdir_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        with atomic_dir(out) as tmp:
            _owned_folder(tmp, 1)
    monkeypatch.undo()
    left = tmp_path / "o.incomplete"
    assert not left.exists() or (left / INCOMPLETE_MARK).exists()   # never an unmarked folder
    with atomic_dir(out) as tmp:   # the next run removes what the interrupted one left
        _owned_folder(tmp, 2)
    assert (out / "f0.txt").read_text() == "generation 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]
