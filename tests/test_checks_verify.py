"""End to end: ``verify`` and ``mnistforge verify`` on real files and on small build folders."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from checks_data import synth_digits, synth_labels
from mnistforge.checks import verify
from mnistforge.cli import main
from mnistforge.io.idx import read_idx, write_idx
from mnistforge.io.manifest import write_manifest

pytest.importorskip("mnistforge.loaders.core")

N_TRAIN, N_TEST = 200, 60


def _statuses(report, prefix):
    return {r.name: r.status for r in report.find(prefix)}


def make_qmnist_build(folder, *, shared_writer=False, leak=False, short=False):
    """A small QMNIST-style build folder: images, 8-column extended labels, manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    sizes = {"train": N_TRAIN, "test": N_TEST}
    imgs = {"train": synth_digits(N_TRAIN, seed=11), "test": synth_digits(N_TEST, seed=12)}
    if leak:
        imgs["test"][7] = imgs["train"][33]
    for k, (s, n) in enumerate(sizes.items()):
        labels = synth_labels(n, seed=20 + k)
        md = np.zeros((n, 8), np.int32)
        md[:, 0] = labels
        md[:, 1] = 4
        md[:, 2] = (2100 if s == "train" else 2350) + np.arange(n) // 10  # writers
        if shared_writer and s == "test":
            md[0, 2] = 2100
        m = n - 1 if short and s == "test" else n
        write_idx(folder / f"qmnist-{s}-images-idx3-ubyte.gz", imgs[s][:m])
        write_idx(folder / f"qmnist-{s}-labels-idx2-int.gz", md[:m])
        write_idx(folder / f"qmnist-{s}-labels-idx1-ubyte.gz", labels[:m].astype(np.uint8))
    write_manifest(folder, kind="qmnist", inputs={"sd19": "synthetic"}, parameters={},
                   extra={"datasets": {"qmnist": sizes}})
    return folder


def make_emnist_build(folder, *, stored="transposed"):
    """A small emnist-mnist build; images stored transposed (official) or, wrongly, upright."""
    folder.mkdir(parents=True, exist_ok=True)
    sizes = {"train": 200, "test": 50}
    for k, (s, n) in enumerate(sizes.items()):
        up = synth_digits(n, seed=30 + k, height=26, top=1, width=(10, 20))
        store = up.transpose(0, 2, 1) if stored == "transposed" else up
        write_idx(folder / f"emnist-mnist-{s}-images-idx3-ubyte.gz", np.ascontiguousarray(store))
        # Balanced, and so is the last 50 (the validation portion of train).
        lab = np.concatenate([synth_labels(n - 50, seed=40 + k), synth_labels(50, seed=50 + k)])
        write_idx(folder / f"emnist-mnist-{s}-labels-idx1-ubyte.gz", lab)
        md = np.zeros((n, 6), np.int32)
        md[:, 0] = np.arange(n) % 25  # the same 25 writers on both sides (official style)
        write_idx(folder / f"emnist-mnist-{s}-metadata-idx2-int.gz", md)
    write_manifest(folder, kind="emnist", inputs={"sd19": "synthetic"},
                   parameters={"orientation": "official", "split": {"split_by": "random"}},
                   extra={"orientation": "official", "sides": {"split_by": "random"},
                          "datasets": {"mnist": {"train": 200, "test": 50, "classes": 10,
                                                 "validation": 50}}})
    return folder


# --------------------------------------------------------------------------- real data

def test_real_mnist_test_verifies_clean_with_qmnist_writers(mnist_reference, qmnist_reference):
    rep = verify(f"{mnist_reference}:test", metadata={
        "train": qmnist_reference / "qmnist-train-labels-idx2-int.gz",
        "test": qmnist_reference / "qmnist-test-labels-idx2-int.gz"})
    assert rep.status == "pass", rep.table()
    h = rep["hashes.registry"]
    # The shared copy is re-compressed: verified by its decompressed content.
    assert h.values["summary"] == {"content": 2}
    assert rep["integrity.size[test]"].values["found"] == 10000
    w = rep["writers.train-test"]
    assert w.values["shared"] == 0 and w.values["writers_train"] > 0
    assert rep["integrity.metadata[test]"].values["rows"] == 10000


def test_real_mnist_with_a_transposed_copy_fails_orientation(mnist_reference, tmp_path):
    d = tmp_path / "emnist-like"
    d.mkdir()
    x = read_idx(mnist_reference / "t10k-images-idx3-ubyte.gz")
    y = read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz")
    # An EMNIST-named file stored upright: the loader transposes it, as it must
    # for official EMNIST files, so the characters come out transposed.
    write_idx(d / "emnist-mnist-test-images-idx3-ubyte", np.ascontiguousarray(x))
    write_idx(d / "emnist-mnist-test-labels-idx1-ubyte", np.asarray(y))
    rep = verify(f"{d}:test")
    assert rep["orientation[test]"].status == "fail"


# --------------------------------------------------------------------------- builds

def test_build_folder_passes_then_an_edit_fails(tmp_path):
    b = make_qmnist_build(tmp_path / "b")
    rep = verify(b)
    assert rep.status == "pass", rep.table()
    assert rep["hashes.manifest"].status == "pass"
    assert rep["writers.train-test"].values["shared"] == 0
    assert rep["integrity.size[train]"].values["source"] == "build manifest"
    # Edit one file after the build (same size, other bytes).
    p = b / "qmnist-test-labels-idx1-ubyte.gz"
    lab = read_idx(p).copy()
    lab[3] = (lab[3] + 1) % 10
    write_idx(p, lab)
    rep = verify(b)
    assert rep["hashes.manifest"].status == "fail"
    assert rep["hashes.manifest"].values["hash_changed"] + \
        rep["hashes.manifest"].values["size_changed"] == [p.name]
    assert rep.exit_code == 1
    # Verifying one split hashes that split's files only.
    assert verify(f"{b}:train")["hashes.manifest"].status == "pass"


def test_build_with_shared_writer_leak_and_short_split(tmp_path):
    rep = verify(make_qmnist_build(tmp_path / "w", shared_writer=True))
    assert rep["writers.train-test"].status == "fail"
    assert rep["writers.train-test"].values["shared"] == 1
    rep = verify(make_qmnist_build(tmp_path / "l", leak=True))
    assert rep["duplicates.train-test"].status == "fail"
    assert rep["duplicates.train-test"].values["examples"] == [[33, 7]]
    rep = verify(make_qmnist_build(tmp_path / "s", short=True))
    assert rep["integrity.size[test]"].status == "fail"
    assert rep["integrity.size[test]"].values == {"found": N_TEST - 1, "expected": N_TEST,
                                                  "source": "build manifest"}
    assert rep["hashes.manifest"].status == "pass"


def test_truncated_file_fails_parse_and_load(tmp_path):
    b = make_qmnist_build(tmp_path / "t")
    p = b / "qmnist-train-images-idx3-ubyte.gz"
    raw = read_idx(p)
    import gzip
    data = gzip.decompress(p.read_bytes())
    p.write_bytes(gzip.compress(data[:-784]))
    rep = verify(b)
    assert rep["integrity.parse"].status == "fail"
    assert rep["load[train]"].status == "fail"
    assert rep["hashes.manifest"].status == "fail"
    assert raw.shape[0] == N_TRAIN


def test_emnist_build_official_style(tmp_path):
    rep = verify(make_emnist_build(tmp_path / "e"))
    st = {r.name: r.status for r in rep.results}
    assert st["orientation[train]"] == "pass" and st["statistics[train]"] == "pass"
    assert st["integrity.balance[train]"] == "pass"
    assert st["integrity.balance[validation]"] == "pass"
    # The official-style random split shares writers: a warning with the count.
    assert st["writers.train-test"] == "warn"
    assert rep["writers.train-test"].values["shared"] == 25
    assert rep.status == "warn" and rep.exit_code == 0
    assert verify(tmp_path / "e", strict=True).exit_code == 1


def test_emnist_file_stored_without_transposing_is_flagged(tmp_path):
    rep = verify(make_emnist_build(tmp_path / "u", stored="upright"))
    assert rep["orientation[train]"].status == "fail"
    assert rep["orientation[test]"].status == "fail"


def test_loaded_split_target():
    class Split:
        name, split = "mnist", "test"
        images = synth_digits(40, seed=5)
        labels = synth_labels(40, seed=5).astype(np.int64)
        classes = list("0123456789")
        metadata = None
    rep = verify(Split())
    assert rep["integrity.size[test]"].status == "fail"  # 40, the registry says 10,000
    assert rep["orientation[test]"].status == "pass"


# --------------------------------------------------------------------------- CLI

def test_cli_reference_json_report_and_exit_codes(tmp_path):
    b = make_qmnist_build(tmp_path / "b")
    ref = tmp_path / "ref"
    shutil.copytree(b, ref)
    (ref / "manifest.json").unlink()
    # The "official" test split: three images shifted by one pixel.
    p = ref / "qmnist-test-images-idx3-ubyte.gz"
    x = read_idx(p).copy()
    for i in (1, 2, 3):
        x[i] = np.roll(x[i], 1, axis=1)
    write_idx(p, x)
    out_json, out_rep = tmp_path / "v.json", tmp_path / "rep"
    rc = main(["verify", f"{b}:test", "--reference", f"{ref}:test", "--json", str(out_json),
               "--report", str(out_rep)])
    assert rc == 0
    data = json.loads(out_json.read_text())
    r = next(x for x in data["results"] if x["name"] == "reference[test]")
    assert r["values"]["unshifted"] == N_TEST - 3 and r["values"]["shifted"] == 3
    assert r["values"]["l2_quartiles"] == [0.0] * 5
    assert (out_rep / "index.html").is_file() and (out_rep / "reference_test.png").is_file()
    # A failing check: exit 1.
    rc = main(["verify", str(make_qmnist_build(tmp_path / "l", leak=True))])
    assert rc == 1
    # Usage error: unknown dataset.
    assert main(["verify", "no-such-dataset"]) == 2
