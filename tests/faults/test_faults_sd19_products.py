"""The images kept next to the SD19 index (issue 44, ``mnistforge/sd19/products.py``): damaged,
replaced or unwritable, they are made again, never served."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from mnistforge.builders.mnist_prepro import MnistPreproConfig
from mnistforge.builders.qmnist import QmnistBuildConfig, build_xnist, mnist_product
from mnistforge.sd19 import open_sd19

PRODUCT = mnist_product(MnistPreproConfig())


@pytest.fixture
def source(tmp_path, tiny_sd19):
    out = tmp_path / "sd19"
    shutil.copytree(tiny_sd19, out, ignore=shutil.ignore_patterns(".mnistforge"))
    return out


def kept(sd19):
    files = sorted((sd19 / ".mnistforge").glob("sd19-product-mnist-*.npy"))
    assert len(files) == 1
    return files[0]


def test_damage_that_keeps_size_and_mtime_is_made_again(source, caplog):
    clean = open_sd19(source, progress=False, products=[PRODUCT]).product(PRODUCT).copy()
    f = kept(source)
    st = f.stat()
    data = bytearray(f.read_bytes())
    data[-5] ^= 0xFF                       # one pixel of the last digit
    f.write_bytes(bytes(data))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    with caplog.at_level("WARNING", logger="mnistforge.sd19.products"):
        again = open_sd19(source, progress=False).product(PRODUCT)
    assert "does not match its record" in caplog.text and str(f) in caplog.text
    np.testing.assert_array_equal(again, clean)
    assert kept(source).read_bytes() != bytes(data)         # and kept again, whole


def test_a_truncated_or_foreign_file_is_made_again(source, caplog):
    clean = open_sd19(source, progress=False, products=[PRODUCT]).product(PRODUCT).copy()
    f = kept(source)
    f.write_bytes(f.read_bytes()[:200])
    with caplog.at_level("WARNING", logger="mnistforge.sd19.products"):
        np.testing.assert_array_equal(open_sd19(source, progress=False).product(PRODUCT), clean)
    assert "unreadable SD19 product" in caplog.text
    np.save(f, np.zeros_like(clean))       # a well-formed array, not the one recorded
    np.testing.assert_array_equal(open_sd19(source, progress=False).product(PRODUCT), clean)


def test_a_fifo_in_place_of_the_images_does_not_hang(source):
    clean = open_sd19(source, progress=False, products=[PRODUCT]).product(PRODUCT).copy()
    f = kept(source)
    f.unlink()
    os.mkfifo(f)
    src = open_sd19(source, progress=False)
    assert src.kept(PRODUCT) is None                       # not opened: a read would block
    np.testing.assert_array_equal(src.make([PRODUCT], np.flatnonzero(src.index["field"] == b"d"))[0], clean)


def test_an_unwritable_cache_still_builds_the_same_bytes(source, tmp_path, monkeypatch):
    # the source's .mnistforge is a file of the user's and so is MNISTFORGE_HOME's cache: nothing
    # can be kept, the builds still give the same bytes, and the user's files are untouched
    ref = tmp_path / "ref"
    build_xnist(source, ref, QmnistBuildConfig(progress=False, workers=1))
    shutil.rmtree(source / ".mnistforge")
    (source / ".mnistforge").write_text("mine")
    home = tmp_path / "home"
    home.mkdir()
    (home / "cache").write_text("not a folder")
    monkeypatch.setenv("MNISTFORGE_HOME", str(home))
    out = tmp_path / "x"
    build_xnist(source, out, QmnistBuildConfig(progress=False, workers=1))
    assert (source / ".mnistforge").read_text() == "mine" and (home / "cache").read_text() == "not a folder"
    for f in ref.iterdir():
        assert (out / f.name).read_bytes() == f.read_bytes(), f.name


def test_ctrl_c_in_the_pass_keeps_no_half_written_product(source):
    # the index pass writes each product part by part: interrupted, it leaves no file behind
    from mnistforge.sd19.products import Product

    calls = []

    def make(imgs):
        calls.append(len(imgs))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return np.zeros((len(imgs), 28, 28), np.uint8)

    with pytest.raises(KeyboardInterrupt):
        open_sd19(source, progress=False, workers=1, products=[Product("stop", make)])
    cache = source / ".mnistforge"
    assert len(calls) == 2
    assert not cache.exists() or not [p.name for p in cache.iterdir() if "stop" in p.name or p.suffix == ".tmp"]
    src = open_sd19(source, progress=False, workers=1, products=[PRODUCT])   # and a later pass works
    assert src.kept(PRODUCT) is not None
