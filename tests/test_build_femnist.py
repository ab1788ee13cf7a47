"""``build femnist`` against an independent transcription of LEAF's FEMNIST scripts.

The transcription (tests/leaf_transcription.py) follows TalwalkarLab/leaf's
data/femnist/preprocess/*.py and data/utils/{sample,remove_users,split_data}.py step by step on
the unpacked replica (folder walks, MD5 of the PNG bytes, Pillow, Python's ``random``), with
every directory listing sorted (the one change docs/femnist.md states).  It imports nothing of
the builder.
"""
from __future__ import annotations

import collections
import hashlib
import json
import zipfile

import numpy as np
import pytest

from mnistforge.builders.femnist import FemnistBuildConfig, build_femnist, file_names
from mnistforge.cli import main
from mnistforge.io.idx import read_idx
from mnistforge.io.leaf import read_leaf_folder
from mnistforge.sd19 import open_sd19
from leaf_transcription import leaf_all_data_files, leaf_pipeline as _leaf_pipeline
from sd19_helpers import make_tiny_sd19

SCALE = 0.03   # ~110 writer folders: two all_data files, as LEAF writes 100 a file
# Digits only at that scale (a third of the characters, a third of the time): the letters of all
# 62 classes are compared on the smaller replica (`small`), which has every field.
FIELDS = "d"


_ALL_DATA: dict = {}


def leaf_pipeline(raw, **options):
    """The transcription, its all_data stage (the slow one) computed once per replica."""
    if raw not in _ALL_DATA:
        _ALL_DATA[raw] = list(leaf_all_data_files(raw))
    return _leaf_pipeline(raw, all_data=_ALL_DATA[raw], **options)


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    return make_tiny_sd19(tmp_path_factory.mktemp("sd19"), scale=SCALE, packaging="dir", fields=FIELDS)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A smaller replica for the JSON layout (LEAF's JSON takes ~20 bytes a pixel)."""
    return make_tiny_sd19(tmp_path_factory.mktemp("sd19s"), scale=0.003, packaging="dir")


CASES = {
    "default": ({}, dict(k=None)),         # no -k: no user removal, no '_keep_' in the names
    "niid-0.05": (dict(sample="niid", fraction=0.05, min_samples=0, split="sample"),
                  dict(s="niid", sf=0.05, k=0, t="sample")),
}


def _flat(files):
    users, ys, xs = [], [], []
    for _, d in files:
        for u in d["users"]:
            users += [u] * len(d["user_data"][u]["y"])
            ys += d["user_data"][u]["y"]
            xs += d["user_data"][u]["x"]
    return users, np.array(ys), np.array(xs).reshape(-1, 28, 28)


def _built_split(out, part):
    names = file_names(part)
    users = (out / "femnist-users.txt").read_text().splitlines()
    meta = read_idx(out / names["metadata"])
    return ([users[i] for i in meta[:, 0]], np.asarray(read_idx(out / names["labels"])),
            np.asarray(read_idx(out / names["images"])))


def _idx_build_equals_leaf_transcription(sd19, tmp_path, case, all_data_files):
    ours, theirs = CASES[case]
    expected = leaf_pipeline(sd19, **theirs)
    manifest = build_femnist(sd19, tmp_path / "out", FemnistBuildConfig(**ours), workers=2)
    assert len(expected["all_data"]) == all_data_files
    for part in ("train", "test"):
        users, ys, xs = _flat(expected[part])
        got_users, got_y, got_x = _built_split(tmp_path / "out", part)
        assert got_users == users                       # same writers, same order
        assert got_y.tolist() == ys.tolist()            # same classes
        # idx holds 255 - LEAF's value (ink high); LEAF's x is value / 255
        assert np.abs((255 - got_x.astype(float)) / 255 - xs).max() <= 1 / 255 + 1e-12
        assert manifest.datasets["femnist"].counts[part] == len(ys)
        assert manifest.parameters["writer_counts"][part] == dict(collections.Counter(users))


# the fast suite compares the small replica (every field, one all_data file); the larger one
# spans two of LEAF's all_data files (100 writers a file) and takes a minute (make test-slow)
@pytest.mark.parametrize("case", sorted(CASES))
def test_idx_build_equals_leaf_transcription(small, tmp_path, case):
    _idx_build_equals_leaf_transcription(small, tmp_path, case, 1)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_idx_build_equals_leaf_transcription_two_all_data_files(raw, tmp_path, case):
    _idx_build_equals_leaf_transcription(raw, tmp_path, case, 2)


@pytest.mark.parametrize("case", sorted(CASES))
def test_leaf_layout_is_the_json_leaf_writes(small, tmp_path, case):
    ours, theirs = CASES[case]
    expected = leaf_pipeline(small, **theirs)
    out = tmp_path / "leaf"
    build_femnist(small, out, FemnistBuildConfig(layout="leaf", **ours), workers=2)
    for folder in ("all_data", "train", "test"):
        names = sorted(p.name for p in (out / "data" / folder).iterdir())
        assert names == sorted(n for n, _ in expected[folder])
        for name, data in expected[folder]:
            # byte for byte what LEAF's json.dump writes
            assert (out / "data" / folder / name).read_bytes() == json.dumps(data).encode(), name
    assert (out / "meta" / "sampling_seed.txt").read_text().splitlines()[-1] == "1549786595"
    back = read_leaf_folder(out)
    assert sorted(back) == ["all_data", "test", "train"]


@pytest.mark.slow   # the options need the larger replica's writers (min_samples 150)
@pytest.mark.parametrize("theirs,ours", [
    (dict(s="iid", sf=0.1, iu=0.05, k=0, t="sample"), dict(sample="iid", fraction=0.1, iid_users=0.05)),
    (dict(s="niid", sf=0.3, k=50, t="user", tf=0.8, smplseed=3, spltseed=4),
     dict(fraction=0.3, min_samples=50, split="user", train_fraction=0.8, seed=3, split_seed=4)),
    (dict(s=None, k=150, t="sample", tf=0.5), dict(sample=None, min_samples=150, train_fraction=0.5)),
])
def test_other_leaf_options_match(raw, tmp_path, theirs, ours):
    expected = leaf_pipeline(raw, **theirs)
    build_femnist(raw, tmp_path / "o", FemnistBuildConfig(**ours), workers=1)
    for part in ("train", "test"):
        users, ys, _ = _flat(expected[part])
        got_users, got_y, _ = _built_split(tmp_path / "o", part)
        assert users, f"no {part} writer is left with these options: the comparison would be empty"
        assert got_users == users
        assert got_y.tolist() == ys.tolist()


def test_rebuild_gives_the_same_bytes_and_cli(small, tmp_path):
    a = build_femnist(small, tmp_path / "a", FemnistBuildConfig(fraction=0.05), workers=2)
    assert main(["build", "femnist", "--sd19", str(small), "--out", str(tmp_path / "b"),
                 "--sf", "0.05", "--workers", "1", "--no-progress"]) == 0
    b = json.loads((tmp_path / "b" / "manifest.json").read_text())
    # the builder returns the manifest it wrote: what is on disk, and the CLI's
    assert a.to_dict() == json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert a.outputs == b["outputs"]
    assert b["parameters"]["leaf"]["--sf"] == 0.05
    assert b["parameters"]["leaf"]["--smplseed"] == 1549786595


def test_loads_with_writer_ids(small, tmp_path):
    import mnistforge

    build_femnist(small, tmp_path / "o", FemnistBuildConfig(fraction=0.05), workers=1)
    ds = mnistforge.load("femnist", "train", root=tmp_path / "o", with_metadata=True)
    users = (tmp_path / "o" / "femnist-users.txt").read_text().splitlines()
    assert ds.metadata.dtype.names[0] == "writer_id"
    # LEAF's user of each row is its writer folder: fWWWW_TT of the row's NIST writer
    for wid, writer in zip(ds.metadata["writer_id"], ds.metadata["writer"]):
        assert users[wid].startswith(f"f{writer:04d}_")


def test_synthetic_by_class_and_by_write_hold_identical_pngs(tmp_path):
    """SD19's by_class and by_write hold byte-identical PNGs of each character; so does the
    replica (LEAF's match_hashes.py relies on it), zipped or not."""
    zipped = make_tiny_sd19(tmp_path, scale=0.003, packaging="zip")
    src = open_sd19(zipped)

    def pngs(top):
        with zipfile.ZipFile(zipped / f"{top}.zip") as zf:
            return {n: zf.read(n) for n in zf.namelist()
                    if n.endswith(".png") and (top == "by_write" or "/hsf_" in n)}

    bw, bc = pngs("by_write"), pngs("by_class")
    by_md5 = collections.defaultdict(set)
    for n, b in bc.items():
        by_md5[hashlib.md5(b).hexdigest()].add(n.split("/")[1])
    assert collections.Counter(hashlib.md5(b).digest() for b in bw.values()) == \
        collections.Counter(hashlib.md5(b).digest() for b in bc.values())
    for row in range(0, len(src.index), 97):
        name = src.member_name(row)
        folder = f"{int(src.index['ascii'][row]):02x}"
        assert folder in by_md5[hashlib.md5(bw[name]).hexdigest()], name


def test_verify_a_femnist_build_and_its_leaf_folder(small, tmp_path):
    from mnistforge.checks import verify

    build_femnist(small, tmp_path / "idx", FemnistBuildConfig(fraction=0.5), workers=1)
    build_femnist(small, tmp_path / "leaf", FemnistBuildConfig(fraction=0.5, layout="leaf"), workers=1)
    rep = verify(tmp_path / "idx", near=False)
    by = {r.name: r for r in rep.results}
    assert by["femnist.parameters"].values["leaf"]["--sf"] == 0.5
    tr = by["femnist.writers[train]"].values
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert tr["samples"] == manifest["datasets"]["femnist"]["train"]
    assert sorted(tr["counts"].values()) == sorted(manifest["parameters"]["writer_counts"]["train"].values())
    shared = by["femnist.train-test"].values
    # every image on both sides is one SD19 character LEAF's group_by_writer.py doubled
    assert shared["test_images_in_train"] == shared["same_sd19_character"]

    leaf = verify(tmp_path / "leaf" / "data")
    lby = {r.name: r for r in leaf.results}
    p = lby["femnist.parameters"].values["leaf"]
    assert (p["-s"], p["--sf"], p.get("-k"), p["--tf"]) == ("niid", 0.5, None, 0.9)
    assert p["--smplseed"] == 1549786595 and p["--spltseed"] == 1549786796
    # the same data in both layouts: the same counts per writer and class
    assert lby["femnist.writers[train]"].values["per_class"] == tr["per_class"]
    assert lby["femnist.train-test"].values["test_images_in_train"] == shared["test_images_in_train"]


def test_export_hf_has_writer_id_column(small, tmp_path):
    pytest.importorskip("datasets")
    import pyarrow.parquet as pq

    out = tmp_path / "b"
    build_femnist(small, out, FemnistBuildConfig(fraction=0.5), workers=1)
    assert main(["export", "hf", str(out), "--out", str(tmp_path / "hf"), "--no-progress"]) == 0
    users = (out / "femnist-users.txt").read_text().splitlines()
    counts = json.loads((out / "manifest.json").read_text())["parameters"]["writer_counts"]
    for part in ("train", "test"):  # (over 1,000 rows: several shards)
        t = pq.ParquetDataset(sorted((tmp_path / "hf").rglob(f"{part}-*.parquet"))).read()
        assert "writer_id" in t.column_names
        got = collections.Counter(users[i] for i in t.column("writer_id").to_pylist())
        assert dict(got) == counts[part]


def test_registry_entry():
    from mnistforge.registry import get_dataset

    d = get_dataset("femnist")
    assert d.classes[:10] == tuple("0123456789") and d.classes[10] == "A" and d.classes[36] == "a"
    assert d.metadata_fields[0] == "writer_id"
    for part in ("train", "test"):
        sp = d.split(part)
        assert (sp.images, sp.labels, sp.metadata) == tuple(file_names(part)[k] for k in
                                                             ("images", "labels", "metadata"))


def test_without_the_repeated_first_image(small, tmp_path):
    """--no-repeat-first: all_data holds each SD19 character once (LEAF's holds one more a writer
    but the first), and no image of one character lands on both sides."""
    src = open_sd19(small)
    m = build_femnist(small, tmp_path / "a", FemnistBuildConfig(repeat_first=False), workers=1)
    exact = build_femnist(small, tmp_path / "b", FemnistBuildConfig(), workers=1)
    writers = len({(int(r["hsf"]), int(r["writer"]), int(r["template"])) for r in src.index})
    assert m.parameters["all_data"]["samples"] == len(src.index)
    assert exact.parameters["all_data"]["samples"] == len(src.index) + writers - 1
    rows = {p: read_idx(tmp_path / "a" / file_names(p)["metadata"])[:, 5] for p in ("train", "test")}
    assert not set(rows["train"].tolist()) & set(rows["test"].tolist())
    assert len(set(rows["train"].tolist())) == len(rows["train"])


@pytest.mark.slow
def test_full_scale_build(tmp_path):
    """The full-scale replica (814,255 characters): every character in all_data, each writer
    folder but the first once more, a writer per folder, LEAF's 62 classes, a rebuild of the
    same bytes from the cached index (the LEAF transcription at this scale: bench_femnist.py)."""
    from mnistforge.sd19.synth import SynthConfig, synthesize_sd19

    sd19 = synthesize_sd19(tmp_path / "sd19", SynthConfig(scale=1, hierarchies=("by_write", "by_class")),
                           progress=False)
    src = open_sd19(sd19)
    assert len(src.index) == 814_255
    m = build_femnist(sd19, tmp_path / "a")
    folders = len({(int(h), int(w), int(t)) for h, w, t in
                   zip(src.index["hsf"], src.index["writer"], src.index["template"])})
    assert m.parameters["all_data"] == {"users": folders, "samples": 814_255 + folders - 1}
    counts = m.datasets["femnist"].counts
    assert counts["train"] + counts["test"] <= 814_255 + folders - 1
    labels = np.asarray(read_idx(tmp_path / "a" / file_names("train")["labels"]))
    assert set(np.unique(labels).tolist()) == set(range(62))
    again = build_femnist(sd19, tmp_path / "b")
    assert again.outputs == m.outputs
