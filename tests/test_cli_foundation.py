"""mnistforge info / fetch / show, run in-process, and the grid drawing."""
from __future__ import annotations

import hashlib
import shutil

import numpy as np
import pytest
from PIL import Image

from mnistforge.cli import main
from mnistforge.io.idx import write_idx
from mnistforge.io.manifest import Manifest
from mnistforge.plotting import render_grid, save_grid
from mnistforge.registry import list_datasets



@pytest.fixture
def mnist_cache(cache, mnist_reference):
    (cache / "mnist").mkdir(parents=True)
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(mnist_reference / f, cache / "mnist" / f)
    return cache


@pytest.fixture
def built(tmp_path):
    d = tmp_path / "built"
    rng = np.random.default_rng(3)
    for part, n in (("train", 9), ("test", 7)):
        imgs = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        write_idx(d / f"emnist-digits-{part}-images-idx3-ubyte.gz", imgs)
        write_idx(d / f"emnist-digits-{part}-labels-idx1-ubyte.gz", (np.arange(n) % 10).astype(np.uint8))
    Manifest(kind="emnist").write(d)  # a build folder: loads check the files against it
    return d


def test_info_lists_everything(cache, capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for name in list_datasets():
        assert f"\n{name} " in out
    assert "sd19" in out and "hashes NOT pinned" in out and "402,953" in out
    assert str(cache) in out


def test_info_dataset_details(cache, capsys):
    assert main(["info", "emnist-letters"]) == 0
    out = capsys.readouterr().out
    assert "'N/A (unused)' A B" in out and "labels from 1" in out
    assert "validation" in out and "last 20,800 rows of train" in out
    assert "gzip.zip" in out and "cache: missing" in out and "transposed" in out
    assert main(["info", "sd19"]) == 0
    out = capsys.readouterr().out
    assert "by_write.zip" in out and "hashes: not pinned" in out


def test_info_unknown_is_usage_error(cache, capsys):
    assert main(["info", "mnits"]) == 2
    assert "unknown dataset 'mnits'" in capsys.readouterr().err


def test_info_shows_cache_status(mnist_cache, capsys):
    assert main(["info", "mnist"]) == 0
    out = capsys.readouterr().out
    assert "present, not verified yet" in out  # nothing hashed by info
    assert main(["fetch", "mnist/t10k-labels-idx1-ubyte.gz"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok") and "content matches" in out
    main(["info", "mnist"])
    out = capsys.readouterr().out
    assert "verified (content matches" in out and "train-images-idx3-ubyte.gz" in out


def test_info_folder(built, capsys):
    assert main(["info", str(built)]) == 0
    out = capsys.readouterr().out
    assert "emnist-digits" in out and "validation" in out and "9" in out


def test_fetch_offline_reports_missing_and_fails(mnist_cache, capsys):
    assert main(["fetch", "mnist"]) == 3  # a needed resource is unavailable (offline)
    cap = capsys.readouterr()
    assert "2 of 4 files in the cache, 2 failed" in cap.out
    assert str(mnist_cache / "mnist" / "train-images-idx3-ubyte.gz") in cap.err
    assert "ossci-datasets" in cap.err


def test_fetch_reports_unpinned_sd19(cache, capsys):
    (cache / "sd19").mkdir(parents=True)
    data = b"stand-in for by_class.zip"
    (cache / "sd19" / "by_class.zip").write_bytes(data)
    assert main(["fetch", "sd19/by_class.zip"]) == 0
    out = capsys.readouterr().out
    assert "UNVERIFIED" in out and hashlib.sha256(data).hexdigest() in out
    assert "1 not verifiable" in out
    assert main(["fetch", "sd19"]) == 3  # the four other zips are missing (offline)


def test_fetch_unknown_is_usage_error(cache, capsys):
    assert main(["fetch", "nope"]) == 2
    assert "unknown dataset or file 'nope'" in capsys.readouterr().err


def test_show_writes_a_labelled_grid(mnist_cache, tmp_path, capsys):
    out = tmp_path / "g.png"
    assert main(["show", "mnist", "test", "--out", str(out), "-n", "6", "--cols", "3",
                 "--scale", "2"]) == 0
    assert "mnist test" in capsys.readouterr().out
    img = Image.open(out)
    assert img.mode == "L"
    again = tmp_path / "g2.png"
    main(["show", "mnist:test", "--out", str(again), "-n", "6", "--cols", "3", "--scale", "2"])
    assert out.read_bytes() == again.read_bytes()  # reproducible
    main(["show", "mnist:test", "--out", str(again), "-n", "6", "--cols", "3", "--scale", "2",
          "--seed", "1"])
    # same grid; the canvas widens for a longer title rather than cutting it
    assert out.read_bytes() != again.read_bytes() and Image.open(again).size[1] == img.size[1]


def test_show_folder_and_errors(built, tmp_path, capsys):
    out = tmp_path / "b.png"
    assert main(["show", f"{built}:validation", "--out", str(out)]) == 0
    assert "emnist-digits validation" in capsys.readouterr().out and out.is_file()
    assert main(["show", "mnist:test", "train", "--out", str(out)]) == 2
    assert main(["show", "mnist", "nosuch", "--out", str(out)]) == 2
    assert main(["show", str(built), "--out", str(out), "-n", "0"]) == 2


def test_grid_places_each_image_under_its_caption(tmp_path):
    imgs = np.zeros((3, 28, 28), np.uint8)
    imgs[1] = 255  # one all-ink tile
    grid = np.asarray(render_grid(imgs, [0, 1, 2], ["zero", "one", "two"], cols=3, scale=1,
                                  invert=False))
    ink = np.argwhere(grid == 255)
    (r0, c0), (r1, c1) = ink.min(0), ink.max(0)
    assert (r1 - r0 + 1, c1 - c0 + 1) == (28, 28)  # exactly the one white tile
    assert c0 > grid.shape[1] // 3 - 28 and c1 < 2 * grid.shape[1] // 3 + 28
    assert (grid[:r0] < 255).all()  # the caption sits above the tile
    p = save_grid(imgs, [0, 1, 2], ["zero", "one", "two"], tmp_path / "x.png", cols=3, scale=1)
    np.testing.assert_array_equal(np.asarray(Image.open(p)), grid)
