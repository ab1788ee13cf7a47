"""torchvision roots a careless or hostile user hands to ``mnistforge.compat``: each one that
torchvision would read silently as something else is refused, naming what it is."""
from __future__ import annotations

import gzip
import pickle
import shutil

import pytest

from mnistforge.cli import main
from mnistforge.errors import DataMismatchError, MissingFileError


def _raw_like_torchvision(src_folder, raw, names):
    """``raw`` as torchvision's download leaves it: each .gz and its decompressed twin."""
    raw.mkdir(parents=True)
    for f in names:
        shutil.copy(src_folder / f, raw / f)
        with gzip.open(raw / f) as a, open(raw / f[:-3], "wb") as b:
            shutil.copyfileobj(a, b)


def test_fashion_mnist_under_mnist_names_is_refused(fashion_dir, tmp_path):
    """MNIST and Fashion-MNIST share file names: torchvision's MNIST would return clothes as digits."""
    from mnistforge.compat import MNIST

    _raw_like_torchvision(fashion_dir, tmp_path / "MNIST" / "raw",
                          ["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"])
    with pytest.raises(DataMismatchError, match="fashion-mnist") as e:
        MNIST(tmp_path, train=False)
    assert "these are not mnist's files" in str(e.value)


def test_a_label_edited_after_the_export_is_refused(mnist_reference, tmp_path):
    from mnistforge.compat import MNIST

    out = tmp_path / "root"
    assert main(["export", "torchvision", str(mnist_reference), "--out", str(out)]) == 0
    labels = out / "MNIST" / "raw" / "t10k-labels-idx1-ubyte"
    data = bytearray(labels.read_bytes())
    data[8] = (data[8] + 1) % 10  # one label changed after the export
    labels.write_bytes(bytes(data))
    with pytest.raises(DataMismatchError, match="changed since it was built"):
        MNIST(out, train=False)


def test_processed_pickles_alone_are_never_unpickled(tmp_path, cache):
    """A root holding only torchvision's legacy ``processed/*.pt`` (pickles that run code when
    loaded): not read; with nothing in the cache, the error says so and what to do."""
    from mnistforge.compat import MNIST

    processed = tmp_path / "MNIST" / "processed"
    processed.mkdir(parents=True)
    marker = tmp_path / "unpickled"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    for f in ("training.pt", "test.pt"):
        (processed / f).write_bytes(pickle.dumps(Evil()))
    with pytest.raises(MissingFileError, match="processed/\\*.pt files are never read"):
        MNIST(tmp_path, train=False, download=False)
    assert not marker.exists()
