"""Building QMNIST / MNIST / xnist from a synthetic SD19, end to end."""
from __future__ import annotations

import gzip
import os
import time
from pathlib import Path

import numpy as np
import pytest

from mnistforge.builders import qmnist as qb
from mnistforge.builders import qmnist_files as qf
from mnistforge.builders import qmnist_recipe as qr
from mnistforge.builders.mnist_prepro import MnistPreproConfig, preprocess, preprocess_one
from mnistforge.builders.qmnist import QmnistBuildConfig, build_mnist, build_qmnist, build_xnist
from mnistforge.errors import BuildError
from mnistforge.io.idx import read_idx
from mnistforge.io.manifest import Manifest, read_manifest
from mnistforge.io.hashing import sha256_file

synth = pytest.importorskip("mnistforge.sd19.synth")
from mnistforge.sd19.reader import SD19Source, open_sd19  # noqa: E402
from sd19_helpers import make_tiny_sd19



@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    # ~800 digits: a writer or two per partition, the three planted duplicates
    return make_tiny_sd19(tmp_path_factory.mktemp("sd19"), scale=0.002, fields="d",
                                hierarchies=("by_write",), by_write_cls=True)


@pytest.fixture(scope="module")
def source(tiny):
    return open_sd19(tiny, progress=False)


@pytest.fixture(scope="module")
def returned(tiny, tmp_path_factory):
    """``{target: (folder, the Manifest its builder returned)}``."""
    root = tmp_path_factory.mktemp("built")
    cfg = QmnistBuildConfig(progress=False)
    return {t: (root / t, f(tiny, root / t, cfg)) for t, f in
            (("qmnist", build_qmnist), ("mnist", build_mnist), ("xnist", build_xnist))}


@pytest.fixture(scope="module")
def built(returned):
    return {t: folder for t, (folder, _) in returned.items()}


def test_builders_return_the_manifest_they_wrote(returned):
    for target, (folder, manifest) in returned.items():
        assert isinstance(manifest, Manifest) and manifest.kind == target
        assert manifest.to_dict() == read_manifest(folder), target   # outputs hashed, as on disk
        assert set(manifest.outputs) == {p.name for p in folder.iterdir()} - {"manifest.json"}


def count_decodes(monkeypatch, into):
    """Append the number of rows of every pass that decodes SD19 characters for a product."""
    real = SD19Source._map

    def counted(self, fn, rows, *a, **k):
        if fn.__name__ == "_job_make":
            into.append(len(rows))
        return real(self, fn, rows, *a, **k)
    monkeypatch.setattr(SD19Source, "_map", counted)


def drop_kept_products(sd19):
    for f in (sd19 / ".mnistforge").glob("sd19-product-*"):
        f.unlink()


def tsv(path):
    return qr.read_label_table(path)


def test_vectorised_equals_oracle_on_synthetic_digits(source):
    rows = source.digits()[::2][:300]
    imgs = source.read_all(rows)
    fast = preprocess(imgs)
    slow = np.stack([preprocess_one(im) for im in imgs])
    np.testing.assert_array_equal(fast, slow)


@pytest.mark.slow
def test_vectorised_equals_oracle_on_2000_synthetic_digits(tmp_path_factory):
    path = make_tiny_sd19(tmp_path_factory.mktemp("sd19-2k"), scale=0.005, fields="d",
                                hierarchies=("by_write",), by_write_cls=True)
    source = open_sd19(path, progress=False)
    rows = source.digits()[:2000]
    assert rows.size == 2000
    imgs = source.read_all(rows)
    for cfg in (MnistPreproConfig(), MnistPreproConfig(1.0, "true")):
        fast = preprocess(imgs, cfg)
        slow = np.stack([preprocess_one(im, cfg) for im in imgs])
        np.testing.assert_array_equal(fast, slow)


def test_qmnist_files_counts_and_labels(built, source):
    out = built["qmnist"]
    names = sorted(p.name for p in out.iterdir())
    expected = sorted(n for f in qf.QMNIST_FILES.values() for n in f.values()) + ["manifest.json"]
    assert names == sorted(expected)
    table = qr.digit_table(source.index)
    sel = qr.select_qmnist(table)
    for split, want in (("train", sel.train), ("test", sel.test)):
        f = qf.QMNIST_FILES[split]
        ext = read_idx(out / f["table"])
        assert ext.dtype.itemsize == 4 and ext.shape == (want.size, 8)
        with gzip.open(out / f["table"], "rb") as fh:
            assert fh.read(4) == bytes([0, 0, 0x0C, 2])          # int32, 2 dims
        np.testing.assert_array_equal(ext, table[want])
        np.testing.assert_array_equal(tsv(out / f["tsv"]), ext)
        np.testing.assert_array_equal(read_idx(out / f["labels"]), ext[:, 0])
        imgs = read_idx(out / f["images"])
        assert imgs.shape == (want.size, 28, 28) and imgs.dtype == np.uint8
        # the images are the digits the labels name: decode + preprocess them directly
        rows = qr.digit_rows(source.index)[ext[:20, 5]]
        np.testing.assert_array_equal(imgs[:20], preprocess(source.read_all(rows)))
    tr = tsv(out / qf.QMNIST_FILES["train"]["tsv"])[:, 5]
    te = tsv(out / qf.QMNIST_FILES["test"]["tsv"])[:, 5]
    assert np.intersect1d(tr, te).size == 0
    assert tr.size == sel.recipe.train_size and te.size == sel.recipe.test_size


def test_duplicates_final_images_agree_with_source(built, source):
    xt = tsv(built["xnist"] / qf.XNIST_FILES["tsv"])
    src_col6 = qr.source_duplicates(source.index)
    assert np.count_nonzero(src_col6) == 3                   # the synthetic SD19 plants three
    np.testing.assert_array_equal(xt[:, 6], src_col6)
    dups = np.flatnonzero(xt[:, 6])
    imgs = read_idx(built["xnist"] / qf.XNIST_FILES["images"])
    for d in dups:
        np.testing.assert_array_equal(imgs[d], imgs[xt[d, 6]])
        assert xt[d, 6] < d
    for split in ("train", "test"):
        ids = tsv(built["qmnist"] / qf.QMNIST_FILES[split]["tsv"])[:, 5]
        assert not np.isin(dups, ids).any()


def test_xnist_is_every_digit_in_order(built, source):
    out = built["xnist"]
    xt = tsv(out / qf.XNIST_FILES["tsv"])
    n = source.digits().size
    np.testing.assert_array_equal(xt[:, 5], np.arange(n))
    np.testing.assert_array_equal(read_idx(out / qf.XNIST_FILES["table"]), xt)
    imgs = read_idx(out / qf.XNIST_FILES["images"])
    q = read_idx(built["qmnist"] / qf.QMNIST_FILES["test"]["images"])
    qt = tsv(built["qmnist"] / qf.QMNIST_FILES["test"]["tsv"])
    np.testing.assert_array_equal(imgs[qt[:, 5]], q)


def test_mnist_is_qmnist_train_plus_first_test_rows(built):
    m, q = built["mnist"], built["qmnist"]
    assert sorted(p.name for p in m.iterdir()) == sorted(
        [n for f in qb.MNIST_FILES.values() for n in f.values()] + ["manifest.json"])
    np.testing.assert_array_equal(read_idx(m / "train-images-idx3-ubyte.gz"),
                                  read_idx(q / qf.QMNIST_FILES["train"]["images"]))
    te = read_idx(m / "t10k-images-idx3-ubyte.gz")
    man = read_manifest(m)
    k = man["parameters"]["recipe"]["mnist_test_size"]
    assert te.shape[0] == k
    np.testing.assert_array_equal(te, read_idx(q / qf.QMNIST_FILES["test"]["images"])[:k])
    assert any("not MNIST's 10,000 test digits" in n for n in man["notes"])


def test_manifest_hashes_parameters_and_notes(built, source):
    for target, out in built.items():
        man = read_manifest(out)
        assert man["kind"] == target
        files = sorted(p.name for p in out.iterdir() if p.name != "manifest.json")
        assert sorted(man["outputs"]) == files
        for name, info in man["outputs"].items():
            assert info["sha256"] == sha256_file(out / name)
        assert man["inputs"]["sd19"]["fingerprint"] == source.fingerprint
        assert man["parameters"]["preprocessing"] == {"fudge": 0.99, "centring": "mnist",
                                                      "variant": "published"}
        assert any("SYNTHETIC" in n for n in man["notes"])
        if target != "xnist":
            assert man["parameters"]["order"] == "deterministic"
            assert any("order is NOT MNIST's" in n for n in man["notes"])
            assert any("scaled" in n for n in man["notes"])


def test_loaders_read_the_build(built):
    import mnistforge
    out = built["qmnist"]
    n_test = read_idx(out / qf.QMNIST_FILES["test"]["images"]).shape[0]
    ds = mnistforge.load("qmnist", "test10k", root=out, with_metadata=True)
    assert len(ds) == min(10000, n_test)
    ext = tsv(out / qf.QMNIST_FILES["test"]["tsv"])[: len(ds)]
    np.testing.assert_array_equal(ds.labels, ext[:, 0])
    np.testing.assert_array_equal(ds.metadata["nist_index"], ext[:, 5])
    ds = mnistforge.load("qmnist", "train", root=out)
    np.testing.assert_array_equal(ds.images, read_idx(out / qf.QMNIST_FILES["train"]["images"]))
    ds = mnistforge.load("qmnist", "nist", root=built["xnist"])
    assert len(ds) == read_idx(built["xnist"] / qf.XNIST_FILES["images"]).shape[0]
    ds = mnistforge.load("mnist", "test", root=built["mnist"])
    assert len(ds) == read_manifest(built["mnist"])["datasets"]["mnist"]["test"]


def test_rebuild_is_byte_identical_and_atomic(tiny, built, tmp_path):
    out = tmp_path / "again"
    drop_kept_products(tiny)   # this really preprocesses again
    build_qmnist(tiny, out, QmnistBuildConfig(progress=False, workers=1))
    a, b = read_manifest(out), read_manifest(built["qmnist"])
    assert a["outputs"] == b["outputs"]
    for name in a["outputs"]:
        assert (out / name).read_bytes() == (built["qmnist"] / name).read_bytes()
    assert not (tmp_path / "again.incomplete").exists()
    with pytest.raises(BuildError, match="already exists"):
        build_qmnist(tiny, out, QmnistBuildConfig(progress=False))


def test_source_duplicate_mode_gives_the_same_qmnist(tiny, built, tmp_path):
    out = tmp_path / "src"
    man = build_qmnist(tiny, out, QmnistBuildConfig(progress=False, duplicates="source"))
    for f in qf.QMNIST_FILES["train"].values():
        assert (out / f).read_bytes() == (built["qmnist"] / f).read_bytes()
    assert man.parameters["duplicates"] == "source"


def test_published_order_followed_and_checked(tiny, built, source, tmp_path):
    # a stand-in for the published tables: the recipe's sets in a shuffled order
    rng = np.random.default_rng(0)
    table = qr.digit_table(source.index)
    sel = qr.select_qmnist(table)
    labels = tmp_path / "labels"
    labels.mkdir()
    order = {"train": rng.permutation(sel.train), "test": rng.permutation(sel.test)}
    for split, o in order.items():
        qf.write_tsv(labels / f"qmnist-{split}-labels.tsv.gz", table[o])
    out = tmp_path / "ordered"
    man = build_qmnist(tiny, out, QmnistBuildConfig(progress=False,
                                                    qmnist_labels=labels)).to_dict()
    assert man["parameters"]["order"] == "published"
    assert not any("order is NOT" in n for n in man["notes"])
    assert set(man["inputs"]["qmnist_labels"]) == {"qmnist-train-labels.tsv.gz",
                                                   "qmnist-test-labels.tsv.gz"}
    base = read_idx(built["xnist"] / qf.XNIST_FILES["images"])
    for split, o in order.items():
        np.testing.assert_array_equal(tsv(out / qf.QMNIST_FILES[split]["tsv"])[:, 5], o)
        np.testing.assert_array_equal(read_idx(out / qf.QMNIST_FILES[split]["images"]), base[o])
    # a table that disagrees with the source is refused, and nothing is left behind
    bad = table[order["test"]].copy()
    bad[0, 2] += 1
    qf.write_tsv(labels / "qmnist-test-labels.tsv.gz", bad)
    with pytest.raises(BuildError, match="disagrees"):
        build_qmnist(tiny, tmp_path / "bad", QmnistBuildConfig(progress=False, qmnist_labels=labels))
    assert not (tmp_path / "bad").exists() and not (tmp_path / "bad.incomplete").exists()


def test_mnist_with_published_tables_preprocesses_only_its_digits(tiny, built, source, tmp_path,
                                                                   monkeypatch):
    table = qr.digit_table(source.index)
    sel = qr.select_qmnist(table, duplicate=tsv(built["xnist"] / qf.XNIST_FILES["tsv"])[:, 6] > 0)
    rng = np.random.default_rng(1)
    order = {"train": rng.permutation(sel.train), "test": rng.permutation(sel.test)}
    labels = tmp_path / "labels"
    labels.mkdir()
    for split, o in order.items():
        qf.write_tsv(labels / f"qmnist-{split}-labels.tsv.gz", table[o])
    asked = []
    count_decodes(monkeypatch, asked)
    drop_kept_products(tiny)   # no earlier build's digits to take
    out = tmp_path / "m"
    build_mnist(tiny, out, QmnistBuildConfig(progress=False, qmnist_labels=labels))
    n_test = sel.recipe.mnist_test_size
    assert asked == [sel.train.size + n_test] and asked[0] < len(table)   # not every digit
    base = read_idx(built["xnist"] / qf.XNIST_FILES["images"])
    want = {"train": order["train"], "test": order["test"][:n_test]}
    for split, rows in want.items():
        f = qf.MNIST_FILES[split]
        np.testing.assert_array_equal(read_idx(out / f["images"]), base[rows])
        np.testing.assert_array_equal(read_idx(out / f["labels"]), table[rows, 0])
    man = read_manifest(out)
    assert man["parameters"]["selection"] == "published" and man["parameters"]["order"] == "published"
    # after a build that kept every digit (as build all does) the same files come out of those
    build_xnist(tiny, tmp_path / "x", QmnistBuildConfig(progress=False))
    shared = tmp_path / "m2"
    build_mnist(tiny, shared, QmnistBuildConfig(progress=False, qmnist_labels=labels))
    assert len(asked) == 2 and asked[1] == len(table)   # xnist made every digit; mnist took them
    for split in want:
        for f in qf.MNIST_FILES[split].values():
            assert (shared / f).read_bytes() == (out / f).read_bytes()
    # tables selecting two digits whose final images are identical are refused
    dup = tsv(built["xnist"] / qf.XNIST_FILES["tsv"])[:, 6]
    later = int(np.flatnonzero(dup > 0)[0])
    bad = np.concatenate([order["train"][:-2], [dup[later], later]])
    qf.write_tsv(labels / "qmnist-train-labels.tsv.gz", table[bad])
    with pytest.raises(BuildError, match="identical final images"):
        build_mnist(tiny, tmp_path / "bad", QmnistBuildConfig(progress=False, qmnist_labels=labels))
    assert not (tmp_path / "bad").exists() and not (tmp_path / "bad.incomplete").exists()


def test_tables_of_another_source_refused(tiny, qmnist_reference, tmp_path):
    with pytest.raises(BuildError, match="disagrees"):
        build_qmnist(tiny, tmp_path / "x", QmnistBuildConfig(progress=False,
                                                             qmnist_labels=qmnist_reference))
    assert not (tmp_path / "x").exists()


def test_clean_variant_recorded(tiny, tmp_path):
    cfg = QmnistBuildConfig(progress=False, prepro=MnistPreproConfig(1.0, "true"))
    man = build_mnist(tiny, tmp_path / "clean", cfg)
    assert man.parameters["preprocessing"]["variant"] == "clean"
    assert any("clean variant" in n for n in man.notes)


def test_cli_build(tiny, tmp_path):
    from mnistforge.cli import main
    out = tmp_path / "cli"
    rc = main(["build", "qmnist", "--sd19", str(tiny), "--out", str(out), "--fudge", "1",
               "--centring", "true"])
    assert rc == 0
    man = read_manifest(out)
    assert man["parameters"]["preprocessing"]["variant"] == "clean"
    assert main(["build", "qmnist", "--sd19", str(tiny), "--out", str(out)]) != 0   # exists
    assert read_manifest(out)["parameters"]["preprocessing"]["variant"] == "clean"


def test_multistream_xz_round_trip(tmp_path, monkeypatch):
    import lzma
    monkeypatch.setattr(qf, "XZ_BLOCK", 1000)
    arr = np.random.default_rng(0).integers(0, 256, (50, 28, 28)).astype(np.uint8)
    qf.write_idx_xz(tmp_path / "a-idx3-ubyte.xz", arr)
    blob = (tmp_path / "a-idx3-ubyte.xz").read_bytes()
    assert blob.count(b"\xfd7zXZ") > 10                       # many streams
    np.testing.assert_array_equal(read_idx(tmp_path / "a-idx3-ubyte.xz"), arr)
    assert lzma.decompress(blob)[16:] == arr.tobytes()
    qf.write_idx_xz(tmp_path / "b-idx3-ubyte.xz", arr)
    assert (tmp_path / "b-idx3-ubyte.xz").read_bytes() == blob


def test_format_tsv_matches_published_bytes(qmnist_reference):
    raw = gzip.open(qmnist_reference / "qmnist-test-labels.tsv.gz").read()
    assert qf.format_tsv(qr.read_label_table(qmnist_reference / "qmnist-test-labels.tsv.gz")) == raw


# --- full scale ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def full_layout(qmnist_reference, tmp_path_factory):
    """A synthetic SD19 with the real digit layout (402,953 digits): minutes to write.

    Set MNISTFORGE_FULL_SD19 to reuse one already written."""
    pre = os.environ.get("MNISTFORGE_FULL_SD19")
    if pre:
        return Path(pre)
    out = tmp_path_factory.mktemp("full") / "sd19"
    cfg = synth.SynthConfig(scale=0.01, layout=qmnist_reference / "xnist-labels.tsv.xz",
                            fields="d", hierarchies=("by_write",), by_write_cls=True)
    return synth.synthesize_sd19(out, cfg, progress=False)


@pytest.mark.slow
def test_full_scale_qmnist_and_mnist_match_published_tables(full_layout, qmnist_reference,
                                                            mnist_reference, tmp_path):
    t0 = time.perf_counter()
    cfg = QmnistBuildConfig(qmnist_labels=qmnist_reference)
    out = tmp_path / "qmnist"
    build_qmnist(full_layout, out, cfg)
    t_qmnist = time.perf_counter() - t0
    for split in ("train", "test"):
        pub = tsv(qmnist_reference / f"qmnist-{split}-labels.tsv.gz")
        got = tsv(out / qf.QMNIST_FILES[split]["tsv"])
        assert got.shape == (60000, 8)
        np.testing.assert_array_equal(got[:, :7], pub[:, :7])
        assert read_idx(out / qf.QMNIST_FILES[split]["images"]).shape == (60000, 28, 28)
    t1 = time.perf_counter()
    # the published tables fix the selection: mnist preprocesses only its 70,000 digits
    m = tmp_path / "mnist"
    build_mnist(full_layout, m, QmnistBuildConfig(qmnist_labels=qmnist_reference))
    t_mnist = time.perf_counter() - t1
    q_train = read_idx(out / qf.QMNIST_FILES["train"]["images"])
    q_test = read_idx(out / qf.QMNIST_FILES["test"]["images"])
    np.testing.assert_array_equal(read_idx(m / "train-images-idx3-ubyte.gz"), q_train)
    np.testing.assert_array_equal(read_idx(m / "t10k-images-idx3-ubyte.gz"), q_test[:10000])
    np.testing.assert_array_equal(read_idx(m / "train-labels-idx1-ubyte.gz"),
                                  read_idx(mnist_reference / "train-labels-idx1-ubyte.gz"))
    np.testing.assert_array_equal(read_idx(m / "t10k-labels-idx1-ubyte.gz"),
                                  read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz"))
    assert read_idx(m / "train-images-idx3-ubyte.gz").shape == (60000, 28, 28)
    assert read_idx(m / "t10k-images-idx3-ubyte.gz").shape == (10000, 28, 28)
    print(f"\nfull-scale build times: qmnist {t_qmnist:.0f} s, mnist {t_mnist:.0f} s")


@pytest.mark.slow
def test_full_scale_xnist_matches_published_table(full_layout, qmnist_reference, tmp_path):
    out = tmp_path / "xnist"
    build_xnist(full_layout, out, QmnistBuildConfig())
    got = tsv(out / qf.XNIST_FILES["tsv"])
    pub = tsv(qmnist_reference / "xnist-labels.tsv.xz")
    np.testing.assert_array_equal(got[:, :6], pub[:, :6])
    # the published duplicates are found; synthetic glyphs may add final-image duplicates
    # (step 8: identical 28x28 images, e.g. two tiny '1's), which must really be identical
    marked = np.flatnonzero(pub[:, 6])
    np.testing.assert_array_equal(got[marked, 6], pub[marked, 6])
    extra = np.setdiff1d(np.flatnonzero(got[:, 6]), marked)
    imgs = read_idx(out / qf.XNIST_FILES["images"])
    for d in extra:
        assert got[d, 6] < d
        np.testing.assert_array_equal(imgs[d], imgs[got[d, 6]])
    assert extra.size < 20
    man = read_manifest(out)
    assert man["parameters"]["duplicates_found"] == marked.size + extra.size
    if extra.size:
        assert any("SD19 images differ" in n for n in man["notes"])
    print(f"\nxnist: {extra.size} extra final-image duplicates on the synthetic source")


def test_every_digit_is_preprocessed_once_and_kept_next_to_the_index(tiny, tmp_path, monkeypatch):
    # issue 44: qmnist makes the preprocessed digits in one pass and keeps them next to the
    # index; xnist takes them from there (no decode), with the same bytes as making them again
    drop_kept_products(tiny)
    calls = []
    count_decodes(monkeypatch, calls)
    cfg = QmnistBuildConfig(progress=False, workers=1)
    build_qmnist(tiny, tmp_path / "q", cfg)
    assert len(calls) == 1 and len(list((tiny / ".mnistforge").glob("sd19-product-mnist-*.npy"))) == 1
    build_xnist(tiny, tmp_path / "x", cfg)
    assert len(calls) == 1
    drop_kept_products(tiny)
    build_xnist(tiny, tmp_path / "x2", cfg)
    assert len(calls) == 2
    for f in (tmp_path / "x").iterdir():
        assert f.read_bytes() == (tmp_path / "x2" / f.name).read_bytes(), f.name
