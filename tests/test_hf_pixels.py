"""export hf --pixels bytes|array: a raw uint8 column next to the PNGs, read by plain `datasets`
without decoding."""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from mnistforge.errors import CheckFailed, ConfigError, FormatError
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


@pytest.mark.parametrize("layout", ["bytes", "array"])
def test_pixels_column_round_trips_and_keeps_the_png_column(tmp_path, layout):
    repo, images, labels, meta = export(tmp_path, layout)
    table = pq.read_table(next((repo / "data" / "toy").glob("*.parquet")))
    assert table.column_names[:3] == ["image", "label", PIXELS]
    assert str(table.schema.field(PIXELS).type).startswith("binary" if layout == "bytes" else "extension")
    got, got_labels, classes, got_meta = load_hf_split(repo, "toy", "train")
    np.testing.assert_array_equal(got, images)
    np.testing.assert_array_equal(got_labels, labels)
    assert list(got_meta.dtype.names) == ["writer_id"]   # pixels is not metadata; writer's Hub name
    np.testing.assert_array_equal(got_meta["writer_id"], meta["writer"])


@pytest.mark.parametrize("layout", ["bytes", "array"])
def test_plain_datasets_user_gets_uint8_arrays(tmp_path, layout):
    datasets = pytest.importorskip("datasets")
    repo, images, labels, _ = export(tmp_path, layout)
    ds = datasets.load_dataset(str(repo), "toy", split="train", cache_dir=str(tmp_path / "cache"))
    np.testing.assert_array_equal(np.asarray(ds[5]["image"]), images[5])   # the viewer's column
    # the card's recipe: only the pixels and the labels, no PNG column in datasets' cache
    ds = datasets.load_dataset(str(repo), "toy", split="train", columns=[PIXELS, "label"],
                               cache_dir=str(tmp_path / "cache"))
    assert list(ds.features) == ["label", PIXELS] or list(ds.features) == [PIXELS, "label"]
    if layout == "bytes":
        arr = ds.with_format("numpy", columns=[PIXELS])[:][PIXELS].view("uint8").reshape(-1, 28, 28)
    else:
        arr = ds.with_format("numpy", columns=[PIXELS], dtype="uint8")[:][PIXELS]
    assert arr.dtype == np.uint8 and arr.shape == images.shape
    np.testing.assert_array_equal(arr, images)
    np.testing.assert_array_equal(ds.with_format("numpy", columns=["label"])[:]["label"], labels)
    card = (repo / "README.md").read_text()
    assert f'columns=["{PIXELS}", "label"]' in card and ('.view("uint8")' in card) == (layout == "bytes")


def test_bytes_pixels_survive_zero_corners(tmp_path):
    """numpy's fixed-width bytes keep trailing zero bytes in the buffer: the view is exact."""
    datasets = pytest.importorskip("datasets")
    images, labels, meta = toy(n=50)
    images[:, -3:, :] = 0                          # every image ends in zero bytes
    cfg = ExportConfig("toy", {"train": SplitData(images, labels, meta)}, [str(i) for i in range(10)])
    export_hf(tmp_path / "r", [cfg], workers=1, pixels="bytes")
    ds = datasets.load_dataset(str(tmp_path / "r"), "toy", split="train", columns=[PIXELS],
                               cache_dir=str(tmp_path / "cache"))
    arr = ds.with_format("numpy", columns=[PIXELS])[:][PIXELS].view("uint8").reshape(-1, 28, 28)
    np.testing.assert_array_equal(arr, images)


@pytest.mark.parametrize("layout", ["bytes", "array"])
def test_pixels_exports_are_byte_identical(tmp_path, layout):
    a, *_ = export(tmp_path, layout, "a")
    b, *_ = export(tmp_path, layout, "b")
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files and all((a / f).read_bytes() == (b / f).read_bytes() for f in files)


def test_bytes_pixels_column_is_plain_and_the_rest_keeps_its_encoding(tmp_path):
    with_px, *_ = export(tmp_path, "bytes", "px")
    plain, *_ = export(tmp_path, None, "plain")
    shard = next((with_px / "data" / "toy").glob("*.parquet"))
    meta = pq.ParquetFile(shard).metadata
    enc = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i).encodings
           for i in range(meta.num_columns)}
    assert "RLE_DICTIONARY" not in enc[PIXELS] and "RLE_DICTIONARY" in enc["label"]
    # image, label, writer_id: the same values as without the column
    t_px, t_plain = pq.read_table(shard), pq.read_table(next((plain / "data" / "toy").glob("*.parquet")))
    assert t_px.drop_columns([PIXELS]).equals(t_plain)


def test_unknown_pixels_layout_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="pixels layout"):
        export(tmp_path, True)


def test_bytes_pixels_of_the_wrong_length_are_a_format_error(tmp_path):
    import pyarrow as pa

    from mnistforge.io.hf.repo import pixels_of
    repo, images, _, _ = export(tmp_path, "bytes")
    table = pq.read_table(next((repo / "data" / "toy").glob("*.parquet")))
    i = table.column_names.index(PIXELS)
    short = pa.array([bytes(images[k].tobytes()[:-1]) for k in range(len(images))], pa.binary())
    with pytest.raises(FormatError, match="one H x W image per row"):
        pixels_of(table.set_column(i, table.schema.field(i), short))
    np.testing.assert_array_equal(pixels_of(table.slice(7, 5)), images[7:12])   # sliced: offsets honoured


def test_without_pixels_the_export_is_unchanged(tmp_path):
    a, *_ = export(tmp_path, None, "a")
    b, *_ = export(tmp_path, None, "b")
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    table = pq.read_table(next((a / "data" / "toy").glob("*.parquet")))
    assert PIXELS not in table.column_names


@pytest.mark.parametrize("layout", ["bytes", "array"])
def test_verify_finds_pixels_that_disagree_with_the_pngs(tmp_path, layout):
    repo, images, _, _ = export(tmp_path, layout)
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


def test_non_square_bytes_pixels_pass_every_check(tmp_path):
    """The byte layout has no shape of its own: readers take H x W from the PNG header."""
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, (40, 20, 32), dtype=np.uint8)
    labels = rng.integers(0, 3, 40)
    cfg = ExportConfig("wide", {"test": SplitData(images, labels)}, ["a", "b", "c"])
    export_hf(tmp_path / "r", [cfg], workers=1, pixels="bytes")
    assert verify_repo(tmp_path / "r") == {"wide": {"test": 40}}     # load_dataset included
    np.testing.assert_array_equal(load_hf_split(tmp_path / "r", "wide", "test")[0], images)
    assert "reshape(-1, 20, 32)" in (tmp_path / "r" / "README.md").read_text()


def test_cli_pixels_flag(tmp_path, monkeypatch):
    from mnistforge.cli import main
    from mnistforge.io.idx import write_idx

    monkeypatch.setenv("MNISTFORGE_TRUST_FILES", "1")   # toy data under MNIST's official names
    images, labels, _ = toy(n=60)
    folder = tmp_path / "official"
    folder.mkdir()
    write_idx(folder / "t10k-images-idx3-ubyte.gz", images)
    write_idx(folder / "t10k-labels-idx1-ubyte.gz", labels.astype(np.uint8))
    assert main(["export", "hf", f"{folder}:test", "--out", str(tmp_path / "r"), "--workers", "1",
                 "--pixels", "bytes", "--no-croissant"]) == 0
    table = pq.read_table(next((tmp_path / "r" / "data" / "mnist").glob("*.parquet")))
    assert table.schema.field(PIXELS).type == "binary"
    assert main(["export", "hf", f"{folder}:test", "--out", str(tmp_path / "r2"),
                 "--pixels", "nope"]) == 2
