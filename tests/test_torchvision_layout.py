"""torchvision's layout (``export torchvision``, ``build --layout torchvision``) and
``mnistforge.compat``, without torch: the files, their manifests, the checks on the way in,
and the drop-in classes' items.  tests/test_torchvision_interop.py runs torchvision itself."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import mnistforge
from mnistforge.cli import main
from mnistforge.errors import ConfigError, MissingFileError
from mnistforge.io.hashing import sha256_file
from mnistforge.io.idx import read_idx
from mnistforge.io.manifest import Manifest
from mnistforge.registry import get_dataset, get_file, list_datasets, strip_compression, torchvision_datasets
from cache_helpers import put
from sd19_helpers import make_tiny_sd19

ROOT = Path(__file__).resolve().parents[1]
EMNIST = ["byclass", "bymerge", "balanced", "letters", "digits", "mnist"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_sd19(tmp_path_factory.mktemp("sd19"), scale=0.002)


@pytest.fixture(scope="module")
def built(tiny, tmp_path_factory):
    """``build all`` in both layouts from one synthetic SD19: (idx build, torchvision root, stdout)."""
    base = tmp_path_factory.mktemp("tv")
    assert main(["build", "all", "--sd19", str(tiny), "--out", str(base / "idx"), "--workers", "1"]) == 0
    out = base / "root"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["build", "all", "--sd19", str(tiny), "--out", str(out), "--workers", "1",
                   "--layout", "torchvision", "--json", str(base / "written.json")])
    assert rc == 0
    return base / "idx", out, buf.getvalue(), json.loads((base / "written.json").read_text())


# --------------------------------------------------------------------------- registry

def test_every_dataset_names_the_files_torchvision_reads():
    """torchvision reads the release files decompressed, under <Class>/raw (its raw_folder)."""
    # every dataset published in idx files has a torchvision class (Kuzushiji-49's .npz has none,
    # nor FEMNIST, which is built, never downloaded)
    idx_datasets = [n for n in list_datasets()
                    if (files := get_dataset(n).remote_files())
                    and all(f.format == "idx" for f in files)]
    assert torchvision_datasets() == idx_datasets and "kuzushiji-49" not in idx_datasets
    for name in torchvision_datasets():
        info = get_dataset(name)
        tv = info.torchvision
        assert tv.folder == f"{tv.cls}/raw"
        assert len(tv.classes) == len(info.classes)
        for split, (images, labels) in tv.files.items():
            sp = info.split(split)
            assert not sp.is_view
            assert (images, labels) == (strip_compression(sp.images), strip_compression(sp.labels))
    assert get_dataset("qmnist").torchvision.what == ("train", "test", "test10k", "test50k", "nist")
    assert [get_dataset(f"emnist-{s}").torchvision.split for s in EMNIST] == EMNIST


# --------------------------------------------------------------------------- writing

def test_build_all_in_torchvision_layout(built):
    idx, root, printed, written = built
    assert sorted(p.name for p in root.iterdir()) == ["EMNIST", "MNIST", "QMNIST", "manifest.json"]
    assert not list(root.parent.glob(".root.idx-*")), "the staging build is removed"
    assert not list(root.parent.glob("root.incomplete*"))
    raw = root / "MNIST" / "raw"
    assert sorted(p.name for p in raw.iterdir()) == sorted(
        ["manifest.json", "train-images-idx3-ubyte", "train-labels-idx1-ubyte",
         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"])
    for split in ("train", "test"):  # the same data as the idx build, decompressed
        a = mnistforge.load("mnist", split, root=idx)
        assert np.array_equal(read_idx(raw / get_dataset("mnist").torchvision.files[split][0]), a.images)
        assert np.array_equal(read_idx(raw / get_dataset("mnist").torchvision.files[split][1]), a.labels)
    assert "torchvision.datasets.EMNIST(root, split='letters')" in printed
    assert written["datasets"]["qmnist"]["splits"].keys() == {"train", "test", "nist"}
    assert Manifest.read(root).kind == "torchvision" and Manifest.read(raw).outputs.keys() == {
        p.name for p in raw.iterdir() if p.name != "manifest.json"}


def test_emnist_stored_transposed_and_qmnist_table_as_released(built):
    idx, root, _, _ = built
    for s in EMNIST:
        ds = mnistforge.load(f"emnist-{s}", "test", root=idx)
        stored = read_idx(root / "EMNIST" / "raw" / f"emnist-{s}-test-images-idx3-ubyte")
        assert np.array_equal(stored, ds.images.transpose(0, 2, 1))  # as the official files
        assert not np.array_equal(stored, ds.images)
    table = read_idx(root / "QMNIST" / "raw" / "qmnist-test-labels-idx2-int")
    gz = read_idx(idx / "qmnist" / "qmnist-test-labels-idx2-int.gz")
    assert table.dtype == np.dtype(">i4") and table.shape[1] == 8
    assert np.array_equal(table, gz)  # the 8 columns, byte for byte as built


def test_written_root_loads_through_its_manifests(built):
    """``load(name, root=<Class>/raw)`` checks the files against the manifest written there."""
    idx, root, _, _ = built
    ds = mnistforge.load("emnist-letters", "train", root=root / "EMNIST" / "raw")
    ref = mnistforge.load("emnist-letters", "train", root=idx)
    assert np.array_equal(ds.images, ref.images) and np.array_equal(ds.labels, ref.labels)
    assert set(ds.status.values()) >= {"built"}
    assert Manifest.read(root / "EMNIST" / "raw").storage_orientation == "transposed"


def test_export_fashion_mnist_and_real_mnist_test(fashion_dir, mnist_reference, tmp_path, capsys):
    out = tmp_path / "root"
    assert main(["export", "torchvision", str(fashion_dir), str(mnist_reference), "--out", str(out),
                 "--json", str(tmp_path / "w.json")]) == 0
    assert "official content" in capsys.readouterr().out
    written = json.loads((tmp_path / "w.json").read_text())
    assert written["warnings"] == ["mnist: torchvision's MNIST loads a root only when every split is "
                                   "there (train missing); mnistforge.compat.MNIST reads it"]
    assert all(f["official"] for d in written["datasets"].values() for f in d["files"].values())
    for name, folder in (("fashion-mnist", "FashionMNIST"), ("mnist", "MNIST")):
        tv = get_dataset(name).torchvision
        for split in (("train", "test") if name == "fashion-mnist" else ("test",)):
            for role, fname in enumerate(tv.files[split]):
                sp = get_dataset(name).split(split)
                want = get_file(f"{name}/{sp.images if role == 0 else sp.labels}").content_sha256
                assert sha256_file(out / folder / "raw" / fname) == want  # the release's own bytes
    real = mnistforge.load("mnist", "test", root=mnist_reference)
    again = mnistforge.load("mnist", "test", root=out / "MNIST" / "raw")
    assert np.array_equal(real.images, again.images) and np.array_equal(real.labels, again.labels)


def _cli(capsys, *args) -> tuple[int, str]:
    capsys.readouterr()
    rc = main([str(a) for a in args])
    return rc, capsys.readouterr().err


def test_two_sources_for_one_file_and_views_are_refused(mnist_reference, tmp_path, capsys):
    rc, err = _cli(capsys, "export", "torchvision", mnist_reference, "mnist:test", "--out", tmp_path / "a")
    assert rc == 2 and "two sources would both write MNIST/raw/t10k" in err
    rc, err = _cli(capsys, "export", "torchvision", "qmnist:test10k", "--out", tmp_path / "b")
    assert rc == 2 and "reads no 'test10k' files" in err and "write qmnist:test" in err
    rc, err = _cli(capsys, "export", "torchvision", "mnist:test[:100]", "--out", tmp_path / "c")
    assert rc == 2 and "slice" in err
    rc, err = _cli(capsys, "export", "torchvision", "mnist", "--push", "me/x", "--out", tmp_path / "d")
    assert rc == 2 and "--push: only for `export hf`" in err
    with pytest.raises(ConfigError, match="two sources"):  # the library says it the same way
        from mnistforge.layouts import sources_from_targets

        sources_from_targets([mnist_reference, "mnist:test"])
    assert not any(tmp_path.iterdir()), "nothing written when refused"


def test_existing_root_kept_unless_overwrite_of_ours(mnist_reference, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine")
    rc, err = _cli(capsys, "export", "torchvision", mnist_reference, "--out", mine)
    assert rc != 0 and "already exists" in err
    rc, err = _cli(capsys, "export", "torchvision", mnist_reference, "--out", mine, "--overwrite")
    assert rc != 0 and "replaces only a folder mnistforge wrote" in err
    assert sorted(p.name for p in mine.iterdir()) == ["keep.txt"] and (mine / "keep.txt").read_text() == "mine"
    ours = tmp_path / "ours"
    assert main(["export", "torchvision", str(mnist_reference), "--out", str(ours)]) == 0
    assert main(["export", "torchvision", str(mnist_reference), "--out", str(ours), "--overwrite"]) == 0
    assert (ours / "MNIST" / "raw" / "t10k-images-idx3-ubyte").is_file()


# --------------------------------------------------------------------------- compat, without torch

def test_compat_reads_a_root_written_by_mnistforge(built):
    from mnistforge.compat import EMNIST, MNIST, QMNIST

    idx, root, _, _ = built
    m = MNIST(root, train=False)
    ref = mnistforge.load("mnist", "test", root=idx)
    assert len(m) == len(ref) and m.classes[0] == "0 - zero" and m.class_to_idx["9 - nine"] == 9
    img, target = m[3]
    assert isinstance(img, Image.Image) and img.mode == "L" and img.size == (28, 28)
    assert type(target) is int and target == int(ref.labels[3])
    assert np.array_equal(np.asarray(img), ref.images[3])
    e = EMNIST(root, "letters", train=True)
    ref = mnistforge.load("emnist-letters", "train", root=idx)
    assert np.array_equal(np.asarray(e[0][0]), ref.images[0])  # upright
    assert np.array_equal(np.asarray(EMNIST(root, "letters", upright=False)[0][0]), ref.images[0].T)
    assert e.classes[:3] == ["N/A", "a", "b"]  # torchvision's names
    q = QMNIST(root, what="test10k")  # a small build: all of its test rows
    ref = mnistforge.load("qmnist", "test10k", root=idx)
    assert len(q) == len(ref) and q[0][1] == int(ref.labels[0])


def test_compat_reads_a_torchvision_download_and_the_cache(mnist_reference, cache, tmp_path):
    """A root as torchvision's download leaves it (``.gz`` and decompressed twins, no manifest)
    is checked against the registry; without a root, the cache serves (download=False: no network)."""
    from mnistforge.compat import MNIST

    raw = tmp_path / "torchvision-root" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(mnist_reference / f, raw / f)
        with gzip.open(raw / f) as src, open(raw / f[:-3], "wb") as dst:
            shutil.copyfileobj(src, dst)
    m = MNIST(str(tmp_path / "torchvision-root"), train=False)
    assert set(m.loaded.status.values()) & {"raw", "content", "exact"}
    real = mnistforge.load("mnist", "test", root=mnist_reference)
    assert np.array_equal(m.loaded.images, real.images) and m[0][1] == int(real.labels[0])
    with pytest.raises(MissingFileError, match="mnistforge export torchvision mnist") as e:
        MNIST(tmp_path / "empty", train=False, download=False)
    assert "download=True" in str(e.value)
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        put(cache, "mnist", mnist_reference / f)
    c = MNIST(tmp_path / "empty", train=False, download=False)
    assert np.array_equal(c.loaded.images, real.images) and c.loaded.source.startswith("cache")
    assert not (tmp_path / "empty").exists(), "compat writes nothing into root"


def test_compat_bad_arguments_say_what_is_valid(built):
    from mnistforge.compat import EMNIST, QMNIST

    _, root, _, _ = built
    with pytest.raises(ValueError, match="byclass, bymerge, balanced, letters, digits, mnist"):
        EMNIST(root, "capitals")
    with pytest.raises(ValueError, match="train, test, test10k, test50k, nist"):
        QMNIST(root, what="test5k")


def _python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


def test_compat_imports_no_torch_and_names_the_extra_without_it(built):
    """Items need only Pillow; ``.data`` needs torch: without it, MissingDependencyError names [torch]."""
    _, root, _, _ = built
    r = _python(f"""
import sys
sys.modules["torch"] = None  # as if torch were not installed
from mnistforge.compat import MNIST, QMNIST
from mnistforge.errors import MissingDependencyError
m = MNIST({str(root)!r}, train=True)
img, target = m[0]
assert img.mode == "L" and type(target) is int
for get in (lambda: m.data, lambda: m.targets, lambda: QMNIST({str(root)!r}, compat=False)[0]):
    try:
        get()
    except MissingDependencyError as e:
        assert "mnistforge[torch]" in str(e), e
    else:
        raise AssertionError("no error without torch")
print("ok")
""")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    # torch comes with torchvision only: the classes then subclass torchvision's (issue 45)
    r = _python("import sys, importlib.util, mnistforge.compat; "
                "print(('torch' in sys.modules) == (importlib.util.find_spec('torchvision') is not None))")
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr


def test_a_hugging_face_export_as_source_gives_the_same_files(built, mnist_reference, tmp_path):
    idx, root, _, _ = built
    hf = tmp_path / "hf"
    assert main(["export", "hf", f"{idx / 'emnist'}:emnist-letters", str(mnist_reference), "--out", str(hf),
                 "--no-check"]) == 0
    out = tmp_path / "from-hf"
    assert main(["export", "torchvision", str(hf), "--out", str(out)]) == 0
    for rel in ("EMNIST/raw/emnist-letters-train-images-idx3-ubyte",
                "EMNIST/raw/emnist-letters-test-labels-idx1-ubyte"):
        assert sha256_file(out / rel) == sha256_file(root / rel)  # as written from the build itself
    want = get_file("mnist/t10k-images-idx3-ubyte.gz").content_sha256
    assert sha256_file(out / "MNIST" / "raw" / "t10k-images-idx3-ubyte") == want
