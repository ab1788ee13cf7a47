"""open_sd19 on tiny hand-made trees: both editions, zip or folder, order, cache, errors."""
from __future__ import annotations

import shutil
import zipfile

import numpy as np
import pytest

from mnistforge.errors import MissingSourceError, SD19FormatError, UnsafeArchiveError
from mnistforge.sd19 import index as sd19_index
from mnistforge.sd19 import open_sd19
from mnistforge.sd19.reader import find_trees

from sd19_helpers import expected_index, write_tree

COMBOS = [(1, "dir"), (1, "zip"), (2, "dir"), (2, "zip")]


def _meta(src):
    ix = src.index
    return list(zip(ix["hsf"].tolist(), ix["writer"].tolist(), ix["template"].tolist(),
                    ix["field"].tolist(), ix["entry"].tolist(), ix["ascii"].tolist()))


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    out = {}
    for ed, pk in COMBOS:
        root = tmp_path_factory.mktemp(f"e{ed}{pk}") / "sd19"
        out[(ed, pk)] = write_tree(root, edition=ed, packaging=pk)
    return out


@pytest.mark.parametrize("combo", COMBOS)
def test_reads_metadata_and_pixels(trees, combo):
    root, chars, imgs = trees[combo]
    src = open_sd19(root, workers=1)
    assert src.edition == combo[0] and src.packaging == combo[1]
    assert src.hierarchies == ("by_class", "by_field", "by_write")
    assert _meta(src) == expected_index(chars)
    assert (src.read_all(np.arange(len(src))) == imgs).all()
    ix = src.index
    # digit numbering and the one planted duplicate
    d = ix["field"] == b"d"
    assert (ix["digit_index"][d] == np.arange(d.sum())).all() and (ix["digit_index"][~d] == -1).all()
    dup = np.flatnonzero(ix["duplicate_of"] >= 0)
    assert len(dup) == 1 and (imgs[dup[0]] == imgs[ix["duplicate_of"][dup[0]]]).all()
    assert ix["hash"][dup[0]] == ix["hash"][ix["duplicate_of"][dup[0]]]
    assert len(np.unique(ix["hash"])) == len(ix) - 1
    assert src.anomalies == [] and src.join_report is None and src.cls_present


def test_four_combinations_agree(trees):
    ref = None
    for combo in COMBOS:
        src = open_sd19(trees[combo][0])
        got = (src.index, src.read_all(np.arange(len(src))))
        if ref is None:
            ref = got
        assert (got[0] == ref[0]).all()
        assert (got[1] == ref[1]).all()


@pytest.mark.parametrize("combo", [(1, "zip"), (2, "zip"), (2, "dir")])
def test_read_any_order_in_parallel(trees, combo):
    root, chars, imgs = trees[combo]
    src = open_sd19(root)
    rows = np.random.default_rng(1).permutation(len(src))
    rows = np.concatenate([rows, rows[:300]])          # repeats too, and > 256 rows: pool path
    seen = []
    for batch_rows, batch in src.read(rows, batch_size=97, workers=2):
        assert len(batch_rows) <= 97 and batch.shape == (len(batch_rows), 128, 128)
        assert (batch == imgs[batch_rows]).all()
        seen.append(batch_rows)
    assert (np.concatenate(seen) == rows).all()


def test_member_names_and_digits(trees):
    src = open_sd19(trees[(2, "zip")][0])
    assert src.member_name(0) == "by_write/hsf_0/f0000_14/d0000_14/d0000_14_00000.png"
    src1 = open_sd19(trees[(1, "dir")][0])
    assert src1.member_name(3) == "by_write/hsf_0/f0000_14/d0000_14.mis#3"
    assert (src.index["digit_index"][src.digits()] == np.arange(len(src.digits()))).all()


def test_index_is_cached_and_invalidated(tmp_path):
    root, chars, imgs = write_tree(tmp_path / "s", edition=2, packaging="dir")
    src = open_sd19(root)
    cache = root / ".mnistforge"
    assert (cache / "sd19-index.npy").is_file() and (cache / "sd19-index.json").is_file()
    assert not list(cache.glob("*.pkl"))
    loaded = np.load(cache / "sd19-index.npy", allow_pickle=False)
    assert (loaded == src.index).all()
    # reuse: poison the cached ascii column, reopen, see the poisoned value
    loaded["ascii"][0] = 0x7a
    np.save(cache / "sd19-index.npy", loaded)
    assert open_sd19(root).index["ascii"][0] == 0x7a
    assert open_sd19(root, reindex=True).index["ascii"][0] == chars[0]["ascii"]
    # any change of the source (a removed character) makes the cache stale
    png = root / "by_write/hsf_7/f3951_02/l3951_02/l3951_02_00003.png"
    png.unlink()
    (root / "by_write/hsf_7/f3951_02/l3951_02.cls").write_text("3\n61\n62\n63\n")
    src2 = open_sd19(root)
    assert len(src2) == len(src) - 1 and src2.fingerprint != src.fingerprint


def test_read_only_source_caches_in_home(tmp_path, monkeypatch):
    root, chars, imgs = write_tree(tmp_path / "s", edition=2, packaging="zip")
    home = tmp_path / "home"
    monkeypatch.setenv("MNISTFORGE_HOME", str(home))
    # tests may run as root, who can write anywhere: make the source folder count as read-only
    real = sd19_index._writable
    monkeypatch.setattr(sd19_index, "_writable",
                        lambda folder: root.resolve() not in (folder, folder.parent) and real(folder))
    src = open_sd19(root)
    assert not (root / ".mnistforge").exists()
    cached = list(home.glob("cache/sd19/*/sd19-index.npy"))
    assert len(cached) == 1
    assert (np.load(cached[0]) == src.index).all()
    assert _meta(open_sd19(root)) == _meta(src) == expected_index(chars)


def test_cls_count_mismatch_names_the_file(tmp_path):
    root, chars, imgs = write_tree(tmp_path / "s", edition=2, packaging="dir")
    cls = root / "by_write/hsf_0/f0003_07/u0003_07.cls"
    cls.write_text("3\n41\n42\n43\n")          # the folder holds 4 PNGs
    with pytest.raises(SD19FormatError, match="u0003_07.cls.*expected 4 classes.*found 3"):
        open_sd19(root, cache=False)


def test_corrupt_mis_names_the_file(tmp_path):
    root, chars, imgs = write_tree(tmp_path / "s", edition=1, packaging="dir")
    mis = root / "by_write/hsf_4/f2100_21/d2100_21.mis"
    mis.write_bytes(mis.read_bytes()[:-40])
    with pytest.raises(SD19FormatError, match="d2100_21.mis.*truncated"):
        open_sd19(root, cache=False)
    data = bytearray(mis.read_bytes())
    data[:8] = b"xx\0\0\0\0\0\0"
    mis.write_bytes(bytes(data))
    with pytest.raises(SD19FormatError, match="d2100_21.mis.*length record"):
        open_sd19(root, cache=False)


def test_corrupt_png_in_zip_names_the_member(tmp_path):
    root, chars, imgs = write_tree(tmp_path / "s", edition=2, packaging="dir", hierarchies=("by_write",))
    bad = root / "by_write/hsf_0/f0000_14/u0000_14/u0000_14_00002.png"
    bad.write_bytes(bad.read_bytes()[:50])
    with pytest.raises(SD19FormatError, match="u0000_14_00002.png"):
        open_sd19(root, cache=False)


def test_missing_by_write_and_missing_source(tmp_path):
    with pytest.raises(MissingSourceError, match="not found"):
        open_sd19(tmp_path / "nothing")
    root, *_ = write_tree(tmp_path / "s", edition=2, packaging="zip", hierarchies=("by_class",))
    with pytest.raises(MissingSourceError, match="by_write"):
        open_sd19(root)


def test_unsafe_zip_is_refused(tmp_path):
    root, *_ = write_tree(tmp_path / "s", edition=2, packaging="zip", hierarchies=("by_write",))
    with zipfile.ZipFile(root / "by_write.zip", "a") as z:
        z.writestr("by_write/../../escape.png", b"x")
    with pytest.raises(UnsafeArchiveError, match="escape"):
        open_sd19(root, cache=False)


def test_folder_wins_over_zip_and_zip_without_prefix(tmp_path):
    root, chars, imgs = write_tree(tmp_path / "s", edition=2, packaging="zip", hierarchies=("by_write",))
    # a zip whose members lack the "by_write/" prefix is recognised by its name
    flat = tmp_path / "flat"
    flat.mkdir()
    with zipfile.ZipFile(root / "by_write.zip") as zi, zipfile.ZipFile(flat / "by_write.zip", "w") as zo:
        for info in zi.infolist():
            zo.writestr(info.filename[len("by_write/"):], zi.read(info))
    src = open_sd19(flat)
    assert _meta(src) == expected_index(chars)
    assert (src.read_all(np.arange(len(src))) == imgs).all()
    # an unpacked copy next to the zip is preferred
    with zipfile.ZipFile(root / "by_write.zip") as z:
        z.extractall(root)
    assert find_trees(root)["by_write"].kind == "dir"
    shutil.rmtree(root / ".mnistforge", ignore_errors=True)
    assert _meta(open_sd19(root)) == expected_index(chars)


def test_hash_and_duplicates_helpers():
    imgs = np.zeros((4, 128, 128), bool)
    imgs[1, 0, 0] = imgs[3, 0, 0] = True
    h = sd19_index.hash_images(imgs)
    assert sd19_index.find_duplicates(h).tolist() == [-1, -1, 0, 1]
    assert sd19_index.number_digits(np.array([b"d", b"u", b"d"], "S1")).tolist() == [0, -1, 1]


def test_source_pickles_lean_for_worker_processes(trees):
    import pickle

    src = open_sd19(trees[(2, "zip")][0])
    _ = src.trees["by_write"].names                     # listing cached in this process
    clone = pickle.loads(pickle.dumps(src))
    assert clone.trees["by_write"]._names is None
    assert (clone.read_all([0, 5, 3]) == src.read_all([0, 5, 3])).all()


def test_products_asked_of_a_cached_index_are_made_in_one_pass_and_kept(tmp_path, monkeypatch):
    # issue 44: `build all` on a source indexed earlier: both products from one decode, written
    # as they come (nothing held), then read back checked, equal to making them in memory
    from mnistforge.builders.emnist import EmnistBuildConfig, emnist_product
    from mnistforge.builders.mnist_prepro import MnistPreproConfig
    from mnistforge.builders.qmnist import mnist_product
    from mnistforge.sd19.products import is_kept
    from mnistforge.sd19.reader import SD19Source
    from sd19_helpers import make_tiny_sd19

    sd19 = make_tiny_sd19(tmp_path, scale=0.002)
    open_sd19(sd19, progress=False)                                  # the index alone
    wanted = [mnist_product(MnistPreproConfig()), emnist_product(EmnistBuildConfig())]
    passes = []
    real = SD19Source._map
    monkeypatch.setattr(SD19Source, "_map", lambda self, fn, rows, *a, **k: (
        passes.append((fn.__name__, len(rows))), real(self, fn, rows, *a, **k))[1])
    src = open_sd19(sd19, progress=False, products=wanted)
    assert passes == [("_job_make", len(src.index))]                 # one decode of every character
    assert all(is_kept(sd19, src.fingerprint, p.name) for p in wanted)
    open_sd19(sd19, progress=False, products=wanted)
    assert len(passes) == 1                                           # kept: nothing decoded again
    kept = src.products(wanted)
    made = src.make(wanted, np.arange(len(src.index)))
    assert len(passes) == 2 and kept[1].shape == (len(src.index), 28, 28)
    for k, m in zip(kept, made):
        np.testing.assert_array_equal(k, m)
