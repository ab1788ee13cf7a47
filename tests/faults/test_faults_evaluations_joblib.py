"""Issue 46, the evaluations as joblib tasks: a worker killed mid-run is the named WorkerError
(not loky's raw TerminatedWorkerError), Ctrl-C ends the run and its workers, neither leaves an
output file; absurd worker counts are named.  Real processes and signals."""
from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
from faults_helpers import cli, start_cli

from mnistforge.errors import ConfigError, WorkerError
from mnistforge.evaluators.significance import compare_systems
from mnistforge.io.idx import write_idx
from mnistforge.io.workers import parallel_tasks

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to find the workers")


def test_a_task_that_kills_its_worker_is_a_named_error():
    with pytest.raises(WorkerError, match="(?s)worker process died while testing: .*run again"):
        list(parallel_tasks(os._exit, [(3,), (4,)], "testing", workers=2))


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "2"])
def test_absurd_worker_counts_are_named(bad):
    with pytest.raises(ConfigError, match="invalid number of workers: expected a whole number >= 1"):
        compare_systems({"A": [1, 0, 0], "B": [0, 1, 0]}, 10, workers=bad)


def test_a_numpy_integer_is_a_worker_count():
    assert compare_systems({"A": [1, 0, 0], "B": [0, 1, 0]}, 10, workers=np.int64(1)).poi.shape == (2, 2)


def test_the_cli_refuses_zero_workers(tmp_path):
    files = []
    for name, wrong in (("A", "1 2"), ("B", "3")):
        files.append(tmp_path / f"{name}.txt")
        files[-1].write_text(f"{name}, system {name}, {wrong}\n")
    r = cli("significance", *files, "--n", "10", "--workers", "0")
    assert r.returncode == 2 and "--workers" in r.stderr


def _bars(n, rng):
    X, y = np.zeros((n, 28, 28)), rng.integers(0, 2, n)
    for i in range(n):
        prof = np.exp(-((np.arange(28) - rng.uniform(10, 17)) / 2.0) ** 2)
        X[i] = np.outer(prof, np.ones(28)) if y[i] == 0 else np.outer(np.ones(28), prof)
    return (np.clip(X, 0, 1) * 255).astype(np.uint8), y.astype(np.uint8)


def _folder(tmp_path):
    d = tmp_path / "bars"
    d.mkdir()
    X, y = _bars(200, np.random.default_rng(0))
    for part, sl in (("train", slice(0, 100)), ("t10k", slice(100, None))):
        write_idx(d / f"{part}-images-idx3-ubyte.gz", X[sl])
        write_idx(d / f"{part}-labels-idx1-ubyte.gz", y[sl])
    return d


def _children(pid):
    """The loky workers of ``pid`` (its children started by loky's popen, not its resource tracker)."""
    out = []
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) != pid:
                    continue
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if b"popen_loky" in f.read():
                    out.append(int(p))
        except (OSError, ValueError, IndexError):
            continue
    return out


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _manitest_with_two_workers(tmp_path):
    """A Manitest run long enough to be interrupted (refined paths, 40 images), and its workers."""
    env = {"MNISTFORGE_TRUST_FILES": "1"}   # MNIST's file names, not its bytes
    out = tmp_path / "out"
    out.mkdir()
    proc = start_cli("manitest", _folder(tmp_path), "--classifier", "linear", "--group", "dilation-rotation",
                     "--samples", "40", "--workers", "2", "--json", out / "m.json", env=env)
    deadline = time.monotonic() + 120   # bounded waits, not timing assertions
    while len(workers := _children(proc.pid)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(workers) == 2, f"no two loky workers seen (exit {proc.poll()})"
    return proc, workers, out


@pytest.mark.parametrize("how", ["killed worker", "ctrl-c", "killed parent"])
def test_a_dead_worker_or_parent_or_ctrl_c_ends_the_run_and_its_workers_without_output(tmp_path, how):
    proc, workers, out = _manitest_with_two_workers(tmp_path)
    try:
        os.kill(*{"killed worker": (workers[0], signal.SIGKILL), "ctrl-c": (proc.pid, signal.SIGINT),
                  "killed parent": (proc.pid, signal.SIGKILL)}[how])
        # not communicate(): a worker left running would hold the pipes open
        proc.wait(timeout=120)
        err = proc.stderr.read() if how != "killed parent" else ""
    finally:
        proc.kill()
    if how == "killed worker":
        assert proc.returncode == 1, err
        assert "error: a worker process died while scoring Manitest" in err, err
        assert "Traceback" not in err and "TerminatedWorkerError" not in err, err
    elif how == "ctrl-c":
        assert proc.returncode == 130 and err.strip() == "interrupted", err
    assert list(out.iterdir()) == []   # no JSON, whole or partial, nor a temporary file
    deadline = time.monotonic() + 60
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(_alive, workers)), "a worker outlived the run"   # (the watchdog: after a second)
