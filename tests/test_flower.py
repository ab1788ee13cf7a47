"""Flower Datasets (the ``[fl]`` extra) partitions our Hugging Face exports by writer, unadapted.

An EMNIST build of a synthetic SD19 is exported with ``mnistforge export hf``, loaded with
``datasets.load_dataset`` and handed to ``NaturalIdPartitioner(partition_by="writer_id")`` as
Flower's documentation does it: each partition must hold exactly one writer's rows, and the
partition sizes must be the writer counts of the build's side files (the per-row writer
column named in its manifest).
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from sd19_helpers import make_tiny_sd19

flwr_datasets = pytest.importorskip(
    "flwr_datasets", reason="needs the [fl] extra (flwr-datasets): pip install 'mnistforge[fl]'")


@pytest.fixture(autouse=True)
def _hf_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    import datasets
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", Path(tmp_path / "hf-cache"))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(build folder, Hub export folder) of EMNIST letters from a small synthetic SD19."""
    from mnistforge.builders.emnist import build_emnist
    from mnistforge.cli import main

    base = tmp_path_factory.mktemp("fl")
    sd19 = make_tiny_sd19(base / "sd19", scale=0.005)
    build = base / "emnist"
    build_emnist(sd19, build, splits=["letters"], seed=3, workers=1)
    repo = base / "hf"
    assert main(["export", "hf", str(build), "--out", str(repo), "--workers", "1"]) == 0
    return build, repo


def writer_counts(build: Path, split: str) -> Counter:
    """Rows per writer from the build's side file, the column the manifest names ``writer``."""
    from mnistforge.io.idx import read_idx

    manifest = json.loads((build / "manifest.json").read_text())
    column = manifest["metadata_columns"].index("writer")
    side = read_idx(build / manifest["datasets"]["letters"]["files"][f"{split}-metadata"])
    return Counter(np.asarray(side)[:, column].tolist())


@pytest.mark.parametrize("split", ["train", "test"])
def test_natural_id_partitioner_gives_one_writer_per_partition(exported, split, tmp_path):
    import datasets
    from flwr_datasets.partitioner import NaturalIdPartitioner

    build, repo = exported
    ds = datasets.load_dataset(str(repo), "emnist-letters", split=split,
                               cache_dir=str(tmp_path / "dl-cache"))
    partitioner = NaturalIdPartitioner(partition_by="writer_id")
    partitioner.dataset = ds
    expected = writer_counts(build, split)
    assert len(expected) >= 10 and partitioner.num_partitions == len(expected)
    sizes = {}
    for pid in range(partitioner.num_partitions):
        part = partitioner.load_partition(pid)
        writers = set(part["writer_id"])
        assert writers == {partitioner.partition_id_to_natural_id[pid]}  # one writer, all its rows
        sizes[writers.pop()] = len(part)
    assert sizes == dict(expected)
    assert sum(sizes.values()) == len(ds)


def test_writer_split_sides_partition_into_disjoint_writers(exported):
    import mnistforge
    from flwr_datasets.partitioner import NaturalIdPartitioner
    from mnistforge.loaders import writer_split

    build, _ = exported
    pool = [mnistforge.load("emnist-letters", s, root=build, with_metadata=True)
            for s in ("train", "test")]
    sides = writer_split(pool, test_fraction=0.25, seed=0)
    natural = {}
    for side in ("train", "test"):
        p = NaturalIdPartitioner(partition_by="writer_id")
        p.dataset = getattr(sides, side).to_hf()        # to_hf names the writer column as the export
        natural[side] = set(p.partition_id_to_natural_id.values()) if p.num_partitions else set()
        assert p.num_partitions == sides.writers[side]
    assert natural["train"] and natural["test"] and not natural["train"] & natural["test"]
    assert natural["train"] | natural["test"] == set(writer_counts(build, "train")) | \
        set(writer_counts(build, "test"))
