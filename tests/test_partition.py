"""Partitions as data (issue 46): a partition manifest of a synthetic FEMNIST build re-maps onto a
shuffled third-party copy with the same partitions; an edited manifest is refused, naming the
partition; Flower Datasets' partitioners (the [fl] extra) give byte-identical manifests for one seed.

The manifest checks need no Flower: their manifests are written here by hand from row ids computed
with NumPy (one partition per writer, as NaturalIdPartitioner makes them).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json

import numpy as np
import pytest

import mnistforge
from mnistforge.cli import main
from mnistforge.errors import IntegrityError
from mnistforge.loaders.partitions import content_hash, read_partitions
from sd19_helpers import make_tiny_sd19

needs_fl = pytest.mark.skipif(importlib.util.find_spec("flwr_datasets") is None,
                              reason="needs the [fl] extra (flwr-datasets): pip install 'mnistforge[fl]'")


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """A FEMNIST build of a small synthetic SD19 (digits: 7 writers, 728 train rows)."""
    from mnistforge.builders.femnist import build_femnist

    base = tmp_path_factory.mktemp("partition")
    build_femnist(make_tiny_sd19(base, scale=0.002, fields="d"), base / "femnist")
    return base / "femnist"


@pytest.fixture(scope="module")
def train(build):
    return mnistforge.load("femnist", "train", root=build, with_metadata=True)


@pytest.fixture(scope="module")
def shuffled(train, tmp_path_factory):
    """(the permutation, the train split shuffled and written as a Keras-style .npz: a third-party copy)."""
    perm = np.random.default_rng(7).permutation(len(train))
    path = tmp_path_factory.mktemp("copy") / "femnist-copy.npz"
    np.savez(path, x_train=train.images[perm], y_train=train.labels[perm])
    return perm, path


def by_writer(train):
    """One partition per writer, writers sorted (NaturalIdPartitioner's ids), rows in order."""
    writers = train.metadata["writer_id"]
    return [np.flatnonzero(writers == w) for w in np.unique(writers)]


def counts(labels):
    """Rows per label present, keyed by the label as text (JSON's keys)."""
    return {str(k): int(v) for k, v in zip(*np.unique(labels, return_counts=True))}


def manifest_of(train, parts, natural_ids=None):
    """A partition manifest written by hand (the format of docs/federated.md)."""
    return {"format": "mnistforge-partitions", "version": 1, "dataset": "femnist", "split": "train",
            "rows": len(train), "content_sha256": content_hash(train),
            "partitioner": {"class": "NaturalIdPartitioner", "params": {"partition_by": "writer_id"}, "seed": 0},
            "partitions": [{"id": i, "size": len(r), "rows": r.tolist(),
                            "rows_sha256": hashlib.sha256(r.astype(">i8").tobytes()).hexdigest(),
                            "label_counts": counts(train.labels[r]),
                            **({} if natural_ids is None else {"natural_id": int(natural_ids[i])})}
                           for i, r in enumerate(parts)]}


def write(doc, path):
    path.write_text(json.dumps(doc))
    return path


def test_a_manifest_re_maps_onto_a_shuffled_third_party_copy(train, build, shuffled, tmp_path):
    parts = by_writer(train)
    path = write(manifest_of(train, parts), tmp_path / "partitions.json")
    assert [r.tolist() for r in mnistforge.partition_rows(path, reference=build)] == [r.tolist() for r in parts]
    perm, npz = shuffled
    copy = mnistforge.load(npz, "train")
    rows = mnistforge.partition_rows(path, copy, reference=build)
    assert [len(r) for r in rows] == [len(r) for r in parts]
    for r, p in zip(rows, parts):
        # the same official rows (LEAF's doubled first images are told apart by nothing: as a set)
        assert sorted(perm[r].tolist()) == sorted(p.tolist())
        np.testing.assert_array_equal(copy.labels[r], train.labels[perm[r]])
        assert len(set(train.metadata["writer_id"][perm[r]].tolist())) == 1
    whole = np.concatenate(rows)
    assert sorted(whole.tolist()) == list(range(len(copy)))


def move_one_row(doc, fix_sha=False, labels=None):
    """Row 0 of partition 0 moved to partition 1; the recorded hashes (and counts, from ``labels``) updated."""
    doc["partitions"][1]["rows"].append(doc["partitions"][0]["rows"].pop(0))
    for e in doc["partitions"][:2]:
        if fix_sha:
            e["rows_sha256"] = hashlib.sha256(np.asarray(e["rows"], ">i8").tobytes()).hexdigest()
        if labels is not None:
            e["label_counts"] = counts(labels[e["rows"]])


@pytest.mark.parametrize("fix,words", [
    ({}, "partition 0: its rows are not those its rows_sha256 records"),
    ({"fix_sha": True}, "partition 0: label counts differ"),
    ({"fix_sha": True, "fix_counts": True}, "partition 0: not the rows of writer 0"),
])
def test_a_manifest_with_one_row_moved_is_refused_by_name(train, build, tmp_path, fix, words):
    parts = by_writer(train)
    doc = manifest_of(train, parts, natural_ids=range(len(parts)))
    move_one_row(doc, fix_sha=fix.get("fix_sha", False), labels=train.labels if fix.get("fix_counts") else None)
    with pytest.raises(IntegrityError, match=words):
        mnistforge.partition_rows(write(doc, tmp_path / "p.json"), reference=build)


def test_a_manifest_of_other_data_or_counts_is_refused(train, build, tmp_path):
    doc = manifest_of(train, by_writer(train))
    other = {**doc, "content_sha256": {**doc["content_sha256"], "labels": "0" * 64}}
    with pytest.raises(IntegrityError, match="the manifest does not partition femnist train"):
        mnistforge.partition_rows(other, reference=build)
    doc["partitions"][2]["label_counts"]["0"] += 1
    with pytest.raises(IntegrityError, match=r"partition 2: label counts differ"):
        mnistforge.partition_rows(doc, reference=build)


def test_a_copy_that_lacks_rows_or_relabels_them_is_refused(train, build, shuffled, tmp_path):
    path = write(manifest_of(train, by_writer(train)), tmp_path / "partitions.json")
    test = mnistforge.load("femnist", "test", root=build)
    with pytest.raises(IntegrityError, match=r"partition 0: not in the copy as recorded.*rows missing"):
        mnistforge.partition_rows(path, test, reference=build)
    perm, npz = shuffled
    copy = mnistforge.load(npz, "train")
    copy.labels = copy.labels.copy()
    first = int(np.flatnonzero(perm == by_writer(train)[3][0])[0])   # a row of partition 3
    copy.labels[first] = (copy.labels[first] + 1) % 10
    with pytest.raises(IntegrityError, match=r"partition 3: not in the copy as recorded.*relabelled rows"):
        mnistforge.partition_rows(path, copy, reference=build)


def test_verify_partitions_on_the_command_line(train, build, shuffled, tmp_path, capsys):
    path = write(manifest_of(train, by_writer(train)), tmp_path / "partitions.json")
    _, npz = shuffled
    assert main(["verify", f"{npz}:train", "--partitions", str(path), "--reference", str(build)]) == 0
    assert "all 7 partitions" in capsys.readouterr().out
    assert main(["verify", f"{build}:train", "--partitions", str(tmp_path)]) == 0   # the folder holding it
    doc = json.loads(path.read_text())
    move_one_row(doc)
    assert main(["verify", f"{npz}:train", "--partitions", str(write(doc, path)), "--reference", str(build)]) == 1
    assert "partition 0: its rows are not" in capsys.readouterr().err


@needs_fl
def test_writer_partitions_of_flower_re_map_onto_the_shuffled_copy(train, build, shuffled, tmp_path):
    assert main(["partition", f"{build}:train", "--by", "writer", "--out", str(tmp_path / "p"), "--parquet"]) == 0
    doc = read_partitions(tmp_path / "p")
    assert doc["partitioner"]["class"] == "NaturalIdPartitioner" and doc["flwr_datasets"]
    assert sorted(sorted(e["rows"]) for e in doc["partitions"]) == sorted(r.tolist() for r in by_writer(train))
    perm, npz = shuffled
    rows = mnistforge.partition_rows(tmp_path / "p", mnistforge.load(npz, "train"), reference=build)
    assert [sorted(perm[r].tolist()) for r in rows] == [sorted(e["rows"]) for e in doc["partitions"]]
    import pyarrow.parquet as pq

    for e in doc["partitions"]:
        f = tmp_path / "p" / e["parquet"]["file"]
        assert hashlib.sha256(f.read_bytes()).hexdigest() == e["parquet"]["sha256"]
        table = pq.read_table(f)
        assert table.column("row_id").to_pylist() == e["rows"]
        assert set(table.column("writer_id").to_pylist()) == {e["natural_id"]}


@needs_fl
@pytest.mark.parametrize("by", ["dirichlet", "iid"])
def test_seeded_partitions_are_byte_identical(build, tmp_path, by):
    runs = []
    for k in range(2):
        out = tmp_path / f"run{k}"
        assert main(["partition", f"{build}:train", "--by", by, "--partitions", "3", "--seed", "11",
                     "--out", str(out)] + (["--parquet"] if by == "iid" else [])) == 0
        runs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert runs[0] == runs[1] and len(runs[0]) == (4 if by == "iid" else 1)
    doc = json.loads(runs[0]["partitions.json"])
    assert doc["partitioner"]["seed"] == 11 and len(doc["partitions"]) == 3
    assert sorted(r for e in doc["partitions"] for r in e["rows"]) == list(range(doc["rows"]))
    other = tmp_path / "other-seed"
    assert main(["partition", f"{build}:train", "--by", by, "--partitions", "3", "--seed", "12",
                 "--out", str(other)]) == 0
    assert (other / "partitions.json").read_bytes() != runs[0]["partitions.json"]
