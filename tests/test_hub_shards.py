"""Issue 46, exports for many readers: a default shard count that the usual world sizes divide
(120 for 60,000 rows), ``--num-shards``, the ``row_id`` column and the shard sizes in the card,
and ``datasets.distributed.split_dataset_by_node`` handing each node whole shards so that every
row is read exactly once (huggingface/datasets#6623: otherwise every node reads everything)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mnistforge.cli import main
from mnistforge.hub import ExportConfig, export_hf
from mnistforge.io.hf.parquet import MIN_SHARD_ROWS, READER_COUNTS, shard_bounds, shard_count

pytest.importorskip("datasets", reason="datasets (the [hf] extra) is not installed")
pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow (the [hf] extra) is not installed")

WORLD_SIZES = (2, 3, 4)


def toy(n, side=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, side, side), dtype=np.uint8), rng.integers(0, 10, n)


def rows_by_node(repo, config, split, world, tmp_path, columns=("row_id",), shards=120):
    """``{column: values}`` of the rows each of ``world`` nodes streams from the export."""
    import datasets
    from datasets.distributed import split_dataset_by_node

    ds = datasets.load_dataset(str(repo), config, split=split, streaming=True,
                               cache_dir=str(tmp_path / "hf-cache")).select_columns(list(columns))
    assert ds.num_shards == shards  # one per file
    nodes = []
    for rank in range(world):
        node = split_dataset_by_node(ds, rank=rank, world_size=world)
        if ds.num_shards % world == 0:  # whole shards, not every row read and skipped
            assert node.num_shards == ds.num_shards // world
        batches = list(node.iter(batch_size=1_000))  # (row by row: 10x slower)
        nodes.append({c: sum((b[c] for b in batches), []) for c in columns})
    return nodes


def assert_every_row_once(repo, config, split, n, tmp_path, shards):
    for world in WORLD_SIZES:
        nodes = rows_by_node(repo, config, split, world, tmp_path, shards=shards)
        got = np.sort(sum((node["row_id"] for node in nodes), []))
        assert np.array_equal(got, np.arange(n)), world  # each row once, none missing
        if shards % world == 0:  # equal-row shards: the nodes' loads differ by a shard at most
            sizes = [len(node["row_id"]) for node in nodes]
            assert max(sizes) - min(sizes) <= n // shards + 1


def shard_row_ids(repo, files):
    return [pq.read_table(repo / f, columns=["row_id"]).column("row_id").to_pylist() for f in files]


def test_the_default_count_is_divisible_by_the_reader_counts_where_the_split_is_big_enough():
    assert shard_count(60_000) == 120 and all(120 % k == 0 for k in READER_COUNTS)
    assert shard_count(10_000) == 12  # Fashion-MNIST's test: 500 rows a shard at least
    for n in (0, 1, 499, 999, 1_000, 2_500, 6_000, 12_345, 30_000, 59_999, 697_932):
        c = shard_count(n)
        assert 1 <= c <= 120 and (c == 1 or n // c >= MIN_SHARD_ROWS), n
        divisors = sum(c % k == 0 for k in READER_COUNTS)
        fits = range(1, max(1, min(120, n // MIN_SHARD_ROWS)) + 1)
        assert all(sum(d % k == 0 for k in READER_COUNTS) <= divisors for d in fits), n


def test_60000_rows_are_cut_into_120_equal_shards_in_order():
    assert shard_bounds(np.arange(60_001) * 250) == [(500 * i, 500 * i + 500) for i in range(120)]
    # a size cap raises the count to the next multiple of the default (keeping its divisors)
    assert len(shard_bounds(np.arange(60_001) * 250, max_shard_bytes=100_000)) == 240


def test_120_shards_are_shared_out_whole_and_every_node_reads_each_row_once(tmp_path):
    """The Fashion-MNIST test below at 1/50 of its size (120 shards of 10 rows): always runs."""
    cfg = ExportConfig("toy", {"train": toy(1_200), "test": toy(3_000, seed=1)}, [str(i) for i in range(10)])
    train, = export_hf(tmp_path / "r", [cfg], workers=1, num_shards=120)["configs"][0]["splits"][:1]
    assert train["files"] == [f"data/toy/train-{i:05d}-of-00120.parquet" for i in range(120)]
    assert train["shard_rows"] == [10] * 120
    # rows in order, contiguous: shard i holds rows 10 i .. 10 i + 9
    assert shard_row_ids(tmp_path / "r", train["files"]) == [list(range(10 * i, 10 * i + 10)) for i in range(120)]
    card = (tmp_path / "r" / "README.md").read_text()
    low, high = min(train["shard_bytes"]), max(train["shard_bytes"])
    assert f"| `toy` | `train` | 1,200 | 120 | 10 | {low:,}-{high:,} |" in card
    assert_every_row_once(tmp_path / "r", "toy", "train", 1_200, tmp_path, 120)

    summary = export_hf(tmp_path / "d", [cfg], workers=1)  # the default count of a small split
    assert [len(s["files"]) for s in summary["configs"][0]["splits"]] == [2, 6] == [shard_count(1_200),
                                                                                 shard_count(3_000)]
    assert "| `toy` | `test` | 3,000 | 6 | 500 |" in (tmp_path / "d" / "README.md").read_text()
    assert_every_row_once(tmp_path / "d", "toy", "test", 3_000, tmp_path, 6)  # 4 nodes, 6 shards: rows skipped


def test_num_shards_is_honoured_and_a_re_export_keeps_one_row_id(tmp_path, cache):
    images, labels = toy(1_000, side=28)
    cfg = ExportConfig("mnist", {"train": (images[:700], labels[:700]), "test": (images[700:], labels[700:])},
                       [str(i) for i in range(10)])
    export_hf(tmp_path / "a", [cfg], workers=1)
    assert main(["export", "hf", str(tmp_path / "a"), "--out", str(tmp_path / "b"), "--num-shards", "7",
                 "--workers", "1", "--json", str(tmp_path / "out.json")]) == 0
    assert json.loads((tmp_path / "out.json").read_text())["configs"] == {"mnist": {"train": 700, "test": 300}}
    for split, n in (("train", 700), ("test", 300)):
        files = sorted((tmp_path / "b" / "data" / "mnist").glob(f"{split}-*.parquet"))
        assert [f.name for f in files] == [f"{split}-{i:05d}-of-00007.parquet" for i in range(7)]
        ids = shard_row_ids(tmp_path / "b", files)
        assert sum(ids, []) == list(range(n))
        assert max(map(len, ids)) - min(map(len, ids)) <= 1
    # the re-export read the first export's rows, and wrote one row_id column of its own
    table = pq.read_table(tmp_path / "b" / "data" / "mnist" / "test-00000-of-00007.parquet")
    assert table.column_names == ["image", "label", "row_id"]
    assert table.column("label").to_pylist() == labels[700:743].tolist()


def test_fashion_mnist_train_has_120_shards_read_once_by_2_3_and_4_nodes(fashion_dir, tmp_path, cache):
    """The issue's acceptance test, on Debian's Fashion-MNIST files (skipped without them)."""
    import mnistforge

    repo = tmp_path / "hf"
    assert main(["export", "hf", f"{fashion_dir}:train", "--out", str(repo), "--workers", "2", "--no-check"]) == 0
    files = sorted((repo / "data" / "fashion-mnist").glob("train-*.parquet"))
    assert [f.name for f in files] == [f"train-{i:05d}-of-00120.parquet" for i in range(120)]
    labels = mnistforge.load("fashion-mnist", "train", root=fashion_dir).labels
    for world in WORLD_SIZES:
        nodes = rows_by_node(repo, "fashion-mnist", "train", world, tmp_path, ("row_id", "label"))
        ids = np.array(sum((node["row_id"] for node in nodes), []))
        assert np.array_equal(np.sort(ids), np.arange(60_000)), world
        # row_id is the row's index in the official order: its label is the official file's
        assert np.array_equal(sum((node["label"] for node in nodes), []), labels[ids])


def test_writers_of_official_mnist_come_from_qmnists_published_table(mnist_reference, qmnist_reference, cache,
                                                                     tmp_path):
    """``--writers``: MNIST's files record no writer; QMNIST's table of the same rows does. The
    oracle is QMNIST's other release of that table (the .tsv), not the idx file the export read."""
    import shutil

    (cache / "qmnist").mkdir(parents=True)
    shutil.copy(qmnist_reference / "qmnist-test-labels-idx2-int.gz", cache / "qmnist")
    repo = tmp_path / "hf"
    assert main(["export", "hf", f"{mnist_reference}:test", "--out", str(repo), "--writers", "--num-shards", "4",
                 "--workers", "2", "--no-check"]) == 0
    table = pq.ParquetDataset(sorted((repo / "data" / "mnist").glob("test-*.parquet"))).read()
    assert table.column_names == ["image", "label", "writer_id", "hsf", "row_id"]
    tsv = np.loadtxt(qmnist_reference / "qmnist-test-labels.tsv.gz", dtype=np.int64, max_rows=10_000)
    assert np.array_equal(table.column("label").to_numpy(), tsv[:, 0])  # the same rows, in order
    assert np.array_equal(table.column("writer_id").to_numpy(), tsv[:, 2])
    assert np.array_equal(table.column("hsf").to_numpy(), tsv[:, 1])
    assert "come from QMNIST's published table `qmnist-test-labels-idx2-int.gz`" in (repo / "README.md").read_text()
