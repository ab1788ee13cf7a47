"""Issue 46: `export hf --num-shards` as a hostile user gives it: absurd counts, more shards than
a split has rows, both shard options at once, the option where it means nothing. Each is a usage
error naming the option, the value found and what to do, with nothing written."""
from __future__ import annotations

import numpy as np
import pytest
from faults_helpers import cli

from mnistforge.errors import ConfigError

pytest.importorskip("datasets", reason="datasets (the [hf] extra) is not installed")


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """An export of 400 train and 40 test rows, in 2 shards each (the input of the commands below)."""
    from mnistforge.hub import ExportConfig, export_hf

    rng = np.random.default_rng(0)
    images, labels = rng.integers(0, 256, (440, 28, 28), dtype=np.uint8), rng.integers(0, 10, 440)
    cfg = ExportConfig("mnist", {"train": (images[:400], labels[:400]), "test": (images[400:], labels[400:])},
                       [str(i) for i in range(10)])
    out = tmp_path_factory.mktemp("shards") / "hf"
    export_hf(out, [cfg], workers=1, num_shards=2)
    return out


def _nothing_written(out):
    assert not out.exists() and not any(out.parent.glob(f"{out.name}*")), sorted(out.parent.iterdir())


@pytest.mark.parametrize("value", ["0", "-3", "2.5", "many", "1e3"])
def test_an_absurd_shard_count_is_a_usage_error(export, tmp_path, value):
    r = cli("export", "hf", export, "--out", tmp_path / "o", f"--num-shards={value}")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "--num-shards" in r.stderr and value in r.stderr, r.stderr
    _nothing_written(tmp_path / "o")


def test_more_shards_than_a_split_has_rows_is_refused_naming_the_split(export, tmp_path):
    """train (400 rows) could take 100 shards; test (40 rows) cannot: refused, nothing left."""
    r = cli("export", "hf", export, "--out", tmp_path / "o", "--num-shards", "100", "--workers", "1")
    assert r.returncode == 2, r.stdout + r.stderr
    for part in ("--num-shards 100", "mnist/test", "40 rows", "1..40", "lower --num-shards"):
        assert part in r.stderr, (part, r.stderr)
    _nothing_written(tmp_path / "o")


def test_a_shard_count_and_a_shard_size_together_are_refused(export, tmp_path):
    r = cli("export", "hf", export, "--out", tmp_path / "o", "--num-shards", "4", "--max-shard-mb", "1")
    assert r.returncode == 2 and "--max-shard-mb" in r.stderr and "--num-shards" in r.stderr, r.stderr
    _nothing_written(tmp_path / "o")


def test_a_shard_count_for_torchvision_is_refused(export, tmp_path):
    r = cli("export", "torchvision", export, "--out", tmp_path / "o", "--num-shards", "4")
    assert r.returncode == 2 and "--num-shards: only for `export hf`" in r.stderr, r.stderr
    _nothing_written(tmp_path / "o")


@pytest.mark.parametrize("count", [0, -1, 41])
def test_the_api_refuses_a_count_the_split_cannot_take(tmp_path, count):
    from mnistforge.hub import ExportConfig, export_hf

    cfg = ExportConfig("toy", {"test": (np.zeros((40, 28, 28), np.uint8), np.zeros(40, int))}, ["0"])
    with pytest.raises(ConfigError, match=f"--num-shards {count} for toy/test of 40 rows"):
        export_hf(tmp_path / "o", [cfg], workers=1, num_shards=count)
    _nothing_written(tmp_path / "o")


def test_shards_swapped_in_place_are_named_by_their_row_ids(export, tmp_path):
    """Two shards swapped (same names, each other's rows): the check names the hashes and the
    rows out of order (the row_id column), never loads the rows shuffled silently."""
    import shutil

    from mnistforge.errors import CheckFailed
    from mnistforge.hub import verify_repo

    repo = tmp_path / "hf"
    shutil.copytree(export, repo)
    a, b = sorted((repo / "data" / "mnist").glob("train-*.parquet"))[:2]
    a_bytes = a.read_bytes()
    a.write_bytes(b.read_bytes())
    b.write_bytes(a_bytes)
    with pytest.raises(CheckFailed) as e:
        verify_repo(repo, with_datasets=False)
    assert f"{a.name}: row_id is not 0..199 in order" in str(e.value), str(e.value)
    assert "holds the content of" in str(e.value)


def test_writers_asked_for_where_they_are_not_known_are_refused(export, tmp_path):
    """An export of MNIST-named rows (not the official files: their order is not known to be QMNIST's)."""
    r = cli("export", "hf", export, "--out", tmp_path / "o", "--writers")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "--writers: the writers of mnist train's rows are not known" in r.stderr and "without --writers" in r.stderr
    _nothing_written(tmp_path / "o")


def test_writers_of_mnist_offline_without_qmnists_table_name_the_file(mnist_reference, cache, tmp_path):
    r = cli("export", "hf", f"{mnist_reference}:test", "--out", tmp_path / "o", "--writers")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "qmnist/qmnist-test-labels-idx2-int.gz is not in the cache" in r.stderr, r.stderr
    _nothing_written(tmp_path / "o")
