"""Third-party copies: each format built here from real data (MNIST test set, Debian's Fashion-MNIST)
and from built synthetic EMNIST letters, in seven variants, and the exact verdict asserted for each.

Variants (of arrays as the official files store them): exact; reordered; transposed; labels
shifted by one; float-scaled to [0, 1]; inverted; three images altered.  Formats: Keras .npz,
.npy pair, CSV, torchvision ``root/<Name>/raw``, Hugging Face parquet (PNG), MATLAB .mat.
Pickle-based files are refused without being unpickled.
"""
from __future__ import annotations

import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.io

import mnistforge
from mnistforge.checks import verify
from mnistforge.checks.foreign import identify_copy
from mnistforge.cli import main
from mnistforge.errors import FormatError, UnsafeFormatError
from mnistforge.io.foreign import read_foreign, sniff
from mnistforge.io.idx import read_idx, write_idx
from mnistforge.registry import get_dataset

FASHION = Path("/usr/share/datasets/fashion-mnist")  # Debian's dataset-fashion-mnist

VARIANTS = ("exact", "reordered", "transposed", "shifted", "float", "inverted", "altered")
FORMATS = ("npz", "npy", "csv", "torchvision", "parquet", "mat")


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")  # tests never download


# --------------------------------------------------------------------------- data

def _pair(folder: Path, images: str, labels: str):
    return np.asarray(read_idx(folder / images)), np.asarray(read_idx(folder / labels))


@pytest.fixture(scope="module")
def mnist_test(mnist_reference):
    return _pair(mnist_reference, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


@pytest.fixture(scope="module")
def fashion_test():
    if not (FASHION / "t10k-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"Debian's Fashion-MNIST not found at {FASHION} (apt install dataset-fashion-mnist)")
    return _pair(FASHION, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


@pytest.fixture(scope="module")
def letters(tmp_path_factory):
    """Synthetic EMNIST letters built from a tiny synthetic SD19: (folder, test images as stored, labels)."""
    from sd19_helpers import make_tiny_sd19
    from mnistforge.builders.emnist import build_emnist

    sd19 = make_tiny_sd19(tmp_path_factory.mktemp("sd19"), scale=0.003)
    out = tmp_path_factory.mktemp("letters") / "emnist"
    build_emnist(sd19, out, splits=["letters"], seed=7, workers=1)
    x, y = _pair(out, "emnist-letters-test-images-idx3-ubyte.gz",
                 "emnist-letters-test-labels-idx1-ubyte.gz")
    assert y.min() == 1 and len(y) >= 20  # official numbering 1..26, enough images to alter three
    return out, x, y


ALTERED = (2, 17, -3)


def variant(kind: str, x: np.ndarray, y: np.ndarray):
    """(images, labels) of one variant of arrays as the official files store them."""
    if kind == "exact":
        return x, y
    if kind == "reordered":
        p = np.random.default_rng(1).permutation(len(y))
        return x[p], y[p]
    if kind == "transposed":
        return np.ascontiguousarray(x.transpose(0, 2, 1)), y
    if kind == "shifted":  # letters 1..26 -> 0..25; digits 0..9 -> 1..10
        return x, (y - 1 if y.min() >= 1 else y + 1)
    if kind == "float":
        return (x / np.float32(255)).astype(np.float32), y
    if kind == "inverted":
        return 255 - x, y
    if kind == "altered":
        x = x.copy()
        for i in ALTERED:
            x[i, 8:20, 8:20] = 255 - x[i, 8:20, 8:20]
        return x, y
    raise AssertionError(kind)


def altered_indices(n: int) -> list[int]:
    return sorted(i % n for i in ALTERED)


# --------------------------------------------------------------------------- writers

def write_copy(fmt: str, folder: Path, x: np.ndarray, y: np.ndarray, *, split: str = "test",
               name: str = "mnist", header: bool = True) -> Path:
    """Write (x, y) in a third-party format the way its tools do; return the path to verify."""
    folder.mkdir(parents=True, exist_ok=True)
    if fmt == "npz":
        p = folder / f"{name}.npz"
        np.savez_compressed(p, **{f"x_{split}": x, f"y_{split}": y})
        return p
    if fmt == "npy":
        np.save(folder / f"x_{split}.npy", x)
        np.save(folder / f"y_{split}.npy", y)
        return folder / f"x_{split}.npy"
    if fmt == "csv":
        p = folder / f"{name}_{split}.csv"
        import pyarrow as pa
        import pyarrow.csv as pcsv

        flat = x.reshape(len(x), -1)
        cols = {"label": pa.array(y.astype(np.int64))}
        cols.update({f"{i // 28 + 1}x{i % 28 + 1}": pa.array(flat[:, i]) for i in range(784)})
        pcsv.write_csv(pa.table(cols), p, pcsv.WriteOptions(include_header=header))
        return p
    if fmt == "torchvision":
        tv = {"mnist": "MNIST", "fashion-mnist": "FashionMNIST"}.get(name, "EMNIST")
        raw = folder / "root" / tv / "raw"
        raw.mkdir(parents=True)
        prefix = "t10k" if split == "test" and tv != "EMNIST" else f"{name}-{split}" \
            if tv == "EMNIST" else split
        write_idx(raw / f"{prefix}-images-idx3-ubyte.gz", x)  # float32 when float-scaled
        write_idx(raw / f"{prefix}-labels-idx1-ubyte", y.astype(np.uint8))
        return folder / "root"
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq
        from mnistforge.io.hf.png import encode_pngs

        data, off = encode_pngs(np.ascontiguousarray(x), workers=1)
        images = pa.array([{"bytes": data[off[i]:off[i + 1]], "path": None} for i in range(len(y))])
        d = folder / "snapshot" / name
        d.mkdir(parents=True)
        pq.write_table(pa.table({"image": images, "label": pa.array(y.astype(np.int64))}),
                       d / f"{split}-00000-of-00001.parquet")
        return folder / "snapshot"
    if fmt == "mat":
        p = folder / f"{name}.mat"
        part = {"images": x.reshape(len(x), -1), "labels": y.reshape(-1, 1).astype(np.float64),
                "writers": (np.arange(len(y)) % 7 + 100).reshape(-1, 1)}
        scipy.io.savemat(p, {"dataset": {split: part, "mapping": np.array([[1, 65]])}},
                         do_compression=True)
        return p
    raise AssertionError(fmt)


def expected(kind: str, y: np.ndarray) -> tuple[str, list[str]]:
    """(verdict, change kinds) a variant must get."""
    shift = "labels+1" if y.min() >= 1 else "labels-1"  # what turns the copy's labels back
    return {"exact": ("identical", []), "reordered": ("reordered", []),
            "transposed": ("transformed", ["transposed"]), "shifted": ("transformed", [shift]),
            "float": ("transformed", ["float01"]), "inverted": ("transformed", ["inverted"]),
            "altered": ("differs", [])}[kind]


def answer(path, **kw):
    _, loaded, idents, _ = identify_copy(path, **kw)
    assert len(idents) == 1
    return idents[0], next(iter(loaded.values()))


def _assert_verdict(ident, ds, kind, x, y, dataset, split, official_upright):
    verdict, kinds = expected(kind, y)
    assert ident.verdict == verdict, ident.message()
    assert (ident.dataset, ident.split) == (dataset, split)
    assert [c.kind for c in ident.changes] == kinds, ident.message()
    if kind == "altered":
        assert ident.images_differ == 3 and ident.labels_differ == 0, ident.message()
        assert ident.first_images == altered_indices(len(y))
        assert "3 images differ" in ident.message()
    elif kind != "reordered":  # undone exactly: the official arrays, upright
        assert np.array_equal(ds.images, official_upright)
        assert np.array_equal(ds.labels, y)
    else:
        assert ident.order == "other"


# --------------------------------------------------------------------------- real MNIST test set

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", VARIANTS)
def test_real_mnist_test_every_format_and_variant(fmt, kind, mnist_test, mnist_reference, tmp_path):
    x, y = mnist_test
    if fmt == "parquet" and kind == "float":
        pytest.skip("PNG holds bytes: a float-scaled parquet copy cannot exist")
    vx, vy = variant(kind, x, y)
    path = write_copy(fmt, tmp_path, vx, vy)
    # the altered copy needs the official images to count what differs
    ref = f"{mnist_reference}:mnist:test" if kind == "altered" else None
    ident, ds = answer(path, reference=ref)
    _assert_verdict(ident, ds, kind, x, y, "mnist", "test", x)
    how = {"exact": "registry content hashes", "reordered": "registry order-free hash"}.get(kind)
    if how:
        assert ident.matched_by == how


def test_altered_mnist_without_a_reference_still_says_what_matches(mnist_test, tmp_path):
    x, y = mnist_test
    path = write_copy("npz", tmp_path, *variant("altered", x, y))
    ident, _ = answer(path)
    assert ident.verdict == "differs" and (ident.dataset, ident.split) == ("mnist", "test")
    assert ident.labels_differ == 0 and ident.images_differ is None
    assert "images differ (how many needs a reference" in ident.message()


def test_altered_mnist_compared_with_the_official_files_in_the_cache(mnist_test, mnist_reference,
                                                                    tmp_path, monkeypatch):
    import shutil

    home = tmp_path / "home"
    (home / "mnist").mkdir(parents=True)
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(mnist_reference / f, home / "mnist" / f)
    monkeypatch.setenv("MNISTFORGE_HOME", str(home))
    x, y = mnist_test
    path = write_copy("npz", tmp_path / "copy", *variant("altered", x, y))
    ident, _ = answer(path)
    assert ident.verdict == "differs" and ident.images_differ == 3 and ident.labels_differ == 0
    assert ident.first_images == altered_indices(len(y))
    assert ident.matched_by == "compared image by image with the official files in the cache"


def test_reordered_and_altered_with_reference_lists_the_copys_indices(mnist_test, mnist_reference,
                                                                       tmp_path):
    x, y = mnist_test
    ax, ay = variant("altered", x, y)
    p = np.random.default_rng(3).permutation(len(y))
    path = write_copy("npz", tmp_path, ax[p], ay[p])
    ident, _ = answer(path, reference=f"{mnist_reference}:mnist:test")
    assert ident.verdict == "differs" and ident.order == "other"
    assert ident.images_differ == 3 and ident.labels_differ == 0
    inv = np.argsort(p)
    assert ident.first_images == sorted(int(inv[i % len(y)]) for i in ALTERED)


def test_a_subset_is_not_called_reordered(mnist_test, mnist_reference, tmp_path):
    x, y = mnist_test
    path = write_copy("npz", tmp_path, x[:100], y[:100])
    ident, _ = answer(path, reference=f"{mnist_reference}:mnist:test")
    # a subset (issue 29): every row is an official row, fewer than the split holds
    assert (ident.verdict, ident.images_differ, ident.labels_differ) == ("subset", 0, 0)
    assert ident.missing == len(set(map(bytes, x.reshape(len(x), -1)))) - 100
    assert ident.message().startswith("a subset of mnist test: 100 official rows")
    assert ident.row_map.official_index.tolist() == list(range(100))


def test_real_train_labels_with_images_the_registry_cannot_check(mnist_test, mnist_reference,
                                                                 tmp_path):
    x, _ = mnist_test
    train_labels = np.asarray(read_idx(mnist_reference / "train-labels-idx1-ubyte.gz"))
    path = tmp_path / "mnist.npz"  # the registry pins MNIST's train labels by content, not its images
    np.savez(path, x_train=np.tile(x, (6, 1, 1)), y_train=train_labels)
    ident, _ = answer(path)
    assert (ident.verdict, ident.dataset, ident.split) == ("unknown", "mnist", "train")
    assert ident.note.startswith("labels identical to mnist train; its images cannot be checked")


# --------------------------------------------------------------------------- Debian's Fashion-MNIST

@pytest.mark.parametrize("fmt", ("npz", "csv", "parquet"))
@pytest.mark.parametrize("kind", VARIANTS)
def test_real_fashion_mnist_test(fmt, kind, fashion_test, tmp_path):
    x, y = fashion_test
    if fmt == "parquet" and kind == "float":
        pytest.skip("PNG holds bytes: a float-scaled parquet copy cannot exist")
    if fmt != "npz" and kind not in ("exact", "altered"):
        pytest.skip("every variant runs on the npz copy and on every format of the MNIST test set")
    vx, vy = variant(kind, x, y)
    path = write_copy(fmt, tmp_path, vx, vy, name="fashion")
    ref = f"{FASHION}:fashion-mnist:test" if kind == "altered" else None
    ident, ds = answer(path, reference=ref)
    _assert_verdict(ident, ds, kind, x, y, "fashion-mnist", "test", x)


# --------------------------------------------------------------------------- synthetic EMNIST letters

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", VARIANTS)
def test_synthetic_emnist_letters(fmt, kind, letters, tmp_path):
    folder, x, y = letters
    if fmt == "parquet" and kind == "float":
        pytest.skip("PNG holds bytes: a float-scaled parquet copy cannot exist")
    vx, vy = variant(kind, x, y)
    path = write_copy(fmt, tmp_path, vx, vy, name="emnist-letters", header=False)
    ident, ds = answer(path, reference=f"{folder}:emnist-letters:test")
    # the official files store EMNIST transposed: canonical images are upright
    _assert_verdict(ident, ds, kind, x, y, "emnist-letters", "test", x.transpose(0, 2, 1))
    assert ident.matched_by.startswith("compared image by image with emnist-letters test")


def test_emnist_mat_keeps_the_writer_ids(letters, tmp_path):
    _, x, y = letters
    path = write_copy("mat", tmp_path, x, y, name="emnist-letters")
    ds = mnistforge.load(path, "test", with_metadata=True)
    assert ds.name == "emnist-letters" and ds.metadata is not None
    assert ds.metadata["writer"].tolist() == (np.arange(len(y)) % 7 + 100).tolist()
    assert np.array_equal(ds.images, x.transpose(0, 2, 1))  # upright, as load gives EMNIST


def test_our_hub_export_shards_are_identified(letters, tmp_path):
    folder, x, y = letters
    assert main(["export", "hf", str(folder), "--out", str(tmp_path / "hf")]) == 0
    data = tmp_path / "hf" / "data" / "emnist-letters"
    assert read_foreign(data).hint == "emnist-letters"
    ident, ds = answer(data, split="test", reference=f"{folder}:emnist-letters:test")
    # the Hub export stores EMNIST upright: transposed relative to the release's files
    assert (ident.verdict, ident.dataset, ident.split) == ("transformed", "emnist-letters", "test")
    assert [c.kind for c in ident.changes] == ["transposed"]
    assert np.array_equal(ds.images, x.transpose(0, 2, 1)) and np.array_equal(ds.labels, y)
    assert ds.metadata is not None and "writer" in ds.metadata.dtype.names


def test_torchvision_emnist_raw_holding_several_datasets(letters, tmp_path):
    folder, x, y = letters
    raw = tmp_path / "root" / "EMNIST" / "raw"
    raw.mkdir(parents=True)
    for name in ("emnist-letters", "emnist-balanced"):
        write_idx(raw / f"{name}-test-images-idx3-ubyte", x)
        write_idx(raw / f"{name}-test-labels-idx1-ubyte", y)
    copy = read_foreign(tmp_path / "root")
    assert sorted(copy.splits) == ["emnist-balanced:test", "emnist-letters:test"]
    _, _, idents, _ = identify_copy(tmp_path / "root", "emnist-letters:test",
                                    reference=f"{folder}:emnist-letters:test")
    assert [(i.key, i.verdict, i.dataset) for i in idents] == [
        ("emnist-letters:test", "identical", "emnist-letters")]
    assert mnistforge.load("emnist-letters", "test", root=tmp_path / "root").name == "emnist-letters"


def test_letters_labelled_from_zero_are_offset_by_load(letters, tmp_path):
    _, x, y = letters
    path = write_copy("csv", tmp_path, x, y - 1, name="emnist-letters", header=False)
    ds = mnistforge.load("emnist-letters", "test", root=path)
    assert np.array_equal(ds.labels, y) and [c.kind for c in ds.changes] == ["labels+1"]


# --------------------------------------------------------------------------- load, verify, CLI

def test_load_reads_every_change_back_and_reports_it(mnist_test, tmp_path, caplog):
    x, y = mnist_test
    path = tmp_path / "odd.npz"
    np.savez(path, x_test=(255 - x.transpose(0, 2, 1)).reshape(len(x), -1) / 255.0, y_test=y + 1)
    with caplog.at_level("WARNING", logger="mnistforge.loaders.foreign"):
        ds = mnistforge.load(path, "test")
    assert ds.name == "mnist" and np.array_equal(ds.images, x) and np.array_equal(ds.labels, y)
    assert [c.kind for c in ds.changes] == ["float01", "inverted", "transposed", "labels-1"]
    assert ds.storage == ["rows flattened to 784 columns (reshaped to 28 x 28)"]
    assert len([r for r in caplog.records if "(undone)" in r.message]) == 4  # said, not silent
    assert len(mnistforge.load(path, "test[:10]")) == 10


def test_format_is_detected_from_content_not_name(mnist_test, tmp_path):
    x, y = mnist_test
    npz = write_copy("npz", tmp_path, x, y)
    disguised = tmp_path / "download.bin"
    npz.rename(disguised)
    csv = write_copy("csv", tmp_path, x[:5], y[:5])
    txt = tmp_path / "digits.txt"
    csv.rename(txt)
    assert sniff(disguised) == "npz" and sniff(txt) == "csv"
    ident, _ = answer(disguised)
    assert ident.verdict == "identical" and ident.dataset == "mnist"


def test_a_misleading_file_name_does_not_decide(fashion_test, tmp_path):
    x, y = fashion_test
    path = write_copy("csv", tmp_path, x, y, name="mnist")  # mnist_test.csv holding Fashion-MNIST
    ident, ds = answer(path)
    assert (ident.verdict, ident.dataset, ident.split) == ("identical", "fashion-mnist", "test")
    assert ds.name == "fashion-mnist"


def test_idx_files_under_other_names(mnist_reference, tmp_path):
    import gzip
    import shutil

    for f in ("t10k-images", "t10k-labels"):  # Kaggle's names: t10k-images.idx3-ubyte
        kind = "idx3" if "images" in f else "idx1"
        with gzip.open(mnist_reference / f"{f}-{kind}-ubyte.gz") as src, \
                open(tmp_path / f"{f}.{kind}-ubyte", "wb") as dst:
            shutil.copyfileobj(src, dst)
    rep = verify(tmp_path, near=False)
    assert rep.info["format"] == "idx" and rep.info["identification"][0]["verdict"] == "identical"
    assert mnistforge.load(tmp_path, "test").name == "mnist"


def test_keras_layout_with_both_splits_and_a_single_pair(mnist_test, tmp_path):
    x, y = mnist_test
    both = tmp_path / "mnist.npz"
    np.savez(both, x_train=x[:100], y_train=y[:100], x_test=x, y_test=y)
    assert sorted(read_foreign(both).splits) == ["test", "train"]
    ident, _ = answer(both, split="test")
    assert ident.verdict == "identical"
    rep = verify(f"{both}:train", near=False)
    assert rep.info["identification"][0]["verdict"] == "unknown"  # 100 images: nothing that size
    assert rep.info["identification"][0]["resembles"]["count"] == 100
    single = tmp_path / "pair.npz"
    np.savez(single, images=x, labels=y)
    assert answer(single)[0].verdict == "identical"


def test_unknown_copy_says_what_it_resembles(tmp_path):
    rng = np.random.default_rng(0)
    x = np.zeros((500, 28, 28), np.uint8)
    x[:, 6:22, 12:16] = rng.integers(100, 256, (500, 16, 4))  # tall strokes: upright
    y = np.arange(500) % 10
    p = tmp_path / "mine.npz"
    np.savez(p, x_train=x, y_train=y)
    ident, _ = answer(p)
    assert ident.verdict == "unknown" and ident.dataset is None
    r = ident.resembles
    assert (r["count"], r["classes"], r["label_range"]) == (500, 10, "0..9")
    assert r["orientation"].endswith("(upright)")


def test_torchvision_raw_with_gz_and_decompressed_twins(mnist_test, tmp_path):
    x, y = mnist_test
    raw = tmp_path / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for suffix in ("", ".gz"):
        write_idx(raw / f"t10k-images-idx3-ubyte{suffix}", x)
        write_idx(raw / f"t10k-labels-idx1-ubyte{suffix}", y)
    copy = read_foreign(tmp_path / "data")
    assert copy.format == "torchvision" and list(copy.splits) == ["test"]
    assert mnistforge.load(tmp_path / "data", "test").name == "mnist"


def test_cli_prints_the_answer_first_and_json_carries_it(mnist_test, tmp_path, capsys):
    x, y = mnist_test
    path = write_copy("npz", tmp_path, *variant("shifted", x, y))
    out_json = tmp_path / "r.json"
    code = main(["verify", str(path), "--no-near", "--json", str(out_json)])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[1].startswith("test: identical to mnist test after: labels offset by +1")
    assert out[2].split() == ["check", "result"]  # then the table of checks
    doc = json.loads(out_json.read_text())
    ident = doc["info"]["identification"][0]
    assert (ident["verdict"], ident["dataset"], ident["split"]) == ("transformed", "mnist", "test")
    assert [c["kind"] for c in ident["changes"]] == ["labels-1"]
    assert doc["results"][0]["name"] == "identify[test]"


def test_cli_differs_fails(mnist_test, mnist_reference, tmp_path, capsys):
    x, y = mnist_test
    path = write_copy("npz", tmp_path, *variant("altered", x, y))
    code = main(["verify", str(path), "--no-near", "--reference", f"{mnist_reference}:mnist:test"])
    out = capsys.readouterr().out
    assert code == 1
    assert f"test: mnist test: 3 images differ (first: {', '.join(map(str, altered_indices(len(y))))})" \
        in out


# --------------------------------------------------------------------------- pickles

class _Payload:
    """Unpickling this creates the marker file: the proof that a loader unpickled."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _evil(marker: Path, protocol: int = 2) -> bytes:
    return pickle.dumps({"data": _Payload(marker)}, protocol=protocol)


def test_the_payload_is_live(tmp_path):
    marker = tmp_path / "proof"
    pickle.loads(_evil(marker))  # what torch.load / pickle.load would do
    assert marker.exists()


@pytest.mark.parametrize("layout", ("legacy", "zip"))
def test_torchvision_processed_pt_is_refused_never_unpickled(layout, tmp_path, capsys):
    marker = tmp_path / "pwned"
    processed = tmp_path / "root" / "MNIST" / "processed"
    processed.mkdir(parents=True)
    for name in ("training.pt", "test.pt"):
        if layout == "legacy":  # torch.save(..., _use_new_zipfile_serialization=False)
            (processed / name).write_bytes(_evil(marker))
        else:  # torch.save's zip format: archive/data.pkl
            with zipfile.ZipFile(processed / name, "w") as z:
                z.writestr("archive/data.pkl", _evil(marker))
                z.writestr("archive/version", "3\n")
    root = tmp_path / "root"
    with pytest.raises(UnsafeFormatError, match="pickle"):
        read_foreign(root)
    with pytest.raises(UnsafeFormatError):
        mnistforge.load(root, "test")
    with pytest.raises(UnsafeFormatError):
        read_foreign(processed / "test.pt")  # the file given directly
    assert main(["verify", str(root)]) == 1
    assert "never unpickles" in capsys.readouterr().err
    assert not marker.exists()


def test_pickled_object_arrays_in_npz_and_npy_are_refused(tmp_path):
    marker = tmp_path / "pwned"
    obj = np.empty(2, dtype=object)
    obj[0], obj[1] = _Payload(marker), 1
    np.savez(tmp_path / "evil.npz", x_train=obj, y_train=np.arange(2))
    with pytest.raises(UnsafeFormatError, match="pickled Python objects"):
        read_foreign(tmp_path / "evil.npz")
    np.save(tmp_path / "x_train.npy", obj)
    np.save(tmp_path / "y_train.npy", np.arange(2))
    with pytest.raises(UnsafeFormatError):
        read_foreign(tmp_path / "x_train.npy")
    assert not marker.exists()


def test_raw_folder_wins_and_processed_pickles_are_only_noted(mnist_test, tmp_path):
    x, y = mnist_test
    marker = tmp_path / "pwned"
    root = write_copy("torchvision", tmp_path, x, y)
    (root / "MNIST" / "processed").mkdir()
    (root / "MNIST" / "processed" / "test.pt").write_bytes(_evil(marker))
    copy = read_foreign(root)
    assert copy.notes == ["1 processed/*.pt files (pickles) not read"]
    assert answer(root)[0].verdict == "identical"
    assert not marker.exists()


def test_damaged_and_foreign_files_are_format_errors(tmp_path):
    (tmp_path / "junk.bin").write_bytes(b"\x01\x02\x03not a dataset")
    with pytest.raises(FormatError, match="unrecognised file format"):
        read_foreign(tmp_path / "junk.bin")
    (tmp_path / "ragged.csv").write_text("1,2,3\n4,5\n")
    with pytest.raises(FormatError, match="ragged"):
        read_foreign(tmp_path / "ragged.csv")
    assert get_dataset("mnist").split("test").order_free_sha256  # the registry carries them
