"""Issue 43, hostile uses of ``overlap``: tables that are not the published ones, an SD19 source
other than the build's, a build whose SD19 has moved, a built MNIST without its QMNIST, an
output that is an input."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from mnistforge.checks.identity import row_identities
from mnistforge.checks.overlap import overlap
from mnistforge.cli import main
from mnistforge.errors import ConfigError, FormatError
from mnistforge.io.idx import write_idx
from sd19_helpers import make_tiny_sd19


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    base = tmp_path_factory.mktemp("faults-overlap")
    sd19 = make_tiny_sd19(base / "src", scale=0.002)
    assert main(["build", "all", "--sd19", str(sd19), "--out", str(base / "all"), "--workers", "1"]) == 0
    return base, sd19


def test_tables_of_a_build_are_not_the_published_ones(tmp_path, capsys):
    # a build's QMNIST table names other digits: read as MNIST's it would give wrong identities
    write_idx(tmp_path / "qmnist-test-labels-idx2-int.gz", np.zeros((120, 8), np.int32))
    with pytest.raises(FormatError, match="not a published QMNIST table"):
        row_identities("mnist:test", tables=tmp_path)
    assert main(["overlap", "mnist:test", "qmnist:test50k", "--tables", str(tmp_path)]) == 1
    assert "60,000 rows of 8 columns" in capsys.readouterr().err


def test_a_labels_file_under_the_tables_name(tmp_path):
    write_idx(tmp_path / "qmnist-train-labels-idx2-int.gz", np.zeros(60_000, np.uint8))
    with pytest.raises(FormatError, match="not a published QMNIST table"):
        row_identities("mnist:train", tables=tmp_path)


def test_another_sd19_than_the_builds_is_refused(build, tmp_path):
    base, _ = build
    other = make_tiny_sd19(tmp_path, scale=0.002, seed=1)
    with pytest.raises(ConfigError, match="not the one the build was made from"):
        row_identities(f"{base}/all/qmnist:qmnist:test", sd19=other)


def test_a_build_whose_sd19_moved_compares_by_writer_only(build, tmp_path):
    base, sd19 = build
    moved = tmp_path / "moved"
    shutil.copytree(base / "all", moved)
    shutil.move(sd19, tmp_path / "elsewhere")
    try:
        a, b = f"{moved}/qmnist:qmnist:test", f"{moved}/emnist:emnist-digits:train"
        with pytest.raises(ConfigError, match="--sd19"):
            overlap(a, b)
        assert overlap(a, b, "writer").shared_writers is not None
        o = overlap(a, b, sd19=tmp_path / "elsewhere")    # the source given where it is now
        assert o.key == "character"
    finally:
        shutil.move(tmp_path / "elsewhere", sd19)


def test_a_built_mnist_without_its_qmnist(build, tmp_path):
    base, _ = build
    shutil.copytree(base / "all" / "mnist", tmp_path / "all" / "mnist")
    with pytest.raises(ConfigError, match="no row identities"):
        row_identities(f"{tmp_path}/all/mnist:mnist:test")


def test_a_split_with_itself_and_a_slice(build):
    base, _ = build
    t = f"{base}/all/mnist:mnist:test"
    o = overlap(t, t)
    assert o.shared_characters == o.rows["a"] == len(o.shared_rows["a"])
    s = overlap(f"{t}[:5]", f"{base}/all/qmnist:qmnist:test")
    assert s.rows["a"] == 5 and s.shared_characters == 5


def test_json_onto_an_input_is_refused_before_any_work(build, capsys):
    base, _ = build
    table = base / "all" / "qmnist" / "qmnist-test-labels-idx2-int.gz"
    before = table.read_bytes()
    assert main(["overlap", f"{base}/all/qmnist:qmnist:test", f"{base}/all/qmnist:qmnist:train",
                 "--json", str(table)]) == 2
    assert table.read_bytes() == before
