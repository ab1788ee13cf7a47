"""The neural reference classifiers (LeNet-5, CNN): accuracy on real data, repeatability,
shapes and class counts, devices, pickle-free saving, early stopping, the evaluate CLI."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the [torch] extra is not installed")

from mnistforge.classifiers.base import make_classifier
from mnistforge.classifiers.linear import LinearClassifier
from mnistforge.classifiers.neural import load_model, save_model
from mnistforge.cli import main
from mnistforge.errors import ConfigError, FormatError, IntegrityError, MissingFileError
from mnistforge.evaluators import protocol as pr

# small enough to train in seconds on 2 CPU cores, large enough for a stable ranking
N_TRAIN, N_TEST = 3000, 2000
RECIPES = {"lenet": "lenet:epochs=8,device=cpu", "cnn": "cnn:epochs=3,device=cpu"}


def _load(root, name, split):
    import mnistforge
    ds = mnistforge.load(name, split, root=root)
    return np.asarray(ds.images), np.asarray(ds.labels)


@pytest.fixture(scope="module")
def fashion_split(fashion_dir):
    # train on the first 3,000 training images, test on the first 2,000 test images
    Xtr, ytr = _load(fashion_dir, "fashion-mnist", "train")
    Xte, yte = _load(fashion_dir, "fashion-mnist", "test")
    return Xtr[:N_TRAIN], ytr[:N_TRAIN], Xte[:N_TEST], yte[:N_TEST]


@pytest.fixture(scope="module")
def mnist_split(mnist_reference):
    # the real MNIST test set cut like fold 0 of the cross-validation in test_classifiers
    X, y = _load(mnist_reference, "mnist", "test")
    perm = np.random.default_rng(0).permutation(len(y))
    tr, te = perm[2000:2000 + N_TRAIN], perm[:N_TEST]
    return X[tr], y[tr], X[te], y[te]


def _beats_linear(split, spec):
    Xtr, ytr, Xte, yte = split
    lin = LinearClassifier().fit(Xtr, ytr).predict(Xte) != yte
    net = make_classifier(spec).fit(Xtr, ytr).predict(Xte) != yte
    # paired one-sided test at 95 % (Yadav & Bottou): n12 - n21 >= 1.645 sqrt(n12 + n21)
    n12 = int((lin & ~net).sum())
    n21 = int((net & ~lin).sum())
    assert n12 - n21 >= 1.645 * math.sqrt(n12 + n21), (spec, lin.mean(), net.mean())
    return lin.mean(), net.mean()


@pytest.mark.parametrize("name", ["lenet", "cnn"])
def test_beats_linear_on_real_fashion_mnist(fashion_split, name):
    _, net = _beats_linear(fashion_split, RECIPES[name])
    assert net < 0.22  # Fashion-MNIST with 3,000 images: ~15-19 %; linear ~25 %


def test_lenet_beats_linear_on_real_mnist(mnist_split):
    _, net = _beats_linear(mnist_split, RECIPES["lenet"])
    assert net < 0.07  # ~3-5 % with 3,000 images; linear ~15 %


@pytest.mark.parametrize("arch, width, count", [("lenet5", 16, 61_706), ("cnn", 16, 98_554),
                                                ("cnn", 32, 241_770)])
def test_parameter_counts_quoted_in_the_docs(arch, width, count):
    # docs/classifiers.md: LeNet-5 61,706 parameters for 10 classes, the CNN 98,554
    # (width=32: 241,770)
    from mnistforge.classifiers.torch_models import build_network

    net = build_network(arch, 10, (28, 28), width=width)
    assert sum(p.numel() for p in net.parameters()) == count
    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "classifiers.md")
                    .read_text().split())
    assert f"{count:,}" in text


def test_wider_cnn_work_quoted_in_the_docs():
    # docs/classifiers.md: `cnn:width=32` does 3.8x the multiply-adds per image of the
    # default width 16 (7.6 M against 2.0 M), counted on a forward pass by module hooks
    from mnistforge.classifiers.torch_models import build_network

    def macs(net):
        total = [0]

        def hook(m, _inputs, out):
            if isinstance(m, torch.nn.Conv2d):
                total[0] += out.numel() * m.in_channels // m.groups * math.prod(m.kernel_size)
            elif isinstance(m, torch.nn.Linear):
                total[0] += m.in_features * m.out_features

        for m in net.modules():
            m.register_forward_hook(hook)
        with torch.no_grad():
            net.eval()(torch.zeros(1, 1, 28, 28))
        return total[0]

    a, b = (macs(build_network("cnn", 10, (28, 28), width=w)) for w in (16, 32))
    assert (round(a / 1e6, 1), round(b / 1e6, 1), round(b / a, 1)) == (2.0, 7.6, 3.8)


# ------------------------------------------------------------------ repeatability
@pytest.mark.parametrize("spec", ["lenet:epochs=2,device=cpu",
                                  "cnn:epochs=2,device=cpu,augment=true"])
def test_seeded_cpu_training_is_bit_for_bit_repeatable(spec):
    X, y = _shapes(600, 10, seed=3)
    a = make_classifier(spec).fit(X, y)
    torch.manual_seed(12345)  # the caller's global RNG state must not matter
    b = make_classifier(spec).fit(X, y)
    assert np.array_equal(a.decision_function(X), b.decision_function(X))
    assert np.array_equal(a.predict(X), b.predict(X))
    c = make_classifier(spec.replace("epochs=2", "epochs=2,seed=1")).fit(X, y)
    assert not np.array_equal(a.decision_function(X), c.decision_function(X))


def test_training_leaves_the_global_torch_rng_alone():
    X, y = _shapes(100, 2, seed=0)
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    make_classifier("lenet:epochs=1,device=cpu").fit(X, y)
    assert torch.equal(torch.rand(3), expected)


# ------------------------------------------------------------------ shapes and classes
def _shapes(n, classes, seed=0, labels=None, side=28):
    """Synthetic images whose class is a bright bar at a class-specific position."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, classes, n)
    X = rng.integers(0, 40, (n, side, side)).astype(np.uint8)
    for c in range(classes):
        r, col = divmod(c, 8)
        X[codes == c, 2 + 3 * r:4 + 3 * r, 2 + 3 * col:5 + 3 * col] = 255
    lab = np.arange(classes) if labels is None else np.asarray(labels)
    return X, lab[codes]


@pytest.mark.parametrize("name", ["lenet", "cnn"])
@pytest.mark.parametrize("labels", [np.arange(1, 27), np.arange(62)], ids=["letters", "byclass"])
def test_emnist_shaped_class_counts(name, labels):
    X, y = _shapes(len(labels) * 6, len(labels), seed=1, labels=labels)
    clf = make_classifier(f"{name}:epochs=1,device=cpu").fit(X, y)
    assert np.array_equal(clf.classes_, labels)
    scores = clf.decision_function(X[:7])
    assert scores.shape == (7, len(labels)) and scores.dtype == np.float32
    pred = clf.predict(X)
    assert pred.shape == (len(X),) and np.isin(pred, labels).all()
    assert clf.model_[-1].out_features == len(labels)


def test_flat_rows_and_other_sizes():
    X, y = _shapes(200, 4, seed=2)
    clf = make_classifier("cnn:epochs=1,device=cpu").fit(X.reshape(200, -1), y)
    assert clf.in_hw_ == (28, 28)
    assert np.array_equal(clf.predict(X), clf.predict(X.reshape(200, -1)))
    with pytest.raises(ConfigError, match="28 x 28"):
        clf.predict(np.zeros((3, 32, 32), np.uint8))
    with pytest.raises(ConfigError, match="square"):
        clf.predict(np.zeros((3, 30)))
    X32, y32 = _shapes(100, 3, seed=4, side=32)
    for name in ("lenet", "cnn"):
        c = make_classifier(f"{name}:epochs=1,device=cpu").fit(X32, y32)
        assert c.decision_function(X32).shape == (100, 3)


def test_ten_class_model_refuses_a_26_class_test_set(tmp_path):
    X, y = _shapes(300, 10, seed=5)
    clf = make_classifier("lenet:epochs=1,device=cpu").fit(X, y)
    Xl, yl = _shapes(300, 26, seed=6, labels=np.arange(1, 27))
    with pytest.raises(ConfigError, match="10 classes") as e:
        clf.check_labels(yl)
    assert "17 unknown" in str(e.value)  # 10..26: the letters' labels a digit model lacks
    with pytest.raises(ConfigError, match="outside the 10 classes"):
        pr.evaluate_classifier(clf, None, None, Xl, yl, fitted=True)
    loaded = load_model(clf.save(tmp_path / "m"))
    with pytest.raises(ConfigError, match="outside the 10 classes"):
        pr.evaluate_classifier(loaded, None, None, Xl, yl, fitted=True)
    clf.check_labels(y[:5])  # a subset of the known classes is fine


# ------------------------------------------------------------------ devices
def test_device_choice():
    X, y = _shapes(64, 2)
    auto = make_classifier("lenet:epochs=1").resolve_device()
    assert auto.type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ConfigError, match="unknown device"):
        make_classifier("lenet:device=tpu")
    with pytest.raises(ConfigError, match="unknown optimizer"):
        make_classifier("cnn:optimizer=lbfgs")
    cuda = make_classifier("cnn:epochs=1,device=cuda")
    if torch.cuda.is_available():
        clf = cuda.fit(X, y)
        assert next(clf.model_.parameters()).device.type == "cuda"
        assert clf.predict(X).shape == (64,)
    else:
        with pytest.raises(ConfigError, match="CUDA device requested but none is available"):
            cuda.fit(X, y)
        with pytest.raises(ValueError, match="use device=cpu"):  # ConfigError is a ValueError
            make_classifier("lenet:device=cuda:0").resolve_device()


# ------------------------------------------------------------------ saving without pickle
@pytest.mark.parametrize("name", ["lenet", "cnn"])
def test_saved_model_reloads_to_identical_predictions(tmp_path, name):
    X, y = _shapes(400, 5, seed=7, labels=[3, 7, 11, 12, 40])
    clf = make_classifier(f"{name}:epochs=2,device=cpu,seed=4").fit(X, y)
    weights = save_model(clf, tmp_path / "model.npz")
    meta = tmp_path / "model.json"
    assert weights == tmp_path / "model.npz" and meta.is_file()
    doc = json.loads(meta.read_text())
    assert doc["arch"] == clf.arch and doc["classes"] == [3, 7, 11, 12, 40]
    assert doc["params"]["seed"] == 4 and len(doc["training"]["history"]) == 2
    with np.load(weights, allow_pickle=False) as z:  # plain arrays, no object pickles
        assert set(z.files) == set(clf.model_.state_dict())
    again = load_model(tmp_path / "model", device="cpu")
    assert type(again) is type(clf) and again.spec() == clf.spec()
    assert np.array_equal(again.decision_function(X), clf.decision_function(X))
    assert np.array_equal(again.predict(X), clf.predict(X))


def test_model_files_are_checked(tmp_path):
    X, y = _shapes(100, 3)
    clf = make_classifier("lenet:epochs=1,device=cpu").fit(X, y)
    w = clf.save(tmp_path / "m")
    with pytest.raises(MissingFileError):
        load_model(tmp_path / "absent")
    data = bytearray(w.read_bytes())
    data[-30] ^= 1
    w.write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match="sha256"):
        load_model(w)
    (tmp_path / "m.json").write_text('{"format": "something else"}')
    with pytest.raises(FormatError, match="mnistforge-model"):
        load_model(w)


def test_no_pickle_loading_in_the_package():
    import mnistforge
    root = Path(mnistforge.__file__).parent
    for py in root.rglob("*.py"):
        text = py.read_text()
        assert "torch.load(" not in text, py
        assert "allow_pickle=True" not in text, py
        assert "import pickle" not in text, py


# ------------------------------------------------------------------ early stopping
def test_early_stopping_keeps_the_best_epoch():
    # random labels: the validation error cannot improve for long, so training stops early
    rng = np.random.default_rng(8)
    X = rng.integers(0, 256, (200, 28, 28), dtype=np.uint8)
    y = rng.integers(0, 4, 200)
    Xv, yv = X[:100].copy(), rng.integers(0, 4, 100)
    clf = make_classifier("lenet:epochs=30,patience=2,device=cpu").fit(X, y, validation=(Xv, yv))
    hist = clf.history_
    assert len(hist) < 30
    errs = [h["val_errors"] for h in hist]
    assert clf.best_epoch_ == 1 + int(np.argmin(errs))
    assert len(hist) == clf.best_epoch_ + 2  # stopped after `patience` epochs without gain
    assert int((clf.predict(Xv) != yv).sum()) == min(errs)  # the best weights were restored


# ------------------------------------------------------------------ the evaluate command
def test_evaluate_cli_save_and_load_model(fashion_dir, tmp_path, capsys):
    model, p1, p2 = tmp_path / "lenet", tmp_path / "a.tsv", tmp_path / "b.tsv"
    common = ["--test", f"{fashion_dir}:test", "--limit-test", "500"]
    assert main(["evaluate", "lenet:epochs=1", "--device", "cpu", "--train",
                 f"{fashion_dir}:train", "--limit-train", "1000", *common,
                 "--save-model", str(model), "--predictions", str(p1)]) == 0
    assert (tmp_path / "lenet.npz").is_file() and (tmp_path / "lenet.json").is_file()
    assert main(["evaluate", "--load-model", str(model), "--device", "cpu", *common,
                 "--predictions", str(p2), "--json", str(tmp_path / "e.json")]) == 0
    assert p1.read_text().splitlines()[-500:] == p2.read_text().splitlines()[-500:]
    assert json.loads((tmp_path / "e.json").read_text())["n_train"] == 1000
    capsys.readouterr()
    assert main(["evaluate", "lenet:epochs=2,patience=1", "--device", "cpu", "--train",
                 f"{fashion_dir}:train", "--limit-train", "1000", *common,
                 "--validation", f"{fashion_dir}:test"]) == 0
    assert "early stopping: best validation epoch" in capsys.readouterr().out
    # usage errors: training flags with a loaded model, neural flags on other classifiers
    assert main(["evaluate", "--load-model", str(model), "--train", "x", *common]) == 2
    assert main(["evaluate", "knn", "--save-model", str(model), "--train", "x", *common]) == 2
    assert main(["evaluate", "knn:k=1", "--load-model", str(model), *common]) == 2
    assert main(["evaluate", "lenet", "--save-model", str(model), "--json",
                 str(tmp_path / "lenet.json"), "--train", "x", *common]) == 2
    if not torch.cuda.is_available():
        assert main(["evaluate", "cnn", "--device", "cuda", "--train", "x", *common]) == 2
        assert "CUDA device requested" in capsys.readouterr().err


def test_missing_torch_names_the_extra(monkeypatch):
    import sys

    from mnistforge.errors import MissingDependencyError
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    with pytest.raises(MissingDependencyError, match=r"mnistforge\[torch\]") as e:
        make_classifier("cnn:epochs=1").fit(np.zeros((4, 28, 28), np.uint8), [0, 1, 0, 1])
    assert isinstance(e.value, ImportError)


def test_light_augmentation_matches_the_evaluators_warp():
    # classifiers cannot import evaluators (layering); their warp is the independent oracle
    from mnistforge.classifiers.neural import random_similarity, similarity
    from mnistforge.evaluators.augment import apply_similarity

    x = np.zeros((1, 28, 28), np.float32)
    x[0, 8:20, 10:14] = 1
    x[0, 8:11, 10:20] = 1
    for dr, dc, rot, sc in [(1, -2, 0, 1), (0, 0, 0.2, 1), (0, 0, 0, 1.2), (1.5, 0.5, 0.1, 0.9)]:
        ours = similarity(x, np.array([[dr, dc]]), np.array([rot]), np.array([sc]))
        ref = apply_similarity(x.astype(np.float64), [[dc, dr, rot, sc]], order=1)
        assert np.abs(ours - ref).max() < 1e-5
    a = random_similarity(np.repeat(x, 3, 0), np.random.default_rng(1))
    b = random_similarity(np.repeat(x, 3, 0), np.random.default_rng(1))
    assert np.array_equal(a, b) and not np.array_equal(a[0], a[1])


# ------------------------------------------------------------------ full scale (docs figures)
@pytest.mark.slow
@pytest.mark.parametrize("spec, low, high", [("lenet:device=cpu", 0.085, 0.11),
                                             ("cnn:epochs=5,device=cpu", 0.07, 0.10)])
def test_fashion_full_train_test_error(fashion_dir, spec, low, high):
    # docs/classifiers.md: lenet 9.75 %, cnn:epochs=5 8.38 % (minutes of CPU each)
    Xtr, ytr = _load(fashion_dir, "fashion-mnist", "train")
    Xte, yte = _load(fashion_dir, "fashion-mnist", "test")
    err = (make_classifier(spec).fit(Xtr, ytr).predict(Xte) != yte).mean()
    assert low < err < high
