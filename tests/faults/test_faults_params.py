"""Bad parameters of issue 26, refused before any work with a named error that says what was
expected, what was found and what to do: split slices, dataset indexing, classifier specs, TARP
points and sizes, Manitest groups, slices and classifier outputs, a ``significance --test-set``
that is not the predictions' test set, ``label_issues=`` on every route; and the memory cap of
decompression (a capped ``.xz``/``.gz`` read peaks near its payload, measured with tracemalloc).

Registry targets run offline with an empty cache: a check made after the load would end in
"offline" (exit 3), not in the usage error (exit 2) asserted here.
"""
from __future__ import annotations

import shutil
import sys
import tracemalloc

import numpy as np
import pytest

from mnistforge.cli import main
from mnistforge.errors import (ClassifierOutputError, ConfigError, EmptySelectionError,
                               IndexKindError, IndexRangeError, InsufficientMemoryError,
                               TestSetMismatchError)


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")


@pytest.fixture
def mnist_test_folder(tmp_path, mnist_reference):
    """A folder holding a copy of the real MNIST test set (images and labels)."""
    d = tmp_path / "mnist"
    d.mkdir()
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(mnist_reference / f, d / f)
    return d


def _split(n=5):
    from mnistforge.loaders.split import DatasetSplit
    from mnistforge.registry import get_dataset

    images = np.arange(n * 28 * 28, dtype=np.int64).reshape(n, 28, 28).astype(np.uint8)
    return DatasetSplit("mnist", "test", images, np.arange(n) % 10, get_dataset("mnist"))


# --------------------------------------------------------------------------- split slices

@pytest.mark.parametrize("spec,error,words", [
    ("test[10:5]", EmptySelectionError, ["selects no rows", "rows 10..5", "START before STOP"]),
    ("test[:0]", EmptySelectionError, ["selects no rows"]),
    ("test[5000:5000]", EmptySelectionError, ["selects no rows", "e.g. [5000:5100]"]),
    ("test[:20000]", IndexRangeError, ["-10000..10000", "10000 rows", "found 20000"]),
    ("test[-99999999999999999999999:]", IndexRangeError, ["-10000..10000"]),
    ("test[:" + "9" * 5000 + "]", IndexRangeError, ["-10000..10000", "5000-digit number"]),
])
def test_reversed_empty_and_huge_split_slices_are_refused_before_the_load(
        spec, error, words, offline, tmp_path, capsys):
    from mnistforge.loaders import resolve_target

    with pytest.raises(error) as e:
        resolve_target(f"mnist:{spec}")
    assert isinstance(e.value, ConfigError)
    assert all(w in str(e.value) for w in words), str(e.value)
    if error is IndexRangeError:
        assert isinstance(e.value, IndexError)
    out = tmp_path / "grid.png"
    assert main(["show", f"mnist:{spec}", "--out", str(out)]) == 2   # not 3: nothing was loaded
    assert not out.exists()
    err = capsys.readouterr().err
    assert words[0] in err and "Traceback" not in err and len(err) < 600


def test_split_slices_of_a_folder_are_refused_and_good_ones_load(mnist_test_folder):
    from mnistforge import load

    with pytest.raises(EmptySelectionError, match="selects no rows"):
        load("mnist", "test[10:5]", root=mnist_test_folder)
    with pytest.raises(IndexRangeError, match=r"-10000\.\.10000"):
        load("mnist", "test[:10001]", root=mnist_test_folder)
    ds = load("mnist", "test[5:10]", root=mnist_test_folder)
    whole = load("mnist", "test", root=mnist_test_folder)
    assert len(ds) == 5 and ds.indices.tolist() == [5, 6, 7, 8, 9]
    np.testing.assert_array_equal(ds.labels, whole.labels[5:10])


# --------------------------------------------------------------------------- label_issues=

def test_an_unknown_label_issues_mode_is_refused_on_every_route(mnist_test_folder, tmp_path,
                                                                 offline):
    from mnistforge import load

    npz = tmp_path / "copy.npz"
    rng = np.random.default_rng(0)
    np.savez(npz, x_test=rng.integers(0, 256, (20, 28, 28), dtype=np.uint8),
             y_test=rng.integers(0, 10, 20))
    routes = [dict(name="mnist", split="test"),                       # the cache (empty)
              dict(name="mnist", split="test", root=mnist_test_folder),  # an idx folder
              dict(name=str(npz), split="test"),                       # a third-party copy
              dict(name="mnist", split="test", root=npz)]
    for kw in routes:
        with pytest.raises(ConfigError, match="invalid label_issues") as e:
            load(**kw, label_issues="bogus")
        assert "'exclude'" in str(e.value) and "'bogus'" in str(e.value)


# --------------------------------------------------------------------------- indexing

def test_dataset_indexing_errors_are_named_and_say_the_range():
    ds = _split(5)
    cases = [(5, IndexRangeError, IndexError, "-5..4"), (-6, IndexRangeError, IndexError, "-5..4"),
             (10**30, IndexRangeError, IndexError, "31-digit number"),
             (np.int64(7), IndexRangeError, IndexError, "the split has 5 rows"),
             ([0, 9], IndexRangeError, IndexError, "found 9"),
             (np.array([2**63], np.uint64), IndexRangeError, IndexError, "-5..4"),
             ([10**30], IndexRangeError, IndexError, "-5..4"),
             ([True] * 4, IndexRangeError, IndexError, "5 values"),
             (True, IndexKindError, TypeError, "not indexed by a bool"),
             (np.bool_(False), IndexKindError, TypeError, "ds[mask] takes a whole mask"),
             (2.0, IndexKindError, TypeError, "use ds[2]"),
             (float("nan"), IndexKindError, TypeError, "not indexed by a float"),
             ([1.0, 2.0], IndexKindError, TypeError, "float64"),
             ("3", IndexKindError, TypeError, "cannot select rows"),
             (slice(1.5, None), IndexKindError, TypeError, "integers"),
             (slice(None, None, 0), EmptySelectionError, ValueError, "step cannot be zero")]
    for key, named, builtin, words in cases:
        with pytest.raises(named) as e:
            ds[key]
        assert isinstance(e.value, builtin) and isinstance(e.value, ConfigError), key
        assert words in str(e.value) and "expected" in str(e.value), (key, str(e.value))


def test_indices_masks_and_slices_still_select_as_documented():
    ds = _split(5)
    image, label = ds[-1]
    assert label == 4 and image[0, 0] == ds.images[4, 0, 0]
    assert ds[np.int32(2)][1] == 2
    assert ds[[4, 0]].indices.tolist() == [4, 0]
    assert ds[np.array([True, False, True, False, False])].indices.tolist() == [0, 2]
    assert ds[::-1].indices.tolist() == [4, 3, 2, 1, 0]
    assert ds[1:100].indices.tolist() == [1, 2, 3, 4]            # slices clip, as lists do
    assert len(ds[10**30:]) == 0 and len(ds[[]]) == 0
    assert ds[[-1]].indices.tolist() == [4]


# --------------------------------------------------------------------------- classifier specs

@pytest.mark.parametrize("spec,words", [
    ("knn:k=3,k=5", ["k given twice", "keep one of k=3 and k=5"]),
    ("elm:hidden=10,seed=1,hidden=20", ["hidden given twice"]),
    ("linear:ridge=-1", ["ridge", "a finite number >= 0", "-1.0"]),
    ("elm:ridge=-0.001", ["ridge", ">= 0"]),
])
def test_repeated_spec_keys_and_a_negative_ridge_are_usage_errors(spec, words, offline, capsys):
    from mnistforge.classifiers.base import make_classifier

    with pytest.raises(ConfigError) as e:
        make_classifier(spec)
    assert all(w in str(e.value) for w in words), str(e.value)
    assert main(["evaluate", spec, "--train", "mnist:train", "--test", "mnist:test"]) == 2
    assert words[0] in capsys.readouterr().err


def test_a_negative_ridge_is_refused_through_the_api_too_and_zero_is_kept():
    from mnistforge.classifiers.elm import ELMClassifier
    from mnistforge.classifiers.linear import LinearClassifier

    for cls in (LinearClassifier, ELMClassifier):
        with pytest.raises(ConfigError, match=">= 0"):
            cls(ridge=-1.0)
    X = np.array([[0.0, 0.0], [0.0, 1.0], [3.0, 0.0], [3.0, 1.0]])
    assert LinearClassifier(ridge=0.0).fit(X, [0, 0, 1, 1]).predict(X).tolist() == [0, 0, 1, 1]


# --------------------------------------------------------------------------- TARP

@pytest.mark.parametrize("point,words", [
    ("lin=nan@5e6", ["error rate in [0, 1]", "nan"]),
    ("lin=1.5@5e6", ["error rate in [0, 1]", "1.5"]),
    ("lin=150%@5e6", ["error rate in [0, 1]"]),
    ("lin=-0.1@5e6", ["error rate in [0, 1]"]),
    ("lin=0.02@-5", ["cost >= 0", "-5.0"]),
    ("lin=0.02@nan", ["cost >= 0"]),
    ("lin=0.02@inf", ["cost >= 0"]),
])
def test_tarp_points_with_nan_negative_cost_or_impossible_error_are_refused(point, words, offline,
                                                                            capsys):
    from mnistforge.commands.tarp import parse_point

    with pytest.raises(ConfigError) as e:
        parse_point(point)
    assert all(w in str(e.value) for w in words), str(e.value)
    assert main(["tarp", "mnist:test", "--task", "0v1", "--classifier-point", point]) == 2
    assert "bad classifier point" in capsys.readouterr().err
    assert parse_point("lin=2%@5e6") == ("lin", 0.02, 5e6)


def test_tarp_api_refuses_nan_samples_too_deep_trees_and_bad_points():
    from mnistforge.evaluators.tarp import region_of, tarp_bounds

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), np.arange(40) % 2
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ConfigError, match="1 non-finite values"):
        tarp_bounds(Xn, y, ns=[2], ks=[1], runs=2, workers=1)
    with pytest.raises(ConfigError, match="k <= 62"):
        tarp_bounds(X, y, ns=[2], ks=[63], runs=2, workers=1)
    res = tarp_bounds(X, y, ns=[2], ks=[0, 1], runs=2, workers=1)
    with pytest.raises(ConfigError, match=r"in \[0, 1\]"):
        region_of(float("nan"), 10.0, res)
    assert region_of(0.0, 10.0, res) in ("structural gain", "computational gain", "negative gain")


def test_tarp_n_1e8_is_refused_saying_how_much_memory_it_would_need(mnist_test_folder, capsys):
    tracemalloc.start()
    try:
        rc = main(["tarp", f"{mnist_test_folder}:test", "--task", "0v1", "--n", "100000000",
                   "--k", "0..2", "--runs", "2", "--workers", "1"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "would not fit in memory" in err and "TiB needed" in err and "available" in err
    assert "--n" in err                                  # what to do
    assert peak < 200 * 2**20                            # the load, not the 1.3 TiB


def test_require_memory_refuses_what_cannot_fit_and_passes_what_can():
    from mnistforge.evaluators.tarp import tarp_memory
    from mnistforge.io.memory import available_memory, format_bytes, require_memory

    have = available_memory()
    assert have is None or have > 0
    require_memory(1 << 20, "one MiB")
    with pytest.raises(InsufficientMemoryError) as e:
        require_memory(2**62, "four EiB", hint="ask for less")
    assert isinstance(e.value, MemoryError) and isinstance(e.value, ConfigError)
    assert format_bytes(2**62) in str(e.value) and "ask for less" in str(e.value)
    # the estimate grows with the directions and the samples, as the arrays do
    assert tarp_memory(2115, 784, 10**8, 2, 2) > 1000 * tarp_memory(2115, 784, 10**4, 2, 2) / 2
    assert tarp_memory(2115, 784, 10, 2, 2) < 64 * 2**20


# --------------------------------------------------------------------------- Manitest

def _blobs():
    yy, xx = np.mgrid[0:28, 0:28]
    return np.stack([np.exp(-((xx - 13.5 - s) ** 2 + (yy - 13.5) ** 2) / 6.0)
                     for s in (-1.0, 0.0, 1.0)])


def test_manitest_refuses_a_classifier_output_of_the_wrong_shape_before_scoring():
    from mnistforge.evaluators.manitest import manitest

    calls = []

    def scores(x):            # N x 10 scores, not labels: raveled they looked like 10 N labels
        calls.append(len(x))
        return np.zeros((len(x), 10))

    with pytest.raises(ClassifierOutputError) as e:
        manitest(_blobs(), scores, "translation", samples=None, cap=50, workers=1)
    assert "shape (1, 10)" in str(e.value) and "argmax" in str(e.value)
    assert calls == [1]                                  # one probe image, no march
    for bad in (lambda x: 3, lambda x: np.zeros(len(x) + 1), lambda x: np.full(len(x), np.nan)):
        with pytest.raises(ClassifierOutputError):
            manitest(_blobs(), bad, "rotation", samples=None, cap=50, workers=1)
    ok = manitest(_blobs(), lambda x: np.zeros((len(x), 1), int), "rotation", samples=None,
                  cap=30, workers=1)                     # N x 1 labels are labels
    assert ok.samples == 3


def test_manitest_refuses_empty_samples_and_out_of_range_indices():
    from mnistforge.evaluators.manitest import manitest

    label = lambda x: np.zeros(len(x), int)  # noqa: E731
    with pytest.raises(EmptySelectionError, match="no images"):
        manitest(np.zeros((0, 28, 28)), label, "rotation")
    with pytest.raises(EmptySelectionError, match="samples >= 1"):
        manitest(_blobs(), label, "rotation", samples=0)
    with pytest.raises(EmptySelectionError, match="non-empty"):
        manitest(_blobs(), label, "rotation", indices=[])
    with pytest.raises(IndexRangeError, match=r"0\.\.2 \(3 images\)"):
        manitest(_blobs(), label, "rotation", indices=[0, 3])
    with pytest.raises(IndexRangeError):
        manitest(_blobs(), label, "rotation", indices=[-1])


@pytest.mark.parametrize("argv,words", [
    (["--group", ","], "no transformation group"),
    (["--group", " "], "no transformation group"),
])
def test_manitest_cli_refuses_an_empty_group_before_any_load(argv, words, offline, capsys):
    assert main(["manitest", "mnist:test", "--classifier", "linear", *argv]) == 2
    assert words in capsys.readouterr().err


def test_manitest_cli_refuses_slices_beyond_the_split_before_training(mnist_test_folder, capsys):
    # no train split in the folder: a check after the training would fail on the load instead
    for flag, sl in (("--slice", "20000:30000"), ("--slice", "9990:10001")):
        assert main(["manitest", f"{mnist_test_folder}:test", "--classifier", "linear",
                     flag, sl, "--samples", "2"]) == 2
        err = capsys.readouterr().err
        assert "reaches beyond" in err and "0 <= A < B <= 10000" in err, err


def test_manitest_cli_names_a_user_model_with_the_wrong_output(mnist_test_folder, tmp_path,
                                                              monkeypatch, capsys):
    (tmp_path / "scoremodel.py").write_text(
        "import numpy as np\n"
        "def predict(x):\n"
        "    return np.zeros((len(x), 10))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["manitest", f"{mnist_test_folder}:test", "--classifier", "scoremodel:predict",
                 "--samples", "2", "--group", "rotation", "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "wrong shape" in err and "scores.argmax(1)" in err
    sys.modules.pop("scoremodel", None)


# --------------------------------------------------------------------------- significance

def _prediction_files(tmp_path, labels):
    from mnistforge.evaluators.errorlists import write_predictions

    rng = np.random.default_rng(0)
    out = []
    for i in range(2):
        pred = np.where(rng.random(labels.size) < 0.9, labels, (labels + 1) % 10)
        p = tmp_path / f"p{i}.tsv"
        write_predictions(p, pred, labels, name=f"s{i}")
        out.append(p)
    return out


def test_significance_refuses_a_test_set_of_another_size_before_the_bootstrap(tmp_path, offline,
                                                                             capsys):
    a, b = _prediction_files(tmp_path, np.arange(500) % 10)
    with pytest.raises(TestSetMismatchError) as e:
        from mnistforge.evaluators.significance import check_test_set
        check_test_set("mnist:test", 500)
    assert "500 samples" in str(e.value) and "10000 samples" in str(e.value)
    assert "mnist:test[:500]" in str(e.value)             # what to do
    assert main(["significance", str(a), str(b), "--test-set", "mnist:test",
                 "--bootstrap", "10000000"]) == 2
    assert "does not match the predictions" in capsys.readouterr().err


def test_significance_refuses_a_test_set_whose_labels_differ(tmp_path, mnist_test_folder, capsys):
    from mnistforge import load

    y = np.asarray(load("mnist", "test", root=mnist_test_folder).labels)
    good = _prediction_files(tmp_path, y)
    target = f"{mnist_test_folder}:test"
    assert main(["significance", *map(str, good), "--test-set", target, "--bootstrap", "10"]) == 0
    capsys.readouterr()
    other = tmp_path / "other"
    other.mkdir()
    bad = _prediction_files(other, np.roll(y, 1))         # same size, another order
    assert main(["significance", *map(str, bad), "--test-set", target, "--bootstrap", "10"]) == 2
    err = capsys.readouterr().err
    assert "does not match the predictions' labels" in err and "rows differ" in err
    short = tmp_path / "short"
    short.mkdir()
    part = _prediction_files(short, y[:9999])
    assert main(["significance", *map(str, part), "--test-set", target, "--bootstrap", "10"]) == 2
    assert "9999 samples" in capsys.readouterr().err


# --------------------------------------------------------------------------- decompression

@pytest.mark.parametrize("suffix", ["xz", "gz"])
def test_a_capped_compressed_read_peaks_near_its_payload(tmp_path, suffix):
    from mnistforge.io.idx import read_idx, write_idx

    rng = np.random.default_rng(0)
    block = np.repeat(rng.integers(0, 256, 1 << 16, dtype=np.uint8), 16)   # compressible
    images = np.tile(block, 32).reshape(-1, 64, 64)                            # 32 MiB
    path = tmp_path / f"big-idx3-ubyte.{suffix}"
    write_idx(path, images, compresslevel=1)
    assert path.stat().st_size < images.nbytes / 4
    tracemalloc.start()
    try:
        got = read_idx(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got.shape == images.shape and np.array_equal(got, images)
    assert peak < 1.25 * images.nbytes, f"peak {peak / images.nbytes:.2f} x the payload"


def test_a_truncated_compressed_file_is_named_not_half_read(tmp_path):
    import lzma

    from mnistforge.errors import IdxFormatError
    from mnistforge.io.idx import idx_header_bytes, read_idx

    arr = (np.arange(50 * 28 * 28) % 251).astype(np.uint8).reshape(50, 28, 28)
    data = lzma.compress(idx_header_bytes(arr.shape, arr.dtype) + arr.tobytes())
    p = tmp_path / "cut-idx3-ubyte.xz"
    p.write_bytes(data[:-12])                              # the end marker cut off
    with pytest.raises(IdxFormatError, match="truncated compressed data") as e:
        read_idx(p)
    assert str(p) in str(e.value) and "re-download or rebuild" in str(e.value)
