"""Issue 41, ``mnistforge.compat``: a bad root, index, transform, flag or keyword raises
torchvision's exception type (TypeError, IndexError, ValueError) as a named error saying what
was expected; a root holding nothing names what was looked for."""
from __future__ import annotations

import numpy as np
import pytest

from mnistforge.cli import main
from mnistforge.compat import KMNIST
from mnistforge.errors import ArgumentKindError, ConfigError, IndexRangeError, IntegrityError, MissingFileError
from mnistforge.io.idx import write_idx


@pytest.fixture(scope="module")
def root(mnist_reference, tmp_path_factory):
    out = tmp_path_factory.mktemp("tv") / "root"
    assert main(["export", "torchvision", str(mnist_reference), "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def mnist(root):
    from mnistforge.compat import MNIST

    return MNIST(root, train=False)


@pytest.mark.parametrize("index", [10_000, -10_001, 2**70])
def test_an_index_out_of_range_says_the_range(mnist, index):
    with pytest.raises(IndexError) as e:
        mnist[index]
    assert isinstance(e.value, IndexRangeError) and "0..9999" in str(e.value)
    assert "-10000..-1" in str(e.value)


@pytest.mark.parametrize("index", [1.5, "3", True, None])
def test_an_index_that_is_no_integer_is_an_index_error_saying_so(mnist, index):
    with pytest.raises(IndexError, match="an index must be an integer"):
        mnist[index]


def test_integer_kinds_and_negative_indices_are_rows(mnist):
    assert mnist[np.int64(3)][1] == mnist[3][1] == mnist[-9997][1]


@pytest.mark.parametrize("kwargs,words", [
    (dict(transform=5), "transform cannot be called"),
    (dict(target_transform="x"), "target_transform cannot be called"),
    (dict(train="no"), "train is no bool"),
    (dict(download=1), "download is no bool"),
    (dict(foo=1), "unknown keyword 'foo'"),
])
def test_bad_arguments_are_type_errors_saying_what_was_expected(root, kwargs, words):
    from mnistforge.compat import MNIST

    kwargs = {"train": False, **kwargs}
    with pytest.raises(TypeError, match=words) as e:
        MNIST(root, **kwargs)
    assert isinstance(e.value, ArgumentKindError) and "expected" in str(e.value)


@pytest.mark.parametrize("bad_root", [None, 3, b"bytes"])
def test_a_root_that_is_no_path(bad_root):
    from mnistforge.compat import MNIST

    with pytest.raises(TypeError, match="root is no path"):
        MNIST(bad_root)


def test_emnist_and_qmnist_name_their_keywords_and_values():
    from mnistforge.compat import EMNIST, QMNIST

    with pytest.raises(TypeError, match="split, upright"):
        EMNIST("data", "digits", colour=True)
    with pytest.raises(ValueError, match="unknown EMNIST split 'digit'") as e:
        EMNIST("data", "digit")
    assert isinstance(e.value, ConfigError) and "digits" in str(e.value)
    with pytest.raises(ValueError, match="unknown QMNIST subset"):
        QMNIST("data", what="test20k")


def test_a_root_without_data_names_what_was_looked_for(tmp_path, monkeypatch):
    from mnistforge.compat import KMNIST

    monkeypatch.setenv("MNISTFORGE_HOME", str(tmp_path / "cache"))
    with pytest.raises(MissingFileError) as e:
        KMNIST(tmp_path, train=False)
    msg = str(e.value)
    assert "t10k-images-idx3-ubyte" in msg and str(tmp_path / "KMNIST" / "raw") in msg
    assert "download=True" in msg


def test_a_label_out_of_range_names_the_file_that_is_there(tmp_path):
    """The folder holds ``t10k-labels-idx1-ubyte`` (no .gz): the error named ``...ubyte.gz``."""
    raw = tmp_path / "KMNIST" / "raw"
    rng = np.random.default_rng(0)
    write_idx(raw / "t10k-images-idx3-ubyte", rng.integers(0, 256, (20, 28, 28), dtype=np.uint8))
    write_idx(raw / "t10k-labels-idx1-ubyte", (np.arange(20) % 12).astype(np.uint8))
    with pytest.raises(IntegrityError, match="labels outside the class range") as e:
        KMNIST(tmp_path, train=False)
    assert f"{raw / 't10k-labels-idx1-ubyte'}:" in str(e.value) and ".gz" not in str(e.value)
