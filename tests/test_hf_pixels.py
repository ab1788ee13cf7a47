"""export hf --pixels: a raw uint8 column next to the PNGs, read by plain `datasets` without decoding."""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from mnistforge.errors import CheckFailed
from mnistforge.hub import ExportConfig, SplitData, export_hf, load_hf_split, verify_repo
from mnistforge.io.hf.schema import PIXELS


def toy(n=300, seed=0):
    rng = np.random.default_rng(seed)
    images = (rng.random((n, 28, 28)) ** 4 * 255).astype(np.uint8)
    labels = rng.integers(0, 10, n)
    meta = np.zeros(n, dtype=[("writer", "i4")])
    meta["writer"] = rng.integers(0, 50, n)
    return images, labels, meta


def export(tmp_path, pixels, name="r"):
    images, labels, meta = toy()
    cfg = ExportConfig("toy", {"train": SplitData(images, labels, meta)}, [str(i) for i in range(10)])
    export_hf(tmp_path / name, [cfg], workers=1, pixels=pixels)
    return tmp_path / name, images, labels, meta


def test_pixels_column_round_trips_and_keeps_the_png_column(tmp_path):
    repo, images, labels, meta = export(tmp_path, True)
    table = pq.read_table(next((repo / "data" / "toy").glob("*.parquet")))
    assert table.column_names[:3] == ["image", "label", PIXELS]
    got, got_labels, classes, got_meta = load_hf_split(repo, "toy", "train")
    np.testing.assert_array_equal(got, images)
    np.testing.assert_array_equal(got_labels, labels)
    assert list(got_meta.dtype.names) == ["writer"]          # pixels is not metadata
    np.testing.assert_array_equal(got_meta["writer"], meta["writer"])


def test_plain_datasets_user_gets_uint8_arrays(tmp_path):
    datasets = pytest.importorskip("datasets")
    repo, images, _, _ = export(tmp_path, True)
    ds = datasets.load_dataset(str(repo), "toy", split="train", cache_dir=str(tmp_path / "cache"))
    arr = ds.with_format("numpy", columns=[PIXELS], dtype="uint8")[:][PIXELS]
    assert arr.dtype == np.uint8 and arr.shape == images.shape
    np.testing.assert_array_equal(arr, images)
    np.testing.assert_array_equal(np.asarray(ds[5]["image"]), images[5])   # the viewer's column


def test_without_pixels_the_export_is_unchanged(tmp_path):
    a, *_ = export(tmp_path, False, "a")
    b, *_ = export(tmp_path, False, "b")
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    table = pq.read_table(next((a / "data" / "toy").glob("*.parquet")))
    assert PIXELS not in table.column_names


def test_verify_finds_pixels_that_disagree_with_the_pngs(tmp_path):
    repo, images, _, _ = export(tmp_path, True)
    verify_repo(repo, with_datasets=False)
    shard = next((repo / "data" / "toy").glob("*.parquet"))
    table = pq.read_table(shard)
    from mnistforge.io.hf.parquet import _pixels
    changed = images.copy()
    changed[7, 10, 10] ^= 0xFF
    i = table.column_names.index(PIXELS)
    table = table.set_column(i, table.schema.field(i), _pixels(table.schema.field(i), changed))
    pq.write_table(table, shard)
    with pytest.raises(CheckFailed):          # the shard no longer has its recorded hash
        verify_repo(repo, with_datasets=False)
    # and, shard hashes aside, the two columns are compared image by image
    from mnistforge.hub.check import _pixels_agree
    decoded_pngs = load_hf_split(repo, "toy", "train")[0]
    assert decoded_pngs[7, 10, 10] == changed[7, 10, 10]       # read_split serves the pixels column
    assert _pixels_agree(repo, "toy", "train", decoded_pngs) == [
        "toy/train: the image and pixels columns disagree at 1 rows (first 7)"]
