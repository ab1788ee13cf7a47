"""The registry: complete, consistent, and its pinned hashes match the real files at hand."""
from __future__ import annotations

import re

import pytest

from mnistforge import registry as R
from mnistforge.errors import ConfigError, DatasetNotFoundError
from mnistforge.cache.verify import verify_file
from mnistforge.io.hashing import hash_content, hash_file
from mnistforge.sd19.nist_table import TOTAL_CHARACTERS

EXPECTED_DATASETS = [
    "mnist", "fashion-mnist", "kmnist", "kuzushiji-49", "qmnist", "emnist-byclass", "emnist-bymerge",
    "emnist-balanced", "emnist-letters", "emnist-digits", "emnist-mnist"]
HEX64 = re.compile(r"^[0-9a-f]{64}$")
HEX32 = re.compile(r"^[0-9a-f]{32}$")


def test_every_dataset_is_there_in_order():
    # femnist: built only (no release files, counts from the build's manifest; test_build_femnist)
    assert R.list_datasets() == EXPECTED_DATASETS + ["femnist"]
    assert {"sd19", "sd19-1st-edition", "emnist"} <= set(R.list_datasets(None))


@pytest.mark.parametrize("name", EXPECTED_DATASETS)
def test_dataset_entries_are_consistent(name):
    d = R.get_dataset(name)
    assert d.licence and d.citation and d.description
    assert d.orientation in ("upright", "transposed")
    assert len(set(d.classes)) == len(d.classes), "class names must be unique"
    assert "train" in d.splits and "test" in d.splits
    for sp in d.splits.values():
        assert sp.count > 0
        if sp.is_view:
            parent = d.split(sp.of)
            assert not parent.is_view
            if sp.rows:
                start, stop = sp.rows
                stop = parent.count if stop is None else stop
                assert stop - start == sp.count
            if sp.last:
                assert sp.count == d.split(sp.last).count
            if sp.drop_last:
                assert sp.count == parent.count - d.split(sp.drop_last).count
        else:
            for fname in (sp.images, sp.labels):
                f = R.get_file(f"{d.group}/{fname}")
                assert f.name == fname
            img = R.get_file(f"{d.group}/{sp.images}")
            if img.content_size:
                assert img.content_size == 16 + sp.count * 28 * 28
        if sp.identities is not None:  # rows [start, stop) of a published idx2 table of int32
            table = R.get_file(sp.identities[0])
            n, columns = (table.content_size - 12) // 32, 8
            start, stop = sp.identities[1], n if sp.identities[2] is None else sp.identities[2]
            assert table.content_size == 12 + n * columns * 4 and 0 <= start < stop <= n
            assert stop - start == sp.count, (name, sp.name)
    assert not d.random_sd19_split or d.from_sd19 and d.writers_disjoint is False
    if d.random_sd19_split:  # its official train and test together are all of SD19
        assert sum(sp.count for sp in d.splits.values() if not sp.is_view) == TOTAL_CHARACTERS


def test_split_sizes_from_the_spec():
    counts = {n: {s: sp.count for s, sp in R.get_dataset(n).splits.items()} for n in EXPECTED_DATASETS}
    assert counts["qmnist"] == {"train": 60000, "test": 60000, "test10k": 10000,
                                "test50k": 50000, "nist": 402953}
    assert counts["emnist-byclass"] == {"train": 697932, "test": 116323}
    assert counts["emnist-balanced"]["validation"] == 18800
    assert counts["emnist-balanced"]["train-without-validation"] == 112800 - 18800
    assert counts["emnist-letters"]["train"] == 124800
    assert counts["emnist-digits"]["test"] == 40000
    assert "validation" not in counts["emnist-bymerge"]


def test_class_lists():
    assert R.get_dataset("emnist-byclass").classes[10] == "A"
    assert R.get_dataset("emnist-byclass").classes[36] == "a"
    assert len(R.get_dataset("emnist-byclass").classes) == 62
    bm = R.get_dataset("emnist-bymerge").classes
    assert len(bm) == 47 and bm[36:] == tuple("abdefghnqrt")
    le = R.get_dataset("emnist-letters")
    assert le.label_offset == 1 and le.classes[0].startswith("N/A") and le.classes[26] == "Z"
    assert "1..26" in le.class_note
    assert R.get_dataset("fashion-mnist").classes[9] == "Ankle boot"
    assert len(R.get_dataset("kmnist").classes) == 10
    assert R.get_dataset("emnist-digits").orientation == "transposed"
    assert R.get_dataset("mnist").orientation == "upright"


def test_files_hashes_are_well_formed_and_pinned_flag_is_honest():
    for f in R.list_files():
        for h in (f.sha256, f.content_sha256):
            assert h is None or HEX64.match(h), f.id
        for h in (f.md5, f.content_md5):
            assert h is None or HEX32.match(h), f.id
        has = bool(f.sha256 or f.md5 or f.content_sha256 or f.content_md5)
        assert f.pinned == has, f.id
        assert f.urls or f.archive, f"{f.id} has no way to be fetched"
        if f.archive:
            assert R.get_file(f.archive).pinned
            assert f.member.endswith(f.name)


def test_published_figures_from_the_spec():
    f = R.get_file("mnist/train-images-idx3-ubyte.gz")
    assert f.size == 9912422 and f.sha256.startswith("440fcabf") and len(f.urls) == 2
    z = R.get_file("emnist/gzip.zip")
    assert z.size == 561753746 and z.md5 == "58c8d27c78d21e728a6bc7b3cc06412e"
    m = R.get_file("emnist/emnist-letters-train-labels-idx1-ubyte.gz")
    assert m.archive == "emnist/gzip.zip" and m.member == "gzip/emnist-letters-train-labels-idx1-ubyte.gz"
    assert m.md5 == "c16de4f1848ddcdddd39ab65d2a7be52"
    # SD19: every 2nd-edition zip plus the 1st edition, none pinned (reported as such)
    sd = [f.name for f in R.dataset_files("sd19")]
    assert sd == ["by_class.zip", "by_merge.zip", "by_write.zip", "by_field.zip", "hsf_page.zip"]
    assert [f.name for f in R.dataset_files("sd19-1st-edition")] == ["SD19.zip"]
    for f in R.dataset_files("sd19") + R.dataset_files("sd19-1st-edition"):
        assert not f.pinned and f.pinned_how == "not pinned"
        assert f.urls[0].startswith("https://s3.amazonaws.com/nist-srd/SD19/")


def test_kuzushiji49_is_the_npz_release_of_rois_codh_kmnist():
    """Facts from github.com/rois-codh/kmnist (README.md, download_data.py): file names,
    counts, URLs, 49 classes (48 hiragana and the iteration mark, k49_classmap.csv order)."""
    k = R.get_dataset("kuzushiji-49")
    assert {s: sp.count for s, sp in k.splits.items()} == {"train": 232365, "test": 38547}
    assert sum(sp.count for sp in k.splits.values()) == 270912
    assert k.file_names()[:4] == ["k49-train-imgs.npz", "k49-train-labels.npz",
                                  "k49-test-imgs.npz", "k49-test-labels.npz"]
    assert len(k.classes) == 49 and k.classes[0] == "あ" and k.classes[43] == "わ"
    assert k.classes[44:] == ("ゐ", "ゑ", "を", "ん", "ゝ")
    for f in k.remote_files()[:4]:
        assert (f.format, f.array, f.pinned, f.has_raw_copy) == ("npz", "arr_0", False, False)
        assert f.urls == (f"http://codh.rois.ac.jp/kmnist/dataset/k49/{f.name}",)
    assert R.get_file("kmnist/k49_classmap.csv").urls[0].endswith("/dataset/kmnist/k49_classmap.csv")
    assert R.hub_license(k.group) == ("cc-by-sa-4.0", None) and not k.handwriting


def test_per_dataset_facts_are_entry_fields():
    """What checks, the card and name lookup need of a dataset is in its entry."""
    assert R.get_dataset("mnist").aliases == ("ylecun/mnist",)
    assert R.dataset_by_alias("Zalando-Datasets/Fashion_MNIST") == "fashion-mnist"
    styles = {n: R.get_dataset(n).image_style for n in R.list_datasets()}
    assert styles["mnist"] == styles["qmnist"] == "mnist" and styles["emnist-letters"] == "frame-filling"
    assert styles["fashion-mnist"] is None and styles["kmnist"] is None
    disjoint = {n: R.get_dataset(n).writers_disjoint for n in R.list_datasets()}
    assert disjoint["qmnist"] is True and disjoint["emnist-digits"] is False and disjoint["kmnist"] is None
    assert R.get_dataset("emnist-letters").card_caveats == (
        "stored-transposed", "letters-variant", "writer-split", "validation-portion")
    assert [s for s, sp in R.get_dataset("qmnist").splits.items() if sp.opt_in] == ["nist"]
    assert [n for n in R.list_datasets() if R.get_dataset(n).assumed_for_shared_names] == ["mnist"]
    sd19 = [n for n in R.list_datasets() if R.get_dataset(n).from_sd19]
    assert sd19 == ["mnist", "qmnist"] + [f"emnist-{s}" for s in R.emnist_splits()] + ["femnist"]
    assert [n for n in R.list_datasets() if R.get_dataset(n).random_sd19_split] == [
        "emnist-byclass", "emnist-bymerge"]
    ids = {f"{n}:{s}": sp.identities for n in R.list_datasets() for s, sp in R.get_dataset(n).splits.items()
           if sp.identities}
    test, train = "qmnist/qmnist-test-labels-idx2-int.gz", "qmnist/qmnist-train-labels-idx2-int.gz"
    assert ids == {"mnist:train": (train, 0, None), "mnist:test": (test, 0, 10000),
                   "qmnist:train": (train, 0, None), "qmnist:test": (test, 0, None),
                   "qmnist:test10k": (test, 0, 10000), "qmnist:test50k": (test, 10000, None)}
    from mnistforge.hub.targets import CAVEATS

    assert {c for n in R.list_datasets() for c in R.get_dataset(n).card_caveats} <= set(CAVEATS)


def test_label_vote_joins_are_structured():
    """The join sentence is made from the ``applies_to`` entries, not cut out of prose."""
    a = R.label_annotations("qmnist")[0]
    assert (a.dataset, a.split, a.offset, a.rows) == ("qmnist", "test", 0, 10000)
    assert "Joined" not in R.get_dataset("label-errors").description
    assert R.label_joins("label-errors") == (
        "Joined to MNIST test and QMNIST test (first 10,000 rows) as metadata by "
        "mnistforge.load(..., with_metadata=True).")


def test_use_registry_reads_another_file_and_restores(tmp_path):
    import json

    raw = json.loads(open(R.registry_path(), encoding="utf-8").read())
    raw["datasets"]["mnist"]["title"] = "MNIST (a test's copy)"
    p = tmp_path / "registry.json"
    p.write_text(json.dumps(raw), encoding="utf-8")
    with R.use_registry(p):
        assert R.get_dataset("mnist").title == "MNIST (a test's copy)" and R.registry_path() == str(p)
    assert R.get_dataset("mnist").title == "MNIST"
    p.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError):
        with R.use_registry(p):
            pass
    assert R.get_dataset("mnist").title == "MNIST"


def test_an_unknown_file_format_is_refused(tmp_path):
    import json

    raw = json.loads(open(R.registry_path(), encoding="utf-8").read())
    raw["files"]["mnist/t10k-labels-idx1-ubyte.gz"]["format"] = "hdf5"
    p = tmp_path / "registry.json"
    p.write_text(json.dumps(raw), encoding="utf-8")
    with R.use_registry(p):
        with pytest.raises(ConfigError, match="unknown format"):
            R.get_file("mnist/t10k-labels-idx1-ubyte.gz")


def test_lookup_errors_name_the_choices():
    with pytest.raises(DatasetNotFoundError, match="emnist-letters"):
        R.get_dataset("emnist-letter")
    with pytest.raises(DatasetNotFoundError, match="test10k"):
        R.get_dataset("qmnist").split("test10")
    assert R.get_file("gzip.zip").id == "emnist/gzip.zip"
    with pytest.raises(Exception, match="ambiguous"):
        R.get_file("train-images-idx3-ubyte.gz")  # mnist, fashion-mnist and kmnist share it


def test_reference_mnist_content_hashes_match(mnist_reference):
    # The reference copies are re-compressed: the wrapper differs, the content does not.
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
                 "train-labels-idx1-ubyte.gz"):
        f = R.get_file(f"mnist/{name}")
        sha, _ = hash_file(mnist_reference / name)
        assert sha != f.sha256
        csha, _, n = hash_content(mnist_reference / name)
        assert csha == f.content_sha256 and n == f.content_size
        assert verify_file(mnist_reference / name, f, use_marker=False).status == "content"


def test_reference_qmnist_files_match_exactly(qmnist_reference):
    for name in ("qmnist-train-labels-idx2-int.gz", "qmnist-test-labels-idx2-int.gz",
                 "qmnist-train-labels.tsv.gz", "qmnist-test-labels.tsv.gz", "xnist-labels.tsv.xz"):
        f = R.get_file(f"qmnist/{name}")
        p = qmnist_reference / name
        sha, md5 = hash_file(p)
        assert sha == f.sha256 and p.stat().st_size == f.size
        if f.md5:
            assert md5 == f.md5  # the published (torchvision) md5
        assert verify_file(p, f, use_marker=False).status == "exact"


def test_debian_fashion_files_verify_by_content(fashion_dir):
    for name in ("t10k-labels-idx1-ubyte.gz", "train-labels-idx1-ubyte.gz"):
        f = R.get_file(f"fashion-mnist/{name}")
        v = verify_file(fashion_dir / name, f, use_marker=False)
        assert v.status == "content" and v.content_sha256 == f.content_sha256


def test_the_checks_and_the_card_read_the_entry(tmp_path):
    """Change a fact in a registry file and the code that uses it follows, with no code change."""
    import json

    from mnistforge.checks.statistics import expected_style
    from mnistforge.checks.writers import expects_disjoint_writers
    from mnistforge.hub.targets import _caveats
    from mnistforge.loaders.names import dataset_name

    raw = json.loads(open(R.registry_path(), encoding="utf-8").read())
    fm = raw["datasets"]["fashion-mnist"]
    fm.update(image_style="mnist", writers_disjoint=True, aliases=["someone/fashion"],
              card_caveats=["rebuilt-from-sd19"])
    p = tmp_path / "registry.json"
    p.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    assert expected_style("fashion-mnist") is None and expects_disjoint_writers("fashion-mnist") is None
    with R.use_registry(p):
        info = R.get_dataset("fashion-mnist")
        assert expected_style("fashion-mnist") == "mnist"
        assert expects_disjoint_writers("fashion-mnist") is True
        assert dataset_name("Someone/Fashion") == "fashion-mnist"
        assert _caveats(info, {}, built=True)[0].startswith("Rebuilt from NIST SD19")
        assert _caveats(info, {}, built=False) == []


def test_identities_and_the_sd19_flags_are_read_from_the_entry(tmp_path, qmnist_reference):
    """Row identities' table rows and EMNIST's random split follow the registry file, no code change."""
    import json

    import numpy as np

    from mnistforge.checks.identity import row_identities
    from mnistforge.checks.overlap import expected_for, expected_overlap
    from mnistforge.io.idx import read_idx

    table = np.asarray(read_idx(qmnist_reference / "qmnist-test-labels-idx2-int.gz"))
    raw = json.loads(open(R.registry_path(), encoding="utf-8").read())
    raw["datasets"]["mnist"]["splits"]["test"]["identities"]["rows"] = [20_000, 30_000]
    raw["datasets"]["emnist-balanced"]["random_sd19_split"] = True
    p = tmp_path / "registry.json"
    p.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    assert expected_for("mnist:test", "emnist-balanced:train", tables=qmnist_reference) is None
    with R.use_registry(p):
        ids = row_identities("mnist:test", tables=qmnist_reference).rows
        assert ids["writer"].tolist() == table[20_000:30_000, 2].tolist()
        e = expected_for("mnist:test", "emnist-balanced:train", tables=qmnist_reference)
        assert e == expected_overlap(10_000, 112_800, 112_800 + 18_800)


def test_unknown_names_get_a_did_you_mean():
    cases = [(lambda: R.get_dataset("mnsit"), "did you mean 'mnist'?"),
             (lambda: R.get_dataset("qmnist").split("test10"), "did you mean 'test10k'?"),
             (lambda: R.get_dataset("mnist").split("validaton"),
              "'validation' is a split of emnist-balanced, emnist-letters, emnist-digits, emnist-mnist, not of mnist")]
    for call, hint in cases:
        with pytest.raises(DatasetNotFoundError) as e:
            call()
        assert str(e.value).endswith(hint), e.value
    assert R.get_dataset("mnist").split_hint("zzz") is None
