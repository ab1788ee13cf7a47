"""Superseded releases (issue 29): an older release of a file or split, known to the registry by
its public hashes, is named by ``verify`` ("the release of DATE, superseded by ...") instead of
being called unknown or corrupted.  No such release with public hashes is in the registry yet,
so the tests add one at run time: the real MNIST test images with one image changed stand for
the older release."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from test_foreign_formats import write_copy

import mnistforge.registry as registry
from mnistforge.checks import verify
from mnistforge.checks.foreign import identify_copy
from mnistforge.errors import ConfigError
from mnistforge.io.idx import idx_content_sha256, read_idx, write_idx

IMAGES, LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"


@pytest.fixture(scope="module")
def older(mnist_reference):
    """(images, labels) of the stand-in older release: MNIST's test set, image 0 changed."""
    x = np.asarray(read_idx(mnist_reference / IMAGES)).copy()
    x[0, 10:14, 10:14] = 255 - x[0, 10:14, 10:14]
    return x, np.asarray(read_idx(mnist_reference / LABELS))


@pytest.fixture
def entry(monkeypatch, older, cache):
    rel = registry.SupersededRelease(
        dataset="mnist", split="test", release="1998-11-01", file="mnist/t10k-images-idx3-ubyte.gz",
        superseded_by="the current release (a test entry added at run time)",
        content_sha256=idx_content_sha256(older[0]), source="a test entry")
    monkeypatch.setattr(registry, "_superseded", lambda: (rel,))
    return rel


def test_the_registry_holds_only_releases_with_public_hashes():
    for rel in registry.superseded_releases():  # none yet; any added must say where from
        assert rel.source and any(getattr(rel, k) for k in registry._HASH_FIELDS)


def test_an_older_release_of_a_file_is_named(tmp_path, entry, older, mnist_reference):
    folder = tmp_path / "idx"
    folder.mkdir()
    write_idx(folder / IMAGES, older[0])
    shutil.copy(mnist_reference / LABELS, folder / LABELS)
    rep = verify(str(folder), near=False)
    r = rep["hashes.registry"]
    assert r.status == "fail"
    assert "1 of 2 files are an older release (t10k-images-idx3-ubyte.gz: the release of " \
           "1998-11-01 of mnist test" in r.message
    row = next(f for f in r.values["files"] if f["file"] == IMAGES)
    assert row["superseded"]["superseded_by"].startswith("the current release")


def test_a_copy_of_an_older_release_is_named_not_unknown(tmp_path, entry, older, monkeypatch):
    path = write_copy("npz", tmp_path, *older)
    _, _, (ident,), _ = identify_copy(path, search_cache=False)
    assert (ident.verdict, ident.dataset, ident.split) == ("superseded", "mnist", "test")
    assert "the release of 1998-11-01 of mnist test" in ident.message()
    monkeypatch.setattr(registry, "_superseded", lambda: ())  # without the entry: not named
    _, _, (plain,), _ = identify_copy(path, search_cache=False)
    assert plain.verdict == "differs"


def test_an_unknown_hash_kind_is_refused():
    with pytest.raises(ConfigError, match="unknown hash kind"):
        registry.find_superseded(sha1="x")
