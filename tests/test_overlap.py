"""Issue 43: one SD19 identity per row, and what two splits of the family share.

The synthetic test takes its truth from the replica itself: every SD19 character of the replica
is converted with the builders' image functions and each built image is traced back to the SD19
rows whose conversion it equals (the builds' side files are never read for the truth).
"""
from __future__ import annotations

import gzip
import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import mnistforge
from mnistforge.builders.emnist_prepro import convert_batch
from mnistforge.builders.emnist_splits import EmnistSplitConfig, split_sides
from mnistforge.builders.femnist import leaf_pixels
from mnistforge.builders.mnist_prepro import preprocess
from mnistforge.checks.identity import row_identities
from mnistforge.checks.overlap import compare, expected_overlap, leakage, overlap
from mnistforge.cli import main
from mnistforge.errors import ConfigError
from mnistforge.sd19 import open_sd19
from sd19_helpers import make_tiny_sd19

EMNIST = ["byclass", "bymerge", "balanced", "letters", "digits", "mnist"]


# ----------------------------------------------------------------------------- real QMNIST tables

def _tsv(path):
    with gzip.open(path, "rt") as f:
        return np.loadtxt(f, dtype=np.int64)


def test_mnist_train_and_test_share_no_writer(qmnist_reference):
    o = overlap("mnist:train", "mnist:test", "writer", tables=qmnist_reference)
    assert (o.shared_writers, len(o.shared_rows["a"]), len(o.shared_rows["b"])) == (0, 0, 0)
    assert o.shared_characters == 0


def test_mnist_test_shares_250_writers_and_no_character_with_test50k(qmnist_reference):
    test = _tsv(qmnist_reference / "qmnist-test-labels.tsv.gz")  # the truth, read without the package
    w10, w50 = test[:10_000, 2], test[10_000:, 2]
    truth = np.intersect1d(w10, w50)
    assert truth.size == 250
    o = overlap("mnist:test", "qmnist:test50k", "writer", tables=qmnist_reference)
    assert o.shared_writers == 250
    assert o.writers == {"a": np.unique(w10).size, "b": np.unique(w50).size}
    assert o.shared_rows["a"] == np.flatnonzero(np.isin(w10, truth)).tolist()
    assert len(o.shared_rows["b"]) == int(np.isin(w50, truth).sum())
    c = overlap("mnist:test", "qmnist:test50k", tables=qmnist_reference)
    assert c.key == "digit" and c.shared_characters == 0 and c.shared_rows == {"a": [], "b": []}


def test_cli_overlap_json(qmnist_reference, tmp_path, capsys):
    out = tmp_path / "o.json"
    assert main(["overlap", "mnist:test", "qmnist:test50k", "--level", "writer", "--tables",
                 str(qmnist_reference), "--json", str(out)]) == 0
    assert "250 writers" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["shared_writers"] == 250 and doc["shared_characters"] == 0
    assert doc["shared_rows"]["a"] == len(doc["shared_row_lists"]["a"]) > 0


def test_official_rows_are_the_qmnist_table_rows(qmnist_reference):
    ids = row_identities("qmnist:test50k[:5]", tables=qmnist_reference).rows
    test = _tsv(qmnist_reference / "qmnist-test-labels.tsv.gz")[10_000:10_005]
    assert ids["writer"].tolist() == test[:, 2].tolist() and ids["digit"].tolist() == test[:, 5].tolist()


def test_official_split_without_a_table_says_so(tmp_path):
    with pytest.raises(ConfigError, match="no row identities for official qmnist nist"):
        row_identities("qmnist:nist", tables=tmp_path)


def test_missing_tables_named(tmp_path):
    with pytest.raises(mnistforge.errors.MissingFileError, match="QMNIST table"):
        row_identities("mnist:test", tables=tmp_path)


def test_unknown_level_refused():
    with pytest.raises(ConfigError, match="unknown overlap level"):
        compare(*(2 * [None]), level="pixel")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- synthetic replica

@pytest.fixture(scope="module")
def family(tmp_path_factory):
    """A replica (~1,600 characters), ``build all`` and ``build femnist`` of it (a few seconds)."""
    base = tmp_path_factory.mktemp("overlap")
    sd19 = make_tiny_sd19(base, scale=0.002)
    assert main(["build", "all", "--sd19", str(sd19), "--out", str(base / "all"), "--workers", "1"]) == 0
    assert main(["build", "femnist", "--sd19", str(sd19), "--out", str(base / "femnist"),
                 "--workers", "1"]) == 0
    targets = {f"qmnist:{s}": f"{base}/all/qmnist:qmnist:{s}" for s in ("train", "test", "test10k", "test50k")}
    targets["qmnist:nist"] = f"{base}/all/xnist:qmnist:nist"
    targets |= {f"mnist:{s}": f"{base}/all/mnist:mnist:{s}" for s in ("train", "test")}
    targets |= {f"emnist-{d}:{s}": f"{base}/all/emnist:emnist-{d}:{s}" for d in EMNIST
                for s in ("train", "test")}
    targets |= {f"femnist:{s}": f"{base}/femnist:femnist:{s}" for s in ("train", "test")}
    return sd19, targets


def _references(src):
    """Per conversion (QMNIST's, EMNIST's, LEAF's): image bytes -> the SD19 rows converting to it."""
    out = {}
    for kind in ("qmnist", "emnist", "femnist"):
        rows = src.digits() if kind == "qmnist" else np.arange(len(src.index))
        imgs = src.read_all(rows)
        ref = (preprocess(imgs) if kind == "qmnist" else
               255 - leaf_pixels(src, rows, workers=1) if kind == "femnist" else convert_batch(imgs))
        out[kind] = {}
        for r, im in zip(rows.tolist(), ref):
            out[kind].setdefault(im.tobytes(), []).append(r)
    return out


def _truth(refs, target):
    """Per row of the loaded split: the SD19 rows whose conversion is its image."""
    root, name, split = target.rsplit(":", 2)
    ds = mnistforge.load(name, split, root=root)
    where = refs["qmnist" if name in ("mnist", "qmnist") else "femnist" if name == "femnist" else "emnist"]
    return [where.get(im.tobytes(), []) for im in np.asarray(ds.images)]


def test_every_overlap_of_the_built_family_equals_the_replicas_truth(family):
    sd19, targets = family
    src = open_sd19(sd19, progress=False)
    refs = _references(src)
    ids, truth, ambiguous = {}, {}, 0
    for key, target in targets.items():
        ids[key] = row_identities(target)
        cands = _truth(refs, target)
        got = ids[key].rows["character"]
        assert len(cands) == len(got) and all(cands), key  # every built image traced to SD19
        # each row's identity is a character with its image (several: byte-identical SD19 images)
        assert all(int(g) in c for g, c in zip(got, cands)), key
        ambiguous += sum(len(c) > 1 for c in cands)
        truth[key] = np.array([c[0] if len(c) == 1 else int(g) for g, c in zip(got, cands)], np.int64)
        assert np.array_equal(ids[key].rows["writer"], src.index["writer"][truth[key]]), key
    assert ambiguous <= sum(len(t) for t in truth.values()) // 20   # only SD19's duplicated images
    pairs = 0
    for a, b in itertools.combinations(targets, 2):
        ta, tb = truth[a], truth[b]
        wa, wb = src.index["writer"][ta], src.index["writer"][tb]
        for level in ("character", "writer"):
            o = compare(ids[a], ids[b], level)
            assert o.shared_characters == len(set(ta.tolist()) & set(tb.tolist())), (a, b)
            assert o.shared_writers == len(set(wa.tolist()) & set(wb.tolist())), (a, b)
            x, y = (ta, tb) if level == "character" else (wa, wb)
            assert o.shared_rows["a"] == [i for i, v in enumerate(x.tolist()) if v in set(y.tolist())]
            assert o.shared_rows["b"] == [i for i, v in enumerate(y.tolist()) if v in set(x.tolist())]
            pairs += 1
    assert pairs == 2 * len(targets) * (len(targets) - 1) // 2
    # the family does share: MNIST test is in EMNIST ByClass (random split), MNIST train/test not
    assert compare(ids["mnist:test"], ids["emnist-byclass:train"]).shared_characters > 0
    assert compare(ids["mnist:train"], ids["mnist:test"], "writer").shared_writers == 0


def test_cli_with_sd19_and_compare_without(family, capsys):
    sd19, targets = family
    # the QMNIST build's digit indices meet EMNIST's SD19 rows through the SD19 source
    assert main(["overlap", targets["mnist:test"], targets["emnist-digits:train"],
                 "--sd19", str(sd19)]) == 0
    assert "characters" in capsys.readouterr().out
    a = row_identities(targets["qmnist:test"])
    a.rows["character"] = -1  # as without the SD19 source: only NIST digit indices on one side,
    b = row_identities(targets["emnist-digits:train"])
    b.rows["digit"] = -1      # only SD19 rows on the other
    with pytest.raises(ConfigError, match="character by character"):
        compare(a, b)
    assert compare(a, b, "writer").shared_writers is not None


# ----------------------------------------------------------------------------- expected overlap

def test_expected_overlap_formula_for_mnist_test_in_emnist_byclass_train():
    e = expected_overlap(10_000, 697_932, 814_255)
    assert e.mean == pytest.approx(10_000 * 697_932 / 814_255)
    assert e.interval[0] < e.mean < e.interval[1] and 8_400 < e.interval[0] and e.interval[1] < 8_700
    with pytest.raises(ConfigError):
        expected_overlap(10, 5, 1)


def test_expected_overlap_confirmed_by_simulating_the_emnist_split(family):
    """The EMNIST builder's random split, drawn with 300 seeds on the replica: the fixed set
    (QMNIST test's digits) lands on the train side as often as the formula says."""
    sd19, targets = family
    src = open_sd19(sd19, progress=False)
    fixed = row_identities(targets["qmnist:test"]).rows["character"]
    counts = []
    for seed in range(300):
        train = ~split_sides(src.index, EmnistSplitConfig(seed=seed))
        counts.append(int(train[fixed].sum()))
    e = expected_overlap(len(fixed), int(train.sum()), len(src.index))
    counts_ = np.array(counts)
    assert abs(counts_.mean() - e.mean) < 4 * e.sd / np.sqrt(len(counts)) + 0.2
    inside = ((counts_ >= e.interval[0] - 0.5) & (counts_ <= e.interval[1] + 0.5)).mean()
    assert inside >= 0.9


# ----------------------------------------------------------------------------- evaluate --train

def test_evaluate_warns_before_its_numbers_when_train_and_test_share(family, capsys):
    _sd19, targets = family
    assert main(["evaluate", "knn:k=1", "--train", targets["emnist-digits:train"],
                 "--test", targets["mnist:test"]]) == 0
    out = capsys.readouterr().out
    truth = compare(row_identities(targets["emnist-digits:train"]), row_identities(targets["mnist:test"]))
    assert truth.shared_characters > 0
    assert f"share {truth.shared_characters:,} SD19 characters" in out
    assert out.index("warning:") < out.index("errors =")


def test_evaluate_silent_when_disjoint(family, capsys):
    _sd19, targets = family
    assert main(["evaluate", "knn:k=1", "--train", targets["mnist:train"], "--test",
                 targets["mnist:test"]]) == 0
    assert "warning" not in capsys.readouterr().out


# ----------------------------------------------------------------------------- the docs' tables

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _table_rows(page, heading):
    text = (DOCS / page).read_text().split(heading, 1)[1].split("\n## ", 1)[0]
    return [[c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| ") and not line.startswith("| A ")
            and "expected in" not in line]


def test_the_exact_table_is_what_the_tables_give(qmnist_reference):
    rows = _table_rows("provenance-mnist-qmnist.md", "## Overlaps within the family")
    assert len(rows) == 6
    for a, b, chars, writers, shared in rows:
        o = overlap(a, b, "writer", tables=qmnist_reference)
        assert [chars, writers, shared] == [f"{o.shared_characters:,}", f"{o.shared_writers:,}",
                                            f"{len(o.shared_rows['a']):,} / {len(o.shared_rows['b']):,}"]


MNIST_TEST_PER_CLASS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
SD19_DIGITS_PER_CLASS = [40363, 44704, 40072, 41112, 39154, 36606, 39937, 41893, 39579, 39533]


def test_the_expected_table_is_what_the_formula_gives():
    rows = _table_rows("provenance-emnist.md", "## 7. Overlaps with MNIST and QMNIST")
    per_class = {"24,000": 24_000, "6,000": 6_000, "2,400": 2_400}
    assert len(rows) == 5
    for _what, formula, mean, interval in rows:
        if formula.startswith("10,000 x"):
            d, n_pool = (int(x.replace(",", "")) for x in formula.split(" x ")[1].split(" / "))
            e = expected_overlap(10_000, d, n_pool)
        else:
            k = per_class[formula.split(" x ")[1].split(" / ")[0]]
            e = expected_overlap(MNIST_TEST_PER_CLASS, [k] * 10, SD19_DIGITS_PER_CLASS)
        assert [mean, interval] == [f"{e.mean:,.0f}", "-".join(f"{x:,.0f}" for x in e.interval)]


def test_cli_says_the_expectation_for_official_emnist_byclass(qmnist_reference, tmp_path, capsys):
    out = tmp_path / "e.json"
    # official EMNIST rows carry no character id: no EMNIST file is needed, nothing is downloaded
    assert main(["overlap", "mnist:test", "emnist-byclass:train", "--tables", str(qmnist_reference),
                 "--offline", "--json", str(out)]) == 0
    said = capsys.readouterr().out
    e = expected_overlap(10_000, 697_932, 814_255)
    assert f"{e.mean:,.0f} characters expected" in said and "an expectation, not a count" in said
    doc = json.loads(out.read_text())["expected_shared_characters"]
    assert doc["mean"] == pytest.approx(e.mean) and doc["interval"] == pytest.approx(list(e.interval))


@pytest.fixture
def tables_in_cache(qmnist_reference, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("MNISTFORGE_HOME", str(home))
    (home / "qmnist").mkdir(parents=True)
    for split in ("train", "test"):
        shutil.copy(qmnist_reference / f"qmnist-{split}-labels-idx2-int.gz", home / "qmnist")
    return home


def test_leakage_of_official_sets_from_the_cached_tables(tables_in_cache):
    assert leakage("mnist", "mnist:test") is None                      # MNIST keeps writers apart
    said = leakage("mnist:test", "qmnist:test50k")
    assert "share 250 writers" in said and "24,582 of the 50,000 test rows" in said
    # official EMNIST ByClass rows carry no character id: the expectation, said as one
    e = expected_overlap(10_000, 697_932, 814_255)
    said = leakage("emnist-byclass", "mnist:test")
    assert f"{e.mean:,.0f} characters expected" in said and "an expectation" in said


def test_leakage_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("MNISTFORGE_HOME", str(tmp_path / "empty"))
    assert leakage("emnist-byclass", "mnist:test") is None             # tables not cached: unknown
    assert not (tmp_path / "empty" / "qmnist").exists()


def test_a_hugging_face_export_keeps_the_identities(family, tmp_path):
    pytest.importorskip("datasets", reason="export hf needs the [hf] extra")
    _sd19, targets = family
    build = targets["emnist-digits:test"].rsplit(":", 2)[0]
    assert main(["export", "hf", f"{build}:emnist-digits", "--out", str(tmp_path / "hf")]) == 0
    exported = row_identities(f"{tmp_path / 'hf'}:emnist-digits:test")
    built = row_identities(targets["emnist-digits:test"])
    assert np.array_equal(exported.rows[["writer", "character"]], built.rows[["writer", "character"]])
