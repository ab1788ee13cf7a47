"""First contact: split slices, indexing, names as typed, the torch Dataset, wrong data refused,
the gaps of issue 16 (HF validation view, xnist in build-all, orientation), the card without
local paths."""
from __future__ import annotations

import json
import pickle
import shutil
import warnings

import numpy as np
import pytest

from mnistforge.errors import (ConfigError, DataMismatchError, DatasetNotFoundError, FormatError,
                               IntegrityError, TargetNotFoundError)
from mnistforge.io.idx import write_idx
from mnistforge.io.manifest import Manifest
from mnistforge.loaders import DatasetSplit, load
from mnistforge.loaders.names import dataset_name, rows_of
from sd19_helpers import make_tiny_sd19


def images(n, seed=0, shape=(28, 28)):
    return np.random.default_rng(seed).integers(0, 256, (n,) + shape, dtype=np.uint8)


def mnist_build(d, n_train=50, n_test=20, *, labels_dtype=np.uint8, shape=(28, 28), manifest=True,
                label_max=10):
    d.mkdir(parents=True, exist_ok=True)
    data = {}
    for part, stem, n in (("train", "train", n_train), ("test", "t10k", n_test)):
        x = images(n, seed=n, shape=shape)
        y = (np.arange(n) % label_max).astype(labels_dtype)
        write_idx(d / f"{stem}-images-idx3-ubyte.gz", x)
        write_idx(d / f"{stem}-labels-idx1-ubyte.gz", y)
        data[part] = (x, y)
    if manifest:
        Manifest(kind="mnist").write(d)
    return data


def qmnist_build(d, n_train=30, n_test=12):
    d.mkdir(parents=True, exist_ok=True)
    out = {}
    for part, n in (("train", n_train), ("test", n_test)):
        t = np.zeros((n, 8), np.int32)
        t[:, 0] = np.arange(n) % 10
        t[:, 2] = 1000 + np.arange(n)  # writer
        t[:, 5] = np.arange(n)
        x = images(n, seed=7 + n)
        write_idx(d / f"qmnist-{part}-images-idx3-ubyte.gz", x)
        write_idx(d / f"qmnist-{part}-labels-idx2-int.gz", t)
        out[part] = (x, t)
    Manifest(kind="qmnist").write(d)
    return out


@pytest.fixture
def built(tmp_path):
    d = tmp_path / "mnist"
    return d, mnist_build(d)


# --------------------------------------------------------------------------- slices

def test_split_slices_like_tfds(built):
    d, data = built
    x, y = data["train"]
    first = load("mnist", "test[:5]", root=d)
    assert len(first) == 5 and first.split == "test[:5]"
    np.testing.assert_array_equal(first.images, data["test"][0][:5])
    head = load("mnist", "train[:90%]", root=d)
    tail = load("mnist", "train[-10%:]", root=d)
    assert (len(head), len(tail)) == (45, 5)
    np.testing.assert_array_equal(np.concatenate([head.labels, tail.labels]), y)
    np.testing.assert_array_equal(tail.images, x[45:])
    mid = load("mnist", "train[10:20]", root=d)
    np.testing.assert_array_equal(mid.images, x[10:20])
    assert mid.indices.tolist() == list(range(10, 20))
    pct = load("mnist", "train[10%:30%]", root=d)
    np.testing.assert_array_equal(pct.images, x[5:15])
    assert len(load("mnist", "train[33%:]", root=d)) == 50 - 17  # 16.5 rounds to 17


@pytest.mark.parametrize("bad", ["train[:abc]", "train[3]", "train[:150%]", "train[:1.5]", "train[:"])
def test_bad_slices_are_usage_errors(built, bad):
    with pytest.raises(ConfigError):
        load("mnist", bad, root=built[0])


def test_rows_of_matches_python_slicing():
    """Python's rows where they are some rows within the split; refused (issue 26) where Python
    would clip a bound beyond the split or return no rows."""
    from mnistforge.errors import EmptySelectionError, IndexRangeError

    for n in (0, 1, 7, 100):
        for spec, sl in (("[:3]", slice(None, 3)), ("[-2:]", slice(-2, None)), ("[2:-1]", slice(2, -1)),
                         ("[:]", slice(None))):
            want = list(range(n))[sl]
            if want and all(abs(b) <= n for b in (sl.start, sl.stop) if b is not None):
                assert list(range(n))[rows_of(spec, n)] == want
            else:
                with pytest.raises((EmptySelectionError, IndexRangeError)):
                    rows_of(spec, n)


# --------------------------------------------------------------------------- indexing

def test_indexing_len_iteration_and_metadata(tmp_path):
    d = tmp_path / "qmnist"
    data = qmnist_build(d)
    ds = load("qmnist", "train", root=d, with_metadata=True)
    assert len(ds) == 30
    img, label = ds[3]
    assert img.shape == (28, 28) and label == 3 and isinstance(label, int)
    assert ds[-1][1] == int(data["train"][1][-1, 0])
    pairs = list(ds)
    assert len(pairs) == 30 and all(p[1] == int(t) for p, t in zip(pairs, data["train"][1][:, 0]))
    small = ds[:4]
    assert isinstance(small, DatasetSplit) and len(small) == 4
    assert small.metadata["writer"].tolist() == [1000, 1001, 1002, 1003]
    assert small.classes == ds.classes and small.name == "qmnist" and small.source == ds.source
    picked = ds[np.array([9, 2, 5])]
    np.testing.assert_array_equal(picked.images, data["train"][0][[9, 2, 5]])
    assert picked.metadata["writer"].tolist() == [1009, 1002, 1005]
    again = picked[[2, 0]]
    assert again.indices.tolist() == [5, 9]  # rows of the whole split, through two selections
    mask = ds.labels == 7
    sevens = ds[mask]
    assert set(sevens.labels.tolist()) == {7} and sevens.indices.tolist() == np.flatnonzero(mask).tolist()
    with pytest.raises(ConfigError):
        ds[np.array([True, False])]  # a mask of the wrong length


# --------------------------------------------------------------------------- names

@pytest.mark.parametrize("typed,name", [
    ("MNIST", "mnist"), ("fashion_mnist", "fashion-mnist"), ("FashionMNIST", "fashion-mnist"),
    ("emnist/letters", "emnist-letters"), ("EMNIST-Letters", "emnist-letters"),
    ("ylecun/mnist", "mnist"), ("QMNIST", "qmnist"), ("emnist_balanced", "emnist-balanced"),
])
def test_names_as_typed(typed, name):
    assert dataset_name(typed) == name


def test_typos_get_a_suggestion_and_only_loadable_names():
    with pytest.raises(DatasetNotFoundError) as e:
        load("mnsit", "test")
    msg = str(e.value)
    assert "did you mean 'mnist'?" in msg
    listed = msg.split("expected one of ", 1)[1].split(", found", 1)[0].split(", ")
    assert "mnist" in listed and "emnist-letters" in listed
    assert "sd19" not in listed and "emnist" not in listed  # sources and archives are not loadable
    with pytest.raises(DatasetNotFoundError, match="is a source, not a dataset"):
        load("sd19", "train")
    with pytest.raises(DatasetNotFoundError, match="did you mean 'emnist-letters'"):
        dataset_name("emnist-leters")


def test_a_split_of_other_datasets_is_said_and_an_archive_takes_an(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="'validation' is a split of emnist-balanced, .*not of mnist"):
        load("mnist", "validaton")
    with pytest.raises(DatasetNotFoundError, match="'emnist' is an archive, not a dataset"):
        dataset_name("emnist")


def test_split_names_as_typed(tmp_path):
    d = tmp_path / "b"
    mnist_build(d)
    assert load("MNIST", "TEST", root=d).split == "test"
    with pytest.raises(DatasetNotFoundError, match="did you mean 'test'"):
        load("mnist", "tset", root=d)


def test_cli_targets_take_the_same_names(built):
    from mnistforge.loaders import resolve_target

    assert resolve_target("Fashion_MNIST:test[:10]") == ("fashion-mnist", "test[:10]", None)
    assert resolve_target(f"{built[0]}:MNIST:train[-10%:]")[:2] == ("mnist", "train[-10%:]")
    with pytest.raises(TargetNotFoundError):
        resolve_target("/nonexistent/folder")


# --------------------------------------------------------------------------- torch

def test_to_torch_is_a_dataset_with_transforms(built):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, Dataset

    d, data = built
    ds = load("mnist", "train", root=d)
    ro = np.asarray(ds.images).copy()
    ro.flags.writeable = False  # as a memory-mapped raw copy is
    ds.images = ro
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch's "non-writable array" UserWarning would raise
        t = ds.to_torch()
        img, label = t[0]
    assert isinstance(t, Dataset) and len(t) == 50
    assert img.dtype == torch.uint8 and tuple(img.shape) == (1, 28, 28) and label == 0
    np.testing.assert_array_equal(img[0].numpy(), data["train"][0][0])
    f = ds.to_torch(dtype="float32")[1][0]
    assert f.dtype == torch.float32 and 0 <= float(f.min()) and float(f.max()) <= 1
    assert torch.allclose(f * 255, t[1][0].float())
    tt = ds.to_torch(transform=lambda x: x.flip(-1), target_transform=lambda y: y + 100)
    img2, label2 = tt[2]
    assert label2 == 102 and torch.equal(img2, t[2][0].flip(-1))
    assert t.classes == ds.classes and t.targets.tolist() == ds.labels.tolist()
    # DataLoader workers started by spawn pickle the dataset
    back = pickle.loads(pickle.dumps(t))
    assert torch.equal(back[5][0], t[5][0])
    xb, yb = next(iter(DataLoader(t, batch_size=8)))
    assert tuple(xb.shape) == (8, 1, 28, 28) and yb.dtype == torch.int64
    with pytest.raises(ConfigError):
        ds.to_torch(dtype="float64")


def test_docs_dataloader_example_trains(built):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    torch.manual_seed(0)
    ds = load("mnist", "train", root=built[0])
    # the docs' example, on 50 toy images: a linear model, one pass, loss goes down
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(ds.to_torch(dtype="float32"), batch_size=50, shuffle=True)
    losses = []
    for _ in range(20):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            losses.append(loss.item())
    assert losses[-1] < losses[0] / 2


# --------------------------------------------------------------------------- wrong data

def test_fashion_under_mnist_names_is_refused(fashion_dir, tmp_path, monkeypatch):
    with pytest.raises(DataMismatchError) as e:
        load("mnist", "test", root=fashion_dir)
    msg = str(e.value)
    assert "fashion-mnist" in msg and "load('fashion-mnist', 'test'" in msg
    assert "trust_files=True" in msg and "MNISTFORGE_TRUST_FILES=1" in msg
    ds = load("mnist", "test", root=fashion_dir, trust_files=True)  # the explicit opt-out
    assert len(ds) == 10000 and ds.name == "mnist"
    monkeypatch.setenv("MNISTFORGE_TRUST_FILES", "1")
    assert len(load("mnist", "test[:3]", root=fashion_dir)) == 3
    monkeypatch.delenv("MNISTFORGE_TRUST_FILES")
    fm = load("fashion-mnist", "test", root=fashion_dir)
    assert fm.status["t10k-labels-idx1-ubyte.gz"] in ("exact", "content")


def test_real_mnist_test_files_pass_the_check(mnist_reference):
    ds = load("mnist", "test", root=mnist_reference)
    assert ds.status["t10k-labels-idx1-ubyte.gz"] in ("exact", "content")


def test_unknown_content_without_manifest_is_refused(tmp_path):
    d = tmp_path / "copy"
    mnist_build(d, manifest=False)
    with pytest.raises(DataMismatchError, match="no build manifest.json"):
        load("mnist", "test", root=d)
    assert len(load("mnist", "test", root=d, trust_files=True)) == 20


def test_build_manifest_is_checked(built):
    d, data = built
    assert load("mnist", "test", root=d).status["t10k-labels-idx1-ubyte.gz"] == "built"
    y = data["test"][1].copy()
    y[0] = (y[0] + 1) % 10
    write_idx(d / "t10k-labels-idx1-ubyte.gz", y)
    with pytest.raises(DataMismatchError, match="changed since it was built"):
        load("mnist", "test", root=d)
    assert load("mnist", "test", root=d, trust_files=True).labels[0] == y[0]


def test_labels_out_of_range_wrong_size_and_float_labels(tmp_path):
    d = tmp_path / "range"
    mnist_build(d, label_max=12)
    with pytest.raises(IntegrityError, match="labels outside the class range"):
        load("mnist", "train", root=d)
    d = tmp_path / "size"
    mnist_build(d, shape=(32, 32))
    with pytest.raises(IntegrityError, match="not 28 x 28"):
        load("mnist", "train", root=d)
    d = tmp_path / "float"
    mnist_build(d, labels_dtype=np.float32)
    with pytest.raises(FormatError, match="not integers"):
        load("mnist", "train", root=d)


# --------------------------------------------------------------------------- gaps

def test_orientation_says_what_the_user_holds(tmp_path):
    d = tmp_path / "em"
    rng = np.random.default_rng(1)
    up = rng.integers(0, 256, (12, 28, 28), dtype=np.uint8)
    for part in ("train", "test"):
        write_idx(d / f"emnist-digits-{part}-images-idx3-ubyte.gz", np.ascontiguousarray(up.transpose(0, 2, 1)))
        write_idx(d / f"emnist-digits-{part}-labels-idx1-ubyte.gz", (np.arange(12) % 10).astype(np.uint8))
    Manifest(kind="emnist").write(d)
    ds = load("emnist-digits", "test", root=d)
    np.testing.assert_array_equal(ds.images, up)
    assert ds.orientation == "upright" and ds.stored_orientation == "transposed"
    assert ds[:3].stored_orientation == "transposed"


def test_qmnist_nist_found_in_build_all_layout(tmp_path):
    out = tmp_path / "build"
    qmnist_build(out / "qmnist")
    x = images(25, seed=3)
    t = np.zeros((25, 8), np.int32)
    t[:, 0] = np.arange(25) % 10
    (out / "xnist").mkdir()
    write_idx(out / "xnist" / "xnist-images-idx3-ubyte.xz", x)
    write_idx(out / "xnist" / "xnist-labels-idx2-int.xz", t)
    Manifest(kind="xnist").write(out / "xnist")
    nist = load("qmnist", "nist", root=out)
    assert len(nist) == 25
    np.testing.assert_array_equal(nist.images, x)
    assert len(load("qmnist", "test", root=out)) == 12


def test_validation_view_of_a_hub_export(tmp_path):
    from mnistforge.hub import configs_from_targets, export_hf

    d = tmp_path / "emnist"
    for part, n in (("train", 60), ("test", 10)):
        write_idx(d / f"emnist-balanced-{part}-images-idx3-ubyte.gz", images(n, seed=n))
        write_idx(d / f"emnist-balanced-{part}-labels-idx1-ubyte.gz", (np.arange(n) % 47).astype(np.uint8))
    Manifest(kind="emnist").write(d)
    repo = tmp_path / "repo"
    export_hf(repo, configs_from_targets([str(d)]), workers=1, croissant=False)
    for split in ("validation", "train-without-validation", "train_without_validation"):
        a = load("emnist-balanced", split, root=d)
        b = load("emnist-balanced", split, root=repo)
        assert len(a) == len(b) > 0
        np.testing.assert_array_equal(a.images, b.images)
        np.testing.assert_array_equal(a.labels, b.labels)
    assert len(load("emnist-balanced", "validation[:4]", root=repo)) == 4


# --------------------------------------------------------------------------- publishing

def test_card_and_croissant_hold_no_local_paths(tmp_path):
    from mnistforge.builders.qmnist import QmnistBuildConfig, build_qmnist
    from mnistforge.hub import configs_from_targets, export_hf

    base = tmp_path / "machine-specific-folder"
    sd19 = make_tiny_sd19(base / "sd19", scale=0.002)
    build_qmnist(sd19, base / "qmnist", QmnistBuildConfig(progress=False, workers=1))
    built_inputs = json.loads((base / "qmnist" / "manifest.json").read_text())["inputs"]
    assert str(base) in json.dumps(built_inputs)  # the build folder keeps its local facts
    repo = tmp_path / "repo"
    export_hf(repo, configs_from_targets([str(base / "qmnist")]), workers=1)
    for name in ("README.md", "croissant.json"):
        text = (repo / name).read_text()
        assert str(tmp_path) not in text and "machine-specific-folder" not in text, name
    card = (repo / "README.md").read_text()
    sd = built_inputs["sd19"]
    assert sd["fingerprint"] in card and f"`edition`: {sd['edition']}" in card  # identity kept
    shutil.rmtree(base)  # nothing in the repository points back to it
    assert load("qmnist", "train", root=repo).name == "qmnist"


def test_a_name_wins_over_a_folder_of_that_name(mnist_reference, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    (cache / "mnist").mkdir(parents=True)
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(mnist_reference / f, cache / "mnist" / f)
    monkeypatch.setenv("MNISTFORGE_HOME", str(cache))
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")
    (tmp_path / "MNIST" / "raw").mkdir(parents=True)  # torchvision's layout in the working folder
    monkeypatch.chdir(tmp_path)
    ds = load("MNIST", "test[:3]")
    assert ds.name == "mnist" and ds.source.startswith("cache") and ds.labels.tolist() == [7, 2, 1]


def test_old_manifest_without_output_hashes_still_loads(tmp_path):
    d = tmp_path / "old"
    mnist_build(d, manifest=False)
    (d / "manifest.json").write_text(json.dumps({"dataset": "mnist", "counts": {"train": 50}}))
    assert len(load("mnist", "train", root=d)) == 50  # schema-0 build folders keep loading
