"""torchvision itself against what mnistforge writes and returns: its MNIST, FashionMNIST, KMNIST,
EMNIST and QMNIST classes read the layout mnistforge wrote (the same images and targets as
``mnistforge.load``), and ``mnistforge.compat``'s classes return what torchvision's do.

Needs torch and torchvision (``pip install torch==2.14.1 torchvision==0.29.1`` on x86_64;
skipped without them).
"""
from __future__ import annotations

import numpy as np
import pytest

tv = pytest.importorskip("torchvision.datasets", reason="torchvision not installed "
                         "(pip install torch==2.14.1 torchvision==0.29.1)")
import torch  # noqa: E402  (after the skip)
from PIL import Image  # noqa: E402

import mnistforge  # noqa: E402
from mnistforge import compat  # noqa: E402
from mnistforge.cli import main  # noqa: E402
from mnistforge.io.idx import write_idx  # noqa: E402
from mnistforge.io.manifest import DatasetEntry, Manifest  # noqa: E402
from mnistforge.registry import get_dataset, torchvision_datasets  # noqa: E402
from sd19_helpers import make_tiny_sd19  # noqa: E402

EMNIST = ["byclass", "bymerge", "balanced", "letters", "digits", "mnist"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A synthetic SD19 built in both layouts (MNIST, QMNIST, EMNIST), and small synthetic
    Fashion-MNIST and KMNIST folders exported: ``{torchvision class: (root, idx folder)}``."""
    sd19 = make_tiny_sd19(tmp_path_factory.mktemp("sd19"), scale=0.002)
    base = tmp_path_factory.mktemp("interop")
    assert main(["build", "all", "--sd19", str(sd19), "--out", str(base / "idx"), "--workers", "1"]) == 0
    assert main(["build", "all", "--sd19", str(sd19), "--out", str(base / "root"), "--workers", "1",
                 "--layout", "torchvision"]) == 0
    out = {c: (base / "root", base / "idx") for c in ("MNIST", "QMNIST", "EMNIST")}
    rng = np.random.default_rng(5)
    for name, cls in (("fashion-mnist", "FashionMNIST"), ("kmnist", "KMNIST")):
        folder = base / name
        folder.mkdir()
        for split, n in (("train", 50), ("test", 30)):
            sp = get_dataset(name).split(split)
            write_idx(folder / sp.images, rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
            write_idx(folder / sp.labels, rng.integers(0, 10, n).astype(np.uint8))
        # written with the package's own manifest, as a build would: the trust gate checks against it
        Manifest(kind=name, datasets={name: DatasetEntry(counts={"train": 50, "test": 30})}).write(folder)
        assert main(["export", "torchvision", str(folder), "--out", str(base / f"root-{name}")]) == 0
        out[cls] = (base / f"root-{name}", folder)
    return out


def _cases():
    """(registry dataset, torchvision class, constructor kwargs, registry split) for every way
    torchvision selects a split."""
    out = []
    for name in torchvision_datasets():
        t = get_dataset(name).torchvision
        if t.cls == "QMNIST":
            out += [(name, t.cls, {"what": w}, w) for w in t.what]
        elif t.cls == "EMNIST":
            out += [(name, t.cls, {"split": t.split, "train": tr}, "train" if tr else "test")
                    for tr in (True, False)]
        else:
            out += [(name, t.cls, {"train": tr}, "train" if tr else "test") for tr in (True, False)]
    return out


CASES = _cases()
IDS = [f"{c[1]}-{c[3]}" + (f"-{c[2]['split']}" if "split" in c[2] else "") for c in CASES]


def test_registry_says_what_torchvision_reads():
    """Class names, classes, and the files each class opens, from torchvision's own attributes."""
    import os

    for name in torchvision_datasets():
        t = get_dataset(name).torchvision
        cls = getattr(tv, t.cls)
        if t.cls == "EMNIST":
            assert list(t.classes) == cls.classes_split_dict[t.split]
            for train in (True, False):
                obj = object.__new__(cls)
                obj.root, obj.split, obj.train = "R", t.split, train
                want = t.files["train" if train else "test"]
                assert (obj.images_file, obj.labels_file) == tuple(os.path.join("R", t.folder, f) for f in want)
        elif t.cls == "QMNIST":
            assert list(t.classes) == cls.classes and list(t.what) == list(cls.subsets)
            for what, subset in cls.subsets.items():
                obj = object.__new__(cls)
                obj.root, obj.what = "R", what
                want = t.files[subset]
                assert (obj.images_file, obj.labels_file) == tuple(os.path.join("R", t.folder, f) for f in want)
        else:
            assert list(t.classes) == cls.classes
            opened = [os.path.splitext(f)[0] for f, _ in cls.resources]  # what _check_exists wants
            assert sorted(opened) == sorted(f for pair in t.files.values() for f in pair)
            assert t.needs_every_split


@pytest.mark.parametrize("name, cls, kw, split", CASES, ids=IDS)
def test_torchvision_reads_the_layout_mnistforge_wrote(built, name, cls, kw, split):
    root, idx = built[cls]
    theirs = getattr(tv, cls)(str(root), download=False, **kw)
    ours = mnistforge.load(name, split, root=idx, with_metadata="files")
    images = theirs.data.numpy()
    if get_dataset(name).orientation == "transposed":
        images = images.transpose(0, 2, 1)  # torchvision returns EMNIST as stored
    assert images.shape[0] == len(ours) and (len(ours) > 0 or split == "test50k")  # a small build
    np.testing.assert_array_equal(images, ours.images)
    targets = theirs.targets.numpy()
    if cls == "QMNIST":
        fields = get_dataset(name).metadata_fields
        table = np.stack([ours.metadata[f] for f in fields], axis=1)
        np.testing.assert_array_equal(targets, table)
        targets = targets[:, 0]
    np.testing.assert_array_equal(targets, ours.labels)


@pytest.mark.parametrize("name, cls, kw, split", CASES, ids=IDS)
def test_compat_returns_what_torchvision_returns(built, name, cls, kw, split):
    root, idx = built[cls]
    theirs = getattr(tv, cls)(str(root), **kw)
    extra = {"upright": False} if cls == "EMNIST" else {}
    ours = getattr(compat, cls)(str(root), **kw, **extra)
    assert len(ours) == len(theirs)
    assert ours.classes == theirs.classes and ours.class_to_idx == theirs.class_to_idx
    assert ours.data.dtype == theirs.data.dtype and ours.targets.dtype == theirs.targets.dtype
    assert torch.equal(ours.data, theirs.data) and torch.equal(ours.targets, theirs.targets)
    assert repr(ours) == repr(theirs)
    for i in (0, len(theirs) - 1) if len(theirs) else ():
        (a, ta), (b, tb) = ours[i], theirs[i]
        assert type(a) is type(b) and isinstance(a, Image.Image) and a.mode == b.mode == "L"
        assert np.array_equal(np.asarray(a), np.asarray(b))
        assert type(ta) is type(tb) is int and ta == tb
    loaded = mnistforge.load(name, split, root=idx)
    upright = getattr(compat, cls)(str(root), **kw)
    assert np.array_equal(upright.data.numpy(), loaded.images)  # what load returns: upright
    targets = upright.targets.numpy()
    assert np.array_equal(targets[:, 0] if cls == "QMNIST" else targets, loaded.labels)


def test_qmnist_compat_false_gives_the_tensor_row(built):
    root, _ = built["QMNIST"]
    theirs = tv.QMNIST(str(root), what="test", compat=False)
    ours = compat.QMNIST(str(root), what="test", compat=False)
    (_, a), (_, b) = ours[5], theirs[5]
    assert isinstance(a, torch.Tensor) and a.dtype == b.dtype == torch.int64
    assert a.shape == b.shape == (8,) and torch.equal(a, b)


def test_transforms_as_torchvision(built):
    root, _ = built["MNIST"]
    kw = dict(train=False, transform=lambda im: np.asarray(im, np.float32) / 255,
              target_transform=lambda t: t + 100)
    (a, ta), (b, tb) = compat.MNIST(str(root), **kw)[2], tv.MNIST(str(root), **kw)[2]
    assert np.array_equal(a, b) and ta == tb >= 100


def test_real_fashion_mnist_through_torchvision(fashion_dir, tmp_path):
    out = tmp_path / "root"
    assert main(["export", "torchvision", str(fashion_dir), "--out", str(out)]) == 0
    for train in (True, False):
        theirs = tv.FashionMNIST(str(out), train=train)
        ours = mnistforge.load("fashion-mnist", "train" if train else "test", root=fashion_dir)
        assert len(theirs) == len(ours) == (60000 if train else 10000)
        np.testing.assert_array_equal(theirs.data.numpy(), ours.images)
        np.testing.assert_array_equal(theirs.targets.numpy(), ours.labels)
        mine = compat.FashionMNIST(str(out), train=train)
        assert torch.equal(mine.data, theirs.data) and mine.classes == theirs.classes


def test_real_mnist_test_through_torchvision(mnist_reference, built, tmp_path):
    """These machines hold MNIST's test set only: torchvision's MNIST refuses a root without the
    train files (as the export's note says); with a train split beside it, it reads the real test."""
    _, idx = built["MNIST"]
    alone = tmp_path / "alone"
    assert main(["export", "torchvision", str(mnist_reference), "--out", str(alone)]) == 0
    with pytest.raises(RuntimeError, match="Dataset not found"):
        tv.MNIST(str(alone), train=False)
    assert len(compat.MNIST(str(alone), train=False)) == 10000  # the drop-in reads what is there
    both = tmp_path / "both"
    assert main(["export", "torchvision", str(mnist_reference), f"{idx / 'mnist'}:train",
                 "--out", str(both)]) == 0
    theirs = tv.MNIST(str(both), train=False)
    real = mnistforge.load("mnist", "test", root=mnist_reference)
    np.testing.assert_array_equal(theirs.data.numpy(), real.images)
    np.testing.assert_array_equal(theirs.targets.numpy(), real.labels)
    mine = compat.MNIST(str(both), train=False)
    assert torch.equal(mine.data, theirs.data) and torch.equal(mine.targets, theirs.targets)
    assert [type(x) for x in mine[0]] == [type(x) for x in theirs[0]]


#: one case per compat class (its test split)
CLASS_CASES = list({c[1]: c for c in CASES if c[3] == "test"}.values())


@pytest.mark.parametrize("name, cls, kw, split", CLASS_CASES, ids=[c[1] for c in CLASS_CASES])
def test_compat_is_a_vision_dataset_that_transforms_v2_wraps(built, name, cls, kw, split):
    from torchvision.transforms import v2

    root, _ = built[cls]
    extra = {"upright": False} if cls == "EMNIST" else {}
    ours = getattr(compat, cls)(str(root), transform=v2.ToImage(), **kw, **extra)
    assert isinstance(ours, tv.VisionDataset) and isinstance(ours, getattr(tv, cls))
    theirs = getattr(tv, cls)(str(root), transform=v2.ToImage(), **kw)
    a, b = tv.wrap_dataset_for_transforms_v2(ours), tv.wrap_dataset_for_transforms_v2(theirs)
    assert len(a) == len(b) > 0
    (ia, ta), (ib, tb) = a[len(a) - 1], b[len(b) - 1]
    assert type(ia) is type(ib) and ia.shape == (1, 28, 28) and torch.equal(ia, ib) and ta == tb
