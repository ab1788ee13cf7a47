"""Issue 46: Manitest, significance and the card as joblib tasks.  Run serially (the default),
under ``joblib.parallel_config(backend="loky", n_jobs=2)`` and on a Dask ``LocalCluster`` (when
the ``[dask]`` extra is installed), each writes, through the package's own JSON writer, the
serial run's bytes."""
from __future__ import annotations

import argparse

import joblib
import numpy as np
import pytest

from mnistforge.classifiers.base import make_classifier
from mnistforge.cli import main
from mnistforge.commands.common import write_json
from mnistforge.commands.manitest import _jsonable
from mnistforge.evaluators.errorlists import write_predictions
from mnistforge.evaluators.manitest import manitest
from mnistforge.io.idx import write_idx

N = 300   # test rows
DASK_EXTRA = "needs the dask extra: pip install mnistforge[dask]"


def _bars(n, rng):
    """Horizontal (0) or vertical (1) blurred bars: a linear classifier tells them apart and a
    rotation flips its label."""
    X, y = np.zeros((n, 28, 28)), rng.integers(0, 2, n)
    for i in range(n):
        prof = np.exp(-((np.arange(28) - rng.uniform(10, 17)) / rng.uniform(1.5, 3.0)) ** 2)
        X[i] = np.outer(prof, np.ones(28)) if y[i] == 0 else np.outer(np.ones(28), prof)
    X[:, :4] = X[:, -4:] = X[:, :, :4] = X[:, :, -4:] = 0
    return np.clip(X + rng.normal(0, 0.05, X.shape), 0, 1), y


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A test folder of ``N`` rows, four prediction files on it, and a Manitest classifier."""
    rng = np.random.default_rng(46)
    d = tmp_path_factory.mktemp("joblib")
    folder = d / "digits"
    folder.mkdir()
    y = rng.integers(0, 10, N)
    write_idx(folder / "t10k-images-idx3-ubyte.gz", rng.integers(0, 256, (N, 28, 28), dtype=np.uint8))
    write_idx(folder / "t10k-labels-idx1-ubyte.gz", y.astype(np.uint8))
    files = []
    for k, rate in enumerate((0.05, 0.08, 0.08, 0.12)):
        pred = np.where(rng.random(N) < rate, (y + 1 + rng.integers(0, 9, N)) % 10, y)
        files.append(d / f"sys{k}.tsv")
        write_predictions(files[-1], pred, y, name=f"sys{k}")
    np.save(d / "groups.npy", rng.integers(0, 30, N))   # 30 writers, say
    X, yb = _bars(40, rng)
    return {"folder": folder, "files": [str(f) for f in files], "images": X,
            "clf": make_classifier("linear").fit(X, yb), "dir": d}


def _run_all(inputs, mode, monkeypatch, workers=None) -> dict[str, bytes]:
    """The JSON bytes of a Manitest run, 4-system significance runs and two cards (``workers``:
    the argument and the commands' ``--workers``; None: leave them out)."""
    monkeypatch.setenv("MNISTFORGE_TRUST_FILES", "1")   # a folder of MNIST's names, not its bytes
    out = inputs["dir"] / mode
    out.mkdir()
    # refine=False: the straight path only (the refinement costs a second an image here)
    res = manitest(inputs["images"], inputs["clf"], "dilation-rotation", samples=5, seed=3, cap=400, refine=False,
                   workers=workers)
    flag = [] if workers is None else ["--workers", str(workers)]
    write_json(argparse.Namespace(json=out / "manitest.json"), res.to_json(), default=_jsonable)
    files, test = inputs["files"], f"{inputs['folder']}:test"
    assert main(["significance", *files, "--bootstrap", "3000", "--seed", "5",
                 "--json", str(out / "significance.json"), *flag]) == 0
    # the clustered pairs and the several-runs pairs (two systems of two runs each)
    assert main(["significance", *files, "--bootstrap", "1000", "--groups", str(inputs["dir"] / "groups.npy"),
                 "--runs", "2", "2", "--json", str(out / "significance-runs.json"), *flag]) == 0
    for k, first in enumerate(files[:2]):   # two cards: each of two systems against the others
        others = [f for f in files if f != first]
        assert main(["card", first, *others, "--test", test, "--out", str(out / f"card{k}"),
                     "--bootstrap", "2000", "--seed", "7", "--json", str(out / f"card{k}.json"), *flag]) == 0
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.json"))}


@pytest.fixture(scope="module")
def serial(inputs):
    with pytest.MonkeyPatch.context() as mp:
        return _run_all(inputs, "serial", mp)


def test_serial_runs_are_what_they_say(serial):
    assert sorted(serial) == ["card0.json", "card1.json", "manitest.json", "significance-runs.json",
                              "significance.json"]
    assert b'"pairs"' in serial["significance.json"] and b'"poi"' in serial["card0.json"]
    runs = serial["significance-runs.json"]
    assert b'"design_effect"' in runs and b'"runs_needed"' in runs
    assert serial["card0.json"] != serial["card1.json"]    # two different cards


def test_loky_gives_the_serial_json(inputs, serial, monkeypatch):
    with joblib.parallel_config(backend="loky", n_jobs=2):
        got = _run_all(inputs, "loky", monkeypatch)
    assert got == serial


def test_two_workers_give_the_serial_json(inputs, serial, monkeypatch):
    assert _run_all(inputs, "workers2", monkeypatch, workers=2) == serial


@pytest.fixture(scope="module")
def dask_client():
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        pytest.skip(DASK_EXTRA)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield client


def test_a_dask_cluster_gives_the_serial_json(inputs, serial, dask_client, monkeypatch):
    from dask.distributed import get_task_stream

    with get_task_stream(dask_client) as tasks, joblib.parallel_config(backend="dask"):
        got = _run_all(inputs, "dask", monkeypatch)
    assert got == serial
    assert tasks.data, "no task ran on the cluster"   # the work went there, not to this process


def test_a_bad_worker_count_is_named():
    from mnistforge.errors import ConfigError

    for bad in (0, -2, 1.5, True):
        with pytest.raises(ConfigError, match="invalid number of workers"):
            manitest(np.zeros((2, 28, 28)), lambda x: np.zeros(len(x), int), "rotation", workers=bad)

