"""Building the six EMNIST datasets from a synthetic SD19, and loading them back."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import mnistforge
from mnistforge.builders.emnist import build_emnist, file_names
from mnistforge.builders.emnist_prepro import convert_batch
from mnistforge.builders.emnist_splits import (DATASETS, OFFICIAL_PER_CLASS, OFFICIAL_SIZES,
                                               label_table, official_pool_size)
from mnistforge.cli import main
from mnistforge.errors import BuildError
from mnistforge.io.idx import read_idx
from mnistforge.io.hashing import sha256_file
from mnistforge.io.manifest import Manifest
from mnistforge.sd19 import open_sd19
from sd19_helpers import make_tiny_sd19

SCALE = 0.003   # ~2,400 characters: every class present, a few seconds to build


@pytest.fixture(scope="module")
def sd19(tmp_path_factory):
    return make_tiny_sd19(tmp_path_factory.mktemp("sd19"), scale=SCALE)


@pytest.fixture(scope="module")
def source(sd19):
    return open_sd19(sd19)


@pytest.fixture(scope="module")
def built(sd19, tmp_path_factory):
    out = tmp_path_factory.mktemp("emnist") / "all"
    manifest = build_emnist(sd19, out, seed=7, workers=2)
    return out, manifest


def idx(out, name, part, kind):
    return read_idx(out / file_names(name)[(part, kind)])


def test_files_named_like_the_official_release(built):
    out, manifest = built
    names = sorted(p.name for p in out.iterdir())
    expected = {"manifest.json"}
    for d in DATASETS:
        fn = file_names(d)
        expected |= {v for v in fn.values()}
    assert set(names) == expected
    assert "emnist-balanced-train-images-idx3-ubyte.gz" in names
    assert "emnist-balanced-test-metadata-idx2-int.gz" in names
    # manifest: sha256 of every output, orientation, per-class quota report
    # the builder returns the manifest it wrote (not a re-read): equal to what is on disk
    assert isinstance(manifest, Manifest)
    on_disk = json.loads((out / "manifest.json").read_text())
    assert on_disk == manifest.to_dict()
    for rel, info in manifest.outputs.items():
        assert sha256_file(out / rel) == info["sha256"]
    assert set(manifest.outputs) == expected - {"manifest.json"}
    assert manifest.orientation == "official"
    assert manifest.datasets["balanced"].quota["per_class"]["test"] >= 1
    assert not (out.parent / "all.incomplete").exists()


def test_mapping_files(built):
    out, _ = built
    lines = (out / "emnist-bymerge-mapping.txt").read_text().splitlines()
    assert len(lines) == 47 and lines[36] == "36 97" and lines[46] == "46 116"
    letters = (out / "emnist-letters-mapping.txt").read_text().splitlines()
    assert letters[0] == "1 65 97" and letters[-1] == "26 90 122"
    assert len((out / "emnist-byclass-mapping.txt").read_text().splitlines()) == 62


def test_byclass_bymerge_every_character_once(built, source):
    out, _ = built
    n = len(source.index)
    for name in ("byclass", "bymerge"):
        rows = np.concatenate([idx(out, name, p, "metadata")[:, 5] for p in ("train", "test")])
        assert np.array_equal(np.sort(rows), np.arange(n))   # union train+test = source
        tr = idx(out, name, "train", "metadata")[:, 5]
        assert len(tr) == (6 * n) // 7
        for part in ("train", "test"):
            meta = idx(out, name, part, "metadata")
            labels = idx(out, name, part, "labels")
            assert np.array_equal(labels, label_table(name)[meta[:, 3]])
            assert np.array_equal(meta[:, 3], source.index["ascii"][meta[:, 5]])
            assert np.array_equal(meta[:, 0], source.index["writer"][meta[:, 5]])
    # same characters, same order; only labels differ
    assert np.array_equal(idx(out, "byclass", "train", "images"),
                          idx(out, "bymerge", "train", "images"))


def test_balanced_sets_equal_per_class_and_sizes_follow_the_rule(built, source):
    out, manifest = built
    asc = source.index["ascii"]
    for name in ("balanced", "letters", "digits", "mnist"):
        q = manifest.datasets[name].quota
        table = label_table(name)
        pool = int((table[asc] >= 0).sum())
        scale = min(1.0, pool / official_pool_size(name))
        assert q["scale"] == pytest.approx(scale)
        want_te = max(1, int(np.floor(OFFICIAL_PER_CLASS[name][1] * scale + 1e-9)))
        assert q["wanted_per_class"]["test"] == want_te
        assert q["wanted_per_class"]["train"] == 6 * want_te
        ncls = 26 if name == "letters" else len(np.unique(table[table >= 0]))
        for split in ("train", "test", "validation", "train-without-validation"):
            ds = mnistforge.load(f"emnist-{name}", split, root=out)
            counts = np.bincount(ds.labels, minlength=len(ds.classes))
            counts = counts[1:] if name == "letters" else counts
            assert len(counts) == ncls and (counts == counts[0]).all(), (name, split)
        per = q["per_class"]
        assert len(idx(out, name, "test", "labels")) == ncls * per["test"]
        assert len(idx(out, name, "train", "labels")) == ncls * per["train"]
        assert manifest.datasets[name].counts["validation"] == ncls * per["validation"]
        # no test image in the training set of any dataset
        tr = idx(out, name, "train", "metadata")[:, 5]
        byc_test = idx(out, "byclass", "test", "metadata")[:, 5]
        assert np.isin(idx(out, name, "test", "metadata")[:, 5], byc_test).all()
        assert not np.isin(tr, byc_test).any()


def test_round_trip_upright_with_correct_characters(built, source):
    out, _ = built
    ds = mnistforge.load("emnist-byclass", "train", root=out, with_metadata=True)
    assert ds.images.shape[1:] == (28, 28) and ds.images.dtype == np.uint8
    # stored transposed like the official files, loaded upright
    raw = idx(out, "byclass", "train", "images")
    assert np.array_equal(np.asarray(ds.images), raw.transpose(0, 2, 1))
    # each loaded image is the upright conversion of its SD19 character
    pick = np.arange(0, len(ds), max(1, len(ds) // 40))
    rows = ds.metadata["sd19_row"][pick]
    fresh = convert_batch(source.read_all(rows))
    assert np.array_equal(np.asarray(ds.images)[pick], fresh)
    # a rendered 'A' is labelled 'A' and looks like an upright 'A'
    from mnistforge.sd19.glyphs import HardCases, draw_writer_style, render_characters
    rng = np.random.default_rng(0)
    template = np.zeros((28, 28))
    for _ in range(8):
        g = render_characters(b"A" * 4, draw_writer_style(rng), rng, HardCases(0, 0, 0))
        template += convert_batch(g).sum(axis=0)
    a = ds.classes.index("A")
    imgs = np.asarray(ds.images)[ds.labels == a].astype(float)
    assert len(imgs) >= 3
    assert (ds.metadata["ascii"][ds.labels == a] == ord("A")).all()

    def corr(x, t):
        x = x.reshape(len(x), -1) - x.reshape(len(x), -1).mean(1, keepdims=True)
        t = t.ravel() - t.mean()
        return (x @ t) / (np.linalg.norm(x, axis=1) * np.linalg.norm(t) + 1e-9)

    assert corr(imgs, template).mean() > corr(imgs, template.T).mean() + 0.05


def test_same_seed_byte_identical_other_seed_differs(built, sd19, tmp_path):
    out, manifest = built
    again = build_emnist(sd19, tmp_path / "again", splits=["balanced", "byclass"], seed=7)
    for rel, info in again.outputs.items():
        assert manifest.outputs[rel]["sha256"] == info["sha256"], rel
    other = build_emnist(sd19, tmp_path / "other", splits=["balanced"], seed=8)
    rel = file_names("balanced")[("train", "labels")]
    assert other.outputs[rel]["sha256"] != manifest.outputs[rel]["sha256"]


def test_writer_disjoint_build(sd19, tmp_path):
    out = tmp_path / "w"
    m = build_emnist(sd19, out, splits=["byclass", "balanced", "digits"], seed=1,
                     split_by="writer")
    assert m.parameters["split"]["split_by"] == "writer"
    for name in ("byclass", "balanced", "digits"):
        tr = idx(out, name, "train", "metadata")[:, 0]
        te = idx(out, name, "test", "metadata")[:, 0]
        if name != "balanced":   # a tiny source may lack a letter among test writers
            assert len(te) and len(tr)
        assert len(np.intersect1d(tr, te)) == 0, name


def test_cli_single_dataset_upright_and_paper37(sd19, built, tmp_path):
    out_official, _ = built
    out = tmp_path / "mn"
    rc = main(["build", "emnist-mnist", "--sd19", str(sd19), "--out", str(out), "--seed", "7",
               "--orientation", "upright"])
    assert rc == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        list(file_names("mnist").values()) + ["manifest.json"])
    m = json.loads((out / "manifest.json").read_text())
    assert m["orientation"] == "upright"
    # same seed: same selection; stored upright here, transposed there; loaded identically
    raw_up = idx(out, "mnist", "test", "images")
    raw_off = idx(out_official, "mnist", "test", "images")
    assert np.array_equal(raw_up, raw_off.transpose(0, 2, 1))
    a = mnistforge.load("emnist-mnist", "test", root=out)
    b = mnistforge.load("emnist-mnist", "test", root=out_official)
    assert np.array_equal(np.asarray(a.images), np.asarray(b.images))
    # existing folder without --overwrite: a usage error (2), folder untouched
    before = sha256_file(out / "manifest.json")
    assert main(["build", "emnist-mnist", "--sd19", str(sd19), "--out", str(out)]) == 2
    assert sha256_file(out / "manifest.json") == before
    # the paper's 37-class letters
    out37 = tmp_path / "l37"
    assert main(["build", "emnist-letters", "--sd19", str(sd19), "--out", str(out37),
                 "--letters-variant", "paper37"]) == 0
    lab = idx(out37, "letters", "train", "labels")
    assert lab.max() == 36 and len(np.unique(lab)) == 37
    assert len((out37 / "emnist-letters-mapping.txt").read_text().splitlines()) == 37


def test_unknown_target_and_empty_datasets(sd19, tmp_path):
    with pytest.raises(Exception):
        build_emnist(sd19, tmp_path / "x", splits=["kanji"])
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.incomplete").exists()


def test_digits_only_source_fails_for_letters(tmp_path):
    p = make_tiny_sd19(tmp_path, scale=0.001, fields="d")
    with pytest.raises(BuildError, match="no character"):
        build_emnist(p, tmp_path / "out", splits=["letters"])
    assert not (tmp_path / "out").exists()
    m = build_emnist(p, tmp_path / "dig", splits=["digits"])
    assert m.datasets["digits"].counts["test"] >= 10


@pytest.mark.slow
def test_full_scale_synthetic_build(tmp_path_factory):
    """All six from a synthetic SD19 at MNISTFORGE_EMNIST_SCALE (default 1: 814,255 characters)."""
    scale = float(os.environ.get("MNISTFORGE_EMNIST_SCALE", "1"))
    base = tmp_path_factory.mktemp("full")
    p = make_tiny_sd19(base, scale=scale, hierarchies=("by_write", "by_class"))
    out = base / "emnist"
    m = build_emnist(p, out)
    n = m.inputs["sd19_characters"]
    assert m.datasets["byclass"].counts["train"] == (6 * n) // 7
    assert m.datasets["byclass"].counts["test"] == n - (6 * n) // 7
    if n == 814_255:
        for name in DATASETS:
            d = m.datasets[name].counts
            assert (d["train"], d["test"]) == OFFICIAL_SIZES[name], name
    for name in ("balanced", "letters", "digits", "mnist"):
        ds = mnistforge.load(f"emnist-{name}", "validation", root=out)
        c = np.bincount(ds.labels)
        c = c[c > 0]
        assert (c == c[0]).all()


def test_writer_metadata_reaches_the_hugging_face_columns(built):
    out, _ = built
    ds = mnistforge.load("emnist-balanced", "test", root=out, with_metadata=True)
    hf = ds.to_hf()
    for col in ("writer_id", "hsf", "field", "ascii", "entry", "sd19_row"):  # writer: writer_id
        assert col in hf.column_names
    assert hf["writer_id"] == ds.metadata["writer"].tolist()
    assert set(hf["field"]) <= {0, 1, 2, 3}


def test_paper37_letters_load_with_their_own_class_names(sd19, tmp_path):
    # The loader takes the class list from the build manifest, not the registry's 26+N/A.
    out37 = tmp_path / "l37"
    assert main(["build", "emnist-letters", "--sd19", str(sd19), "--out", str(out37),
                 "--letters-variant", "paper37"]) == 0
    ds = mnistforge.load("emnist-letters", "train", root=out37, with_metadata=True)
    assert len(ds.classes) == 37
    assert ds.labels.max() < len(ds.classes)
    # each label's character agrees with the SD19 character it came from
    chars = np.array([chr(a) for a in ds.metadata["ascii"]])
    named = np.array([ds.classes[k] for k in ds.labels])
    assert np.all((named == chars) | (np.char.upper(named) == np.char.upper(chars)))


@pytest.mark.parametrize("orientation", ["official", "upright"])
def test_worker_processes_convert_the_same_images_as_this_process(source, orientation):
    # issue 44: decode + convert in each worker process (only 28x28 images travel back), rows in
    # any order; the images are those this process converts from its own decode
    from mnistforge.builders import emnist
    from mnistforge.builders.emnist_prepro import DEFAULT_CONFIG

    rows = np.random.default_rng(5).permutation(len(source.index))
    product = emnist.emnist_product(emnist.EmnistBuildConfig(orientation=orientation))
    procs = source.make([product], rows, workers=2)[0]
    here = emnist._convert(source.read_all(rows, workers=1), DEFAULT_CONFIG, orientation)
    assert len(rows) > 512 and here.any()   # 512 rows or more go to worker processes, several jobs
    np.testing.assert_array_equal(procs, here)
