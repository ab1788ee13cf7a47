"""Integrity checks: each passes on good data and fails on the damage it is meant to catch."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from checks_data import synth_digits, synth_labels
from mnistforge.checks import integrity as ic
from mnistforge.io.idx import write_idx


@pytest.fixture
def split():
    return synth_digits(60, seed=1), synth_labels(60, seed=1)


def test_parse_passes_then_fails_on_a_truncated_file(tmp_path, split):
    images, labels = split
    pi, pl = tmp_path / "x-images-idx3-ubyte.gz", tmp_path / "x-labels-idx1-ubyte"
    write_idx(pi, images)
    write_idx(pl, labels)
    ok = ic.check_parse([pi, pl])
    assert ok.status == "pass" and ok.values["shapes"][pi.name] == [60, 28, 28]
    raw = gzip.decompress(pi.read_bytes())
    pi.write_bytes(gzip.compress(raw[:-100]))
    pl.write_bytes(pl.read_bytes()[:-1])
    bad = ic.check_parse([pi, pl])
    assert bad.status == "fail"
    assert set(bad.values["errors"]) == {pi.name, pl.name}


def test_parse_without_files_fails():
    assert ic.check_parse([]).status == "fail"


def test_images_shape_and_dtype(split):
    images, _ = split
    assert ic.check_images(images).status == "pass"
    assert ic.check_images(images.astype(np.int16)).status == "fail"
    assert ic.check_images(images[:, :27]).status == "fail"


def test_counts_fail_when_one_image_short(split):
    images, labels = split
    assert ic.check_counts(images, labels).status == "pass"
    r = ic.check_counts(images[:-1], labels)
    assert r.status == "fail" and r.values == {"images": 59, "labels": 60}


def test_label_range_pass_and_out_of_range(split):
    _, labels = split
    assert ic.check_label_range(labels, 10).status == "pass"
    bad = labels.copy()
    bad[7] = 10
    r = ic.check_label_range(bad, 10)
    assert r.status == "fail" and r.values["out_of_range"] == 1 and r.values["examples"] == [7]
    # EMNIST letters: labels 1..26, a 0 is out of range.
    letters = (np.arange(52) % 26 + 1).astype(np.uint8)
    assert ic.check_label_range(letters, 26, offset=1).status == "pass"
    letters[3] = 0
    assert ic.check_label_range(letters, 26, offset=1).status == "fail"


def test_size_against_declared(split):
    images, _ = split
    assert ic.check_size(len(images), 60).status == "pass"
    r = ic.check_size(len(images) - 1, 60)
    assert r.status == "fail" and "-1" in r.message


def test_balanced_counts_and_a_flipped_label(split):
    _, labels = split
    assert ic.check_balanced(labels, expected_per_class=6, n_classes=10).status == "pass"
    flipped = labels.copy()
    i = int(np.flatnonzero(flipped == 3)[0])
    flipped[i] = 5
    r = ic.check_balanced(flipped, expected_per_class=6, n_classes=10)
    assert r.status == "fail"
    assert r.values["classes_off"] == {3: 5, 5: 7}
    assert ic.check_balanced(flipped, n_classes=10).status == "fail"


def test_metadata_labels_agree(split):
    _, labels = split
    md = labels.astype(np.int64)
    assert ic.check_metadata_labels(labels, md).status == "pass"
    md2 = md.copy()
    md2[4] = (md2[4] + 1) % 10
    r = ic.check_metadata_labels(labels, md2)
    assert r.status == "fail" and r.values["examples"] == [4]


def test_parse_hands_the_hash_check_the_content_it_inflated(tmp_path, split):
    """The content hashes the parse check hands on are those of inflating the file again
    (sha256, md5, size), and the registry check judges with them as without them: an
    official file re-compressed passes as ``content``, one with a changed pixel fails."""
    from mnistforge.checks.hashes import check_registry_files
    from mnistforge.io.hashing import hash_content
    from mnistforge.registry import get_file

    images, labels = split
    pi, pl = tmp_path / "x-images-idx3-ubyte.gz", tmp_path / "x-labels-idx1-ubyte"
    write_idx(pi, images)
    write_idx(pl, labels)
    contents: dict = {}
    assert ic.check_parse([pi, pl], contents=contents).status == "pass"
    assert set(contents) == {pi}            # only compressed files: a raw one is read as is
    assert contents[pi](True) == hash_content(pi)
    assert contents[pi](False) == hash_content(pi, md5=False)

    src = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "mnist" / \
        "t10k-labels-idx1-ubyte.gz"
    if not src.is_file():
        pytest.skip("no real MNIST test labels in ../shared/reference/mnist")
    remote = get_file("mnist/t10k-labels-idx1-ubyte.gz")
    raw = gzip.decompress(src.read_bytes())
    same = tmp_path / "same" / remote.name       # re-compressed: other bytes, same content
    changed = tmp_path / "changed" / remote.name  # one label changed
    for p, content in ((same, raw), (changed, raw[:-1] + bytes([(raw[-1] + 1) % 10]))):
        p.parent.mkdir()
        p.write_bytes(gzip.compress(content, compresslevel=1, mtime=0))
    for p, want in ((same, "pass"), (changed, "fail")):
        contents = {}
        ic.check_parse([p], contents=contents)
        assert p in contents
        with_them = check_registry_files({p: remote}, contents=contents)
        without = check_registry_files({p: remote})
        assert with_them.status == without.status == want
        assert with_them.values == without.values and with_them.message == without.message


def test_parse_reads_the_file_as_it_is_now(tmp_path, split):
    """Verify's parse check reads each file itself: a file truncated after a load is found."""
    images, labels = split
    pi = tmp_path / "x-images-idx3-ubyte.gz"
    write_idx(pi, images)
    contents: dict = {}
    assert ic.check_parse([pi], contents=contents).status == "pass"
    assert contents[pi](False)[2] == 16 + images.nbytes   # hashed from the array it read
    raw = gzip.decompress(pi.read_bytes())
    pi.write_bytes(gzip.compress(raw[:-100]))               # truncated after the load
    assert ic.check_parse([pi]).status == "fail"

