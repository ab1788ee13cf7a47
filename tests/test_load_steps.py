"""``load`` in three steps: resolution (``resolve_load``), trust, conversion; one reader a route."""
from __future__ import annotations

import typing

import numpy as np
import pytest

from mnistforge.errors import DatasetNotFoundError, TargetNotFoundError
from mnistforge.io.idx import write_idx
from mnistforge.loaders import core
from mnistforge.loaders.core import READERS, Route, resolve_load


def test_a_registry_name_resolves_to_the_cache_with_its_slice():
    r = resolve_load("MNIST", "test[:10]")
    assert (r.kind, r.name, r.split, r.root, r.rows) == ("files", "mnist", "test", None, "[:10]")
    assert r.info is not None and r.info.name == "mnist"
    assert resolve_load("qmnist", "test10k").split == "test10k"


def test_resolution_refuses_before_anything_is_opened(tmp_path):
    with pytest.raises(TargetNotFoundError):
        resolve_load("mnist", "test", tmp_path / "nowhere")
    with pytest.raises(DatasetNotFoundError):
        resolve_load("mnist", "nosuchsplit")


def test_a_folder_and_a_file_resolve_to_their_routes(tmp_path):
    rng = np.random.default_rng(0)
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", rng.integers(0, 256, (5, 28, 28), np.uint8))
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.arange(5, dtype=np.uint8))
    r = resolve_load(str(tmp_path), "test[:2]")         # a folder given as the name
    assert (r.kind, r.name, r.split, r.root, r.rows) == ("files", "mnist", "test", tmp_path, "[:2]")
    assert resolve_load("mnist", "test", tmp_path).root == tmp_path
    copy = tmp_path / "copy.npz"
    copy.write_bytes(b"")                               # a file is a third-party copy's route
    r = resolve_load(str(copy), "test")
    assert (r.kind, r.name, r.split, r.path) == ("foreign", None, "test", str(copy))
    assert resolve_load("mnist", "test", copy).path == copy and \
        resolve_load("mnist", "test", copy).name == "mnist"


def test_every_route_has_a_reader_and_load_annotations_resolve():
    assert set(READERS) == set(typing.get_args(typing.get_type_hints(Route)["kind"]))
    hints = typing.get_type_hints(core.load)             # real objects, for documentation tools
    assert hints["return"].__name__ == "DatasetSplit"
