"""What is served is what was checked (issue 40): one read per file, arrays in process memory.

Real files only: MNIST's test set (``../shared/reference/mnist``) and Debian's Fashion-MNIST
(``/usr/share/datasets/fashion-mnist``), whose raw test files have exactly MNIST's sizes, so a
writer can swap one for the other keeping size and mtime.  A second process changes the files
while this one loads; nothing here asserts a duration.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import mnistforge
from mnistforge.errors import DataMismatchError, FormatError
from mnistforge.io.idx import read_idx, write_idx

FASHION = Path("/usr/share/datasets/fashion-mnist")
IMAGES, LABELS = "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"
ROUNDS = 200


@pytest.fixture(scope="module")
def pair(mnist_reference):
    """(MNIST test, Fashion-MNIST test) as (images, labels) arrays."""
    if not (FASHION / (IMAGES + ".gz")).is_file():
        pytest.skip(f"Debian's Fashion-MNIST not at {FASHION} (apt install dataset-fashion-mnist)")
    mnist = tuple(np.asarray(read_idx(mnist_reference / (f + ".gz"))) for f in (IMAGES, LABELS))
    fashion = tuple(np.asarray(read_idx(FASHION / (f + ".gz"))) for f in (IMAGES, LABELS))
    return mnist, fashion


def raw_folder(d: Path, images: np.ndarray, labels: np.ndarray) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    write_idx(d / IMAGES, images)
    write_idx(d / LABELS, labels)
    return d


#: the other process: swaps MNIST and Fashion-MNIST under the folder's names until told to stop,
#: the labels by an atomic replace, the images rewritten in place with size and mtime kept
WRITER = textwrap.dedent("""
    import os, sys, time
    folder, versions, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    names = ("t10k-labels-idx1-ubyte", "t10k-images-idx3-ubyte")
    data = {(v, n): open(os.path.join(versions, v, n), "rb").read() for v in ("mnist", "fashion")
            for n in names}
    n = 0
    while not os.path.exists(stop):
        v = ("fashion", "mnist")[n % 2]
        tmp = os.path.join(folder, ".labels.tmp")
        with open(tmp, "wb") as f:
            f.write(data[(v, names[0])])
        os.replace(tmp, os.path.join(folder, names[0]))            # atomic: a new inode
        p = os.path.join(folder, names[1])
        st = os.stat(p)
        with open(p, "r+b") as f:                                   # in place: same inode
            f.write(data[(v, names[1])])
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))            # size and mtime kept
        n += 1
        time.sleep(0.001 * (n % 3))
    print(n)
""")


def test_files_swapped_while_loading_never_give_a_mixed_or_renamed_split(tmp_path, cache, pair):
    (mi, ml), (fi, fl) = pair
    versions = tmp_path / "versions"
    raw_folder(versions / "mnist", mi, ml)
    raw_folder(versions / "fashion", fi, fl)
    d = raw_folder(tmp_path / "folder", mi, ml)
    stop = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(d), str(versions), str(stop)],
                              stdout=subprocess.PIPE, text=True)
    outcomes = {"mnist": 0, "refused": 0}
    try:
        for i in range(ROUNDS):
            try:
                ds = mnistforge.load("mnist", "test", root=d, check=bool(i % 2))
            except (DataMismatchError, FormatError):
                outcomes["refused"] += 1
                continue
            # what was served is MNIST's test set, whole: never Fashion's pixels or labels
            np.testing.assert_array_equal(ds.images, mi)
            np.testing.assert_array_equal(ds.labels, ml)
            outcomes["mnist"] += 1
    finally:
        stop.touch()
        out, _ = writer.communicate(timeout=60)
    assert writer.returncode == 0 and int(out) > 0     # the files did change under the loads
    assert sum(outcomes.values()) == ROUNDS


@pytest.mark.parametrize("check", [False, True])
@pytest.mark.parametrize("damage", ["rewrite in place", "truncate"])
def test_a_file_changed_after_load_returned_leaves_the_arrays_alone(tmp_path, cache, pair, check, damage):
    (mi, ml), (fi, fl) = pair
    d = raw_folder(tmp_path / "folder", mi, ml)
    ds = mnistforge.load("mnist", "test", root=d, check=check)
    assert not isinstance(ds.images, np.memmap)
    for name, other in ((IMAGES, fi), (LABELS, fl)):
        p = d / name
        if damage == "truncate":
            os.truncate(p, 0)          # a map of the file would kill the process (SIGBUS)
        else:
            st = p.stat()
            write_idx(tmp_path / "other", other)
            with open(p, "r+b") as f:
                f.write((tmp_path / "other").read_bytes())
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    np.testing.assert_array_equal(ds.images, mi)
    np.testing.assert_array_equal(ds.labels, ml)
    assert int(ds.images.sum()) == int(mi.sum())


@pytest.mark.parametrize("damage", ["rewrite in place", "truncate"])
def test_compat_arrays_survive_a_change_of_the_users_files(tmp_path, cache, pair, damage):
    from mnistforge.compat import MNIST

    (mi, ml), (fi, _) = pair
    raw = raw_folder(tmp_path / "root" / "MNIST" / "raw", mi, ml)
    # torchvision's MNIST wants both splits: the test files stand in for train's names too
    for a, b in (("train-images-idx3-ubyte", IMAGES), ("train-labels-idx1-ubyte", LABELS)):
        os.link(raw / b, raw / a)
    ds = MNIST(str(tmp_path / "root"), train=False)
    p = raw / IMAGES
    if damage == "truncate":
        os.truncate(p, 0)
    else:
        write_idx(tmp_path / "other", fi)
        with open(p, "r+b") as f:
            f.write((tmp_path / "other").read_bytes())
    image, label = ds[3]
    assert np.array_equal(np.asarray(image), mi[3]) and label == int(ml[3])


def test_a_copy_changed_after_load_returned_leaves_the_arrays_alone(tmp_path, cache, pair):
    (mi, ml), (fi, fl) = pair
    x = tmp_path / "x_test.npy"
    np.save(x, mi)
    np.save(tmp_path / "y_test.npy", ml)
    ds = mnistforge.load(str(tmp_path), "test")
    assert not isinstance(ds.images, np.memmap)
    np.save(x, fi)               # the user's file rewritten after the load
    np.testing.assert_array_equal(ds.images, mi)


#: in its own process (a hang would be the failure): the file checked is a regular file, then
#: replaced by a FIFO before it is opened
SWAP = textwrap.dedent("""
    import os, sys
    import mnistforge.io.idx as idx
    from mnistforge.errors import IdxFormatError
    path = sys.argv[1]
    check = idx._regular_file_size

    def checked_then_swapped(p):
        size = check(p)
        os.unlink(p)
        os.mkfifo(p)            # another program puts a FIFO in its place
        return size

    idx._regular_file_size = checked_then_swapped
    try:
        idx.read_idx_whole(path)
    except IdxFormatError as e:
        print("refused:", e)
""")


def test_a_fifo_swapped_in_after_the_check_is_refused_not_waited_on(tmp_path, pair):
    (mi, ml), _ = pair
    d = raw_folder(tmp_path / "folder", mi, ml)
    r = subprocess.run([sys.executable, "-c", SWAP, str(d / LABELS)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "refused:" in r.stdout and "regular file" in r.stdout
