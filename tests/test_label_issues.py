"""Known label errors as data: the study of Northcutt et al. (2021) joined to MNIST/QMNIST test.

Every test reads the study's real file (``../shared/reference/papers``) through the package's
reader, and the real MNIST test set where labels matter; they skip when ``../shared`` is absent.
"""
from __future__ import annotations

import dataclasses
import gzip
import http.server
import json
import shutil
import threading

import numpy as np
import pytest

import mnistforge
from mnistforge.errors import ConfigError, HashMismatchError, IntegrityError
from mnistforge.io.idx import read_idx, write_idx
from mnistforge.io.label_votes import FIELDS, MISSING, parse_mturk_json
from mnistforge.loaders import label_issues as li
from mnistforge.registry import get_dataset, get_file, label_annotations
from cache_helpers import put

STUDY_ID = "label-errors/mnist_mturk.json"
#: The paper's 15 MNIST test label errors (0-based), typed in from labelerrors.com's MNIST page.
PAPER_15 = [947, 1621, 1901, 2130, 2462, 2597, 2654, 3520, 3558, 5937, 6651, 6783, 8527, 9679, 9729]
#: Where a majority (>= 3 of 5) chose the study's guessed label: the label "relabel" gives.
MAJORITY_GUESSED = {947: 9, 1621: 6, 1901: 4, 2462: 0, 2597: 3, 3558: 0, 5937: 3, 6651: 6,
                    6783: 6, 9729: 6}
NO_MAJORITY = [2130, 2654, 3520, 8527, 9679]


@pytest.fixture(scope="session")
def study_file(reference_dir):
    p = reference_dir / "papers" / "northcutt2021-mnist-test-mturk.json"
    if not p.is_file():
        pytest.skip(f"the study's file is not at {p}")
    return p




@pytest.fixture
def mnist_cache(cache, mnist_reference, study_file):
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        put(cache, "mnist", mnist_reference / f)
    put(cache, "label-errors", study_file, "mnist_mturk.json")
    return cache


def real_test_labels(mnist_reference):
    return np.asarray(read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz"), dtype=np.int64)


# --- the file, the registry and the hash ------------------------------------------------------

def test_registry_entry_pins_the_shared_copy(study_file):
    from mnistforge.io.hashing import sha256_file

    remote = get_file(STUDY_ID)
    assert remote.pinned and remote.sha256 == sha256_file(study_file)
    assert remote.size == study_file.stat().st_size
    assert remote.urls == ("https://raw.githubusercontent.com/cleanlab/label-errors/"
                           "5457895eee26e49187de5c4d6617b9de6f172221/mturk/mnist_mturk.json",)
    info = get_dataset("label-errors")
    assert info.kind == "annotations" and [f.id for f in info.remote_files()] == [STUDY_ID]
    assert [(a.dataset, a.split, a.offset) for a in label_annotations()] == \
        [("mnist", "test", 0), ("qmnist", "test", 0)]
    with pytest.raises(mnistforge.errors.DatasetNotFoundError, match="fetch label-errors"):
        mnistforge.load("label-errors", "test")


def test_given_labels_are_the_real_mnist_test_labels(study_file, mnist_reference):
    votes = li.read_study(study_file)
    assert len(votes) == 100 and np.all(np.diff(votes.ids) > 0)
    np.testing.assert_array_equal(votes.given, real_test_labels(mnist_reference)[votes.ids])
    # the paper's rule picks exactly its 15 images
    from mnistforge.io.label_votes import issue_mask, suggested_labels
    assert votes.ids[issue_mask(votes)].tolist() == PAPER_15
    sug = dict(zip(votes.ids.tolist(), suggested_labels(votes).tolist()))
    assert {i: sug[i] for i in PAPER_15 if sug[i] != MISSING} == MAJORITY_GUESSED
    assert [i for i in PAPER_15 if sug[i] == MISSING] == NO_MAJORITY


def test_tampered_study_file_is_refused(study_file, tmp_path, mnist_reference, cache):
    doc = json.loads(study_file.read_text())
    doc[0]["mturk"] = {"given": 0, "guessed": 5, "neither": 0}  # still a valid file, other votes
    bad = tmp_path / "mnist_mturk.json"
    bad.write_text(json.dumps(doc, indent=2))
    parse_mturk_json(bad.read_text())  # the format is fine: only the hash tells
    with pytest.raises(HashMismatchError, match="448bd00f"):
        li.read_study(bad)
    # the same file in the cache: load refuses it like any dataset file
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        put(cache, "mnist", mnist_reference / f)
    put(cache, "label-errors", bad)
    with pytest.raises(HashMismatchError):
        mnistforge.load("mnist", "test", with_metadata=True)
    with pytest.raises(HashMismatchError):
        mnistforge.load("mnist", "test", label_issues="exclude")
    assert mnistforge.load("mnist", "test").metadata is None  # the default load needs no votes


def test_malformed_records_are_refused():
    from mnistforge.errors import FormatError

    ok = {"id": 3, "given_original_label": 1, "our_guessed_label": 7,
          "mturk": {"given": 2, "guessed": 2, "neither": 1}}
    parse_mturk_json(json.dumps([ok]))
    for bad in ({**ok, "id": -1}, {**ok, "mturk": {"given": 2, "guessed": 2, "neither": 2}},
                {**ok, "mturk": {"given": 2, "guessed": 3}}, {**ok, "id": "3"}):
        with pytest.raises(FormatError):
            parse_mturk_json(json.dumps([bad]))
    with pytest.raises(FormatError, match="listed twice"):
        parse_mturk_json(json.dumps([ok, ok]))


class _Serve(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        body = self.server.body
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_fetched_and_verified_like_any_dataset_file(study_file, tmp_path):
    from mnistforge.cache.download import fetch_file

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Serve)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        remote = dataclasses.replace(get_file(STUDY_ID),
                                     urls=(f"http://127.0.0.1:{srv.server_port}/mnist_mturk.json",))
        srv.body = study_file.read_bytes().replace(b'"given": 5', b'"given": 4', 1)
        with pytest.raises(HashMismatchError):
            fetch_file(remote, root=tmp_path / "c", offline=False, retries=0)
        assert not (tmp_path / "c" / "label-errors" / "mnist_mturk.json").exists()
        srv.body = study_file.read_bytes()
        res = fetch_file(remote, root=tmp_path / "c", offline=False, retries=0)
        assert res.downloaded and res.status == "exact"
        assert res.path == tmp_path / "c" / "label-errors" / "mnist_mturk.json"
        assert len(li.read_study(res.path)) == 100
    finally:
        srv.shutdown()


# --- metadata and views on the real MNIST test set -------------------------------------------

def test_mnist_test_metadata(mnist_cache, mnist_reference):
    ds = mnistforge.load("mnist", "test", with_metadata=True)
    m = ds.metadata
    assert m.dtype.names == FIELDS
    assert np.flatnonzero(m["label_issue"]).tolist() == PAPER_15
    examined = m["label_votes_given"] != MISSING
    assert examined.sum() == 100
    # not examined is not "correct": no votes, no suggestion, no issue
    assert (m["label_votes_guessed"][~examined] == MISSING).all()
    assert (m["suggested_label"][~examined] == MISSING).all() and not m["label_issue"][~examined].any()
    assert m["label_votes_given"][947] == 0 and m["label_votes_guessed"][947] == 5
    assert m["suggested_label"][947] == 9 and m["suggested_label"][2130] == MISSING
    assert ds.status["mnist_mturk.json"] == "exact"
    np.testing.assert_array_equal(ds.labels, real_test_labels(mnist_reference))  # unchanged


def test_views_drop_and_relabel_what_they_say(mnist_cache, mnist_reference):
    full = mnistforge.load("mnist", "test")
    assert full.metadata is None and len(full) == 10000
    assert getattr(full, "label_issues", None) is None  # the default: as published
    keep = np.setdiff1d(np.arange(10000), PAPER_15)

    ex = mnistforge.load("mnist", "test", label_issues="exclude")
    assert len(ex) == 9985 and ex.metadata is None
    np.testing.assert_array_equal(ex.images, np.asarray(full.images)[keep])
    np.testing.assert_array_equal(ex.labels, full.labels[keep])
    assert ex.label_issues.dropped == PAPER_15 and ex.label_issues.relabelled == {}

    rl = mnistforge.load("mnist", "test", label_issues="relabel", with_metadata=True)
    kept = np.setdiff1d(np.arange(10000), NO_MAJORITY)
    assert len(rl) == 9995 and rl.label_issues.dropped == NO_MAJORITY
    np.testing.assert_array_equal(rl.images, np.asarray(full.images)[kept])
    want = full.labels.copy()
    for i, y in MAJORITY_GUESSED.items():
        want[i] = y
    np.testing.assert_array_equal(rl.labels, want[kept])
    assert rl.label_issues.relabelled == {i: (int(full.labels[i]), y) for i, y in MAJORITY_GUESSED.items()}
    assert (rl.labels != full.labels[kept]).sum() == 10
    assert rl.metadata["label_issue"].sum() == 10  # the metadata rows follow the images

    with pytest.raises(ConfigError, match="label_issues"):
        mnistforge.load("mnist", "test", label_issues="drop")


def test_study_file_missing_offline(cache, mnist_reference):
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        put(cache, "mnist", mnist_reference / f)
    ds = mnistforge.load("mnist", "test", with_metadata=True)  # left out, with a warning
    assert ds.metadata is None
    with pytest.raises(mnistforge.errors.OfflineError, match="label-errors/mnist_mturk.json"):
        mnistforge.load("mnist", "test", label_issues="exclude")


# --- QMNIST test: the same flags at the same positions ----------------------------------------

@pytest.fixture
def qmnist_folder(tmp_path, qmnist_reference, study_file, cache):
    """Real QMNIST test labels (idx2-int), blank images, a build manifest and the side file."""
    from mnistforge.builders.label_votes import write_label_votes
    from mnistforge.io.manifest import DatasetEntry, Manifest

    folder = tmp_path / "qmnist"
    folder.mkdir()
    shutil.copy(qmnist_reference / "qmnist-test-labels-idx2-int.gz", folder)
    table = np.asarray(read_idx(folder / "qmnist-test-labels-idx2-int.gz"))
    write_idx(folder / "qmnist-test-images-idx3-ubyte.gz", np.zeros((len(table), 28, 28), np.uint8))
    put(cache, "label-errors", study_file, "mnist_mturk.json")
    notes = write_label_votes(folder, "qmnist", {"test": table[:, 0]})
    assert notes and "15 label issues" in notes[0]
    Manifest(kind="qmnist", notes=notes, orientation="upright",
             datasets={"qmnist": DatasetEntry(counts={"test": len(table)})}).write(folder)
    return folder


def test_qmnist_test_rows_carry_the_same_flags(qmnist_folder, mnist_cache):
    mn = mnistforge.load("mnist", "test", with_metadata=True).metadata
    test = mnistforge.load("qmnist", "test", root=qmnist_folder, with_metadata=True)
    assert len(test) == 60000
    m = test.metadata
    assert m.dtype.names[:8] == get_dataset("qmnist").metadata_fields  # QMNIST's columns kept
    for f in FIELDS:
        np.testing.assert_array_equal(m[f][:10000], mn[f], err_msg=f)
        assert (m[f][10000:] == (False if f == "label_issue" else MISSING)).all()
    assert np.flatnonzero(m["label_issue"]).tolist() == PAPER_15
    t10 = mnistforge.load("qmnist", "test10k", root=qmnist_folder, with_metadata=True)
    assert np.flatnonzero(t10.metadata["label_issue"]).tolist() == PAPER_15
    t50 = mnistforge.load("qmnist", "test50k", root=qmnist_folder, with_metadata=True)
    assert not t50.metadata["label_issue"].any()
    ex = mnistforge.load("qmnist", "test10k", root=qmnist_folder, label_issues="exclude")
    assert len(ex) == 9985 and ex.label_issues.dropped == PAPER_15
    with pytest.raises(ConfigError, match="examined no image"):
        mnistforge.load("qmnist", "test50k", root=qmnist_folder, label_issues="exclude")
    side = np.asarray(read_idx(qmnist_folder / "qmnist-test-label-votes-idx2-int.gz"))
    assert side.shape == (60000, 5) and side.dtype.kind == "i"


def test_side_file_not_written_where_the_labels_differ(tmp_path, cache, study_file):
    from mnistforge.builders.label_votes import write_label_votes

    put(cache, "label-errors", study_file, "mnist_mturk.json")
    labels = np.zeros(10000, np.int64)  # e.g. a build from a synthetic SD19
    out = tmp_path / "build"
    out.mkdir()
    assert write_label_votes(out, "mnist", {"test": labels}) == []
    assert not list(out.iterdir())


def test_side_file_that_does_not_fit_is_refused(qmnist_folder):
    from mnistforge.io.manifest import Manifest

    p = qmnist_folder / "qmnist-test-label-votes-idx2-int.gz"
    write_idx(p, np.zeros((5, 5), np.int32))
    Manifest.read(qmnist_folder).write(qmnist_folder)  # a build that wrote it so
    with pytest.raises(IntegrityError, match="side file"):
        mnistforge.load("qmnist", "test", root=qmnist_folder, with_metadata=True)
    write_idx(p, np.full((60000, 5), 2, np.int32))  # label_issue must be 0/1
    Manifest.read(qmnist_folder).write(qmnist_folder)
    with pytest.raises(mnistforge.errors.FormatError, match="0/1"):
        mnistforge.load("qmnist", "test", root=qmnist_folder, with_metadata=True)


def test_gzip_side_file_is_reproducible(qmnist_folder, tmp_path, cache):
    from mnistforge.builders.label_votes import write_label_votes

    table = np.asarray(read_idx(qmnist_folder / "qmnist-test-labels-idx2-int.gz"))
    again = tmp_path / "again"
    again.mkdir()
    write_label_votes(again, "qmnist", {"test": table[:, 0]})
    name = "qmnist-test-label-votes-idx2-int.gz"
    assert (again / name).read_bytes() == (qmnist_folder / name).read_bytes()
    assert gzip.decompress((again / name).read_bytes())[:4] == b"\x00\x00\x0c\x02"


# --- Hugging Face export ----------------------------------------------------------------------

def test_hf_export_round_trips_the_columns(mnist_cache, tmp_path):
    pytest.importorskip("datasets")
    from mnistforge.hub.export import export_hf
    from mnistforge.hub.targets import configs_from_targets
    from mnistforge.io.hf.repo import read_card

    repo = tmp_path / "repo"
    export_hf(repo, configs_from_targets(["mnist:test"]), workers=1)
    src = mnistforge.load("mnist", "test", with_metadata=True)
    back = mnistforge.load("mnist", "test", root=repo, with_metadata=True)
    assert back.metadata.dtype == src.metadata.dtype
    for f in FIELDS:
        np.testing.assert_array_equal(back.metadata[f], src.metadata[f], err_msg=f)
    np.testing.assert_array_equal(back.labels, src.labels)
    feats = {f["name"]: f for f in read_card(repo)["dataset_info"][0]["features"]}
    assert feats["label_issue"]["dtype"] == "bool" and feats["suggested_label"]["dtype"] == "int32"
    text = (repo / "README.md").read_text()
    assert "### Known label errors (human label votes)" in text
    assert "@inproceedings{northcutt2021pervasive," in text
    assert "448bd00fc9df262c68d50d48709d7fa3d5dc966bc66580e5df20e0dcba6e5612" in text
    assert any("northcutt2021pervasive" in c for c in read_card(repo)["citations"])
    ex = mnistforge.load("mnist", "test", root=repo, label_issues="exclude")
    assert len(ex) == 9985 and ex.label_issues.dropped == PAPER_15 and ex.metadata is None


# --- verify: information, never a failure -----------------------------------------------------

def test_verify_reports_the_known_label_issues(mnist_cache, tmp_path, capsys):
    from mnistforge.checks import verify
    from mnistforge.cli import main

    rep = verify("mnist:test", near=False)
    r = rep["label_issues[test]"]
    assert r.status == "info" and rep.ok and rep.exit_code == 0
    assert [d["index"] for d in r.values["label_issues"]] == PAPER_15
    assert r.values["examined"] == 100
    assert r.values["label_issues"][0] == {"index": 947, "given": 8, "suggested": 9,
                                           "votes": {"given": 0, "guessed": 5, "neither": 0}}
    assert rep.counts()["info"] == 1
    from mnistforge.checks.result import VerifyReport
    assert VerifyReport("x", [r], strict=True).exit_code == 0  # strict or not
    out = tmp_path / "v.json"
    assert main(["verify", "mnist:test", "--no-near", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "INFO  label_issues[test]" in text and "1 for information" in text
    doc = json.loads(out.read_text())
    listed = [x for x in doc["results"] if x["name"] == "label_issues[test]"][0]
    assert [d["index"] for d in listed["values"]["label_issues"]] == PAPER_15


# --- evaluate and significance ----------------------------------------------------------------

KEYSERS_COMMON = [947, 1901, 2130, 2182, 3422, 5937, 9729, 9850]


def test_significance_keysers_example_counts_label_errors(cache, study_file, tmp_path, capsys):
    from mnistforge.cli import main
    from mnistforge.evaluators.errorlists import load_example
    from mnistforge.evaluators.label_issues import keysers_common_errors

    assert keysers_common_errors().tolist() == KEYSERS_COMMON
    out = tmp_path / "k.json"
    # without the study's file: said so, nothing downloaded, nothing counted
    assert main(["significance", "--example", "keysers2006", "--bootstrap", "200", "--json", str(out)]) == 0
    assert "known label problems not counted: the study's file" in capsys.readouterr().out
    assert "known_label_problems" not in json.loads(out.read_text())
    assert not (cache / "label-errors").exists()

    put(cache, "label-errors", study_file, "mnist_mturk.json")
    assert main(["significance", "--example", "keysers2006", "--bootstrap", "200", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    cc = [s for s in load_example("keysers2006") if s.name == "CC"][0]
    on = sorted(set(np.flatnonzero(cc.wrong).tolist()) & set(PAPER_15))
    assert len(on) == 11
    assert ("published combination CC: 11 of its 35 errors are known label errors (1-based: "
            + ", ".join(str(i + 1) for i in on) + ")") in text
    doc = json.loads(out.read_text())["known_label_problems"]
    assert doc["label_issues"] == 15 and doc["keysers_common"] == 8
    assert doc["systems"]["CC"]["on_label_issues"] == 11
    assert doc["systems"]["CC"]["without_label_issues"]["errors"] == 24
    assert doc["systems"]["CC"]["without_label_issues"]["n"] == 9985
    assert doc["systems"]["SC"]["on_keysers_common"] == 8  # all four miss those, by definition
    pair = [p for p in doc["pairs"] if (p["a"], p["b"]) == ("CNN", "CC")][0]
    assert (pair["all"]["n12"], pair["all"]["n21"], pair["all"]["a_worse"]) == (13, 6, False)
    assert (pair["without_label_issues"]["n12"], pair["without_label_issues"]["n21"]) == (13, 5)
    assert pair["without_label_issues"]["a_worse"]  # significant once the disputed labels go
    assert doc["published_combination"]["indices"] == [i + 1 for i in on]


def test_evaluate_reports_errors_on_known_problems(mnist_cache, tmp_path, capsys):
    from mnistforge.cli import main
    from mnistforge.evaluators.errorlists import read_predictions

    js, pred = tmp_path / "e.json", tmp_path / "p.tsv"
    assert main(["evaluate", "knn:k=1", "--train", "mnist:test", "--limit-train", "3000",
                 "--test", "mnist:test", "--json", str(js), "--predictions", str(pred)]) == 0
    text = capsys.readouterr().out
    assert "15 known label issues (Northcutt et al. 2021), 8 common errors of Keysers (2006)" in text
    wrong = read_predictions(pred).wrong
    k = json.loads(js.read_text())["known_label_problems"]["systems"]["knn:k=1"]
    assert k["errors"] == wrong.sum()
    assert k["on_label_issues"] == wrong[PAPER_15].sum()
    assert k["on_keysers_common"] == wrong[KEYSERS_COMMON].sum()
    preds = read_predictions(pred).predictions
    assert k["on_label_issues_majority"] == sum(int(preds[i] == y) for i, y in MAJORITY_GUESSED.items())
    keep = np.setdiff1d(np.arange(10000), PAPER_15)
    assert k["without_label_issues"]["errors"] == wrong[keep].sum()
    assert k["without_label_issues"]["n"] == 9985
    # the prediction file names its test set: significance counts the same
    out = tmp_path / "s.json"
    assert main(["significance", str(pred), str(pred).replace("p.tsv", "p.tsv"), "--names", "a", "b",
                 "--bootstrap", "100", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())["known_label_problems"]
    assert doc["systems"]["a"]["on_label_issues"] == k["on_label_issues"]
    # labels that are not MNIST's: not counted
    from mnistforge.evaluators.label_issues import known_problems
    assert known_problems("mnist:test", 10000, np.zeros(10000, np.int64)) is None
    assert known_problems("qmnist:test50k", 50000) is None
    part = known_problems("qmnist:test10k[9000:]", 1000)
    assert np.flatnonzero(part.label_issue).tolist() == [i - 9000 for i in PAPER_15 if i >= 9000]


def test_docs_keysers_block_is_a_fresh_run(cache, study_file, capsys):
    from pathlib import Path

    from mnistforge.cli import main

    doc = (Path(__file__).resolve().parents[1] / "docs" / "label-errors.md").read_text()
    head = "$ mnistforge significance --example keysers2006        # the tail of its output\n"
    block = doc.split(head, 1)[1].split("```", 1)[0].removeprefix("...\n")  # `...`: the lines before the tail
    put(cache, "label-errors", study_file, "mnist_mturk.json")
    assert main(["significance", "--example", "keysers2006", "--bootstrap", "100"]) == 0
    out = capsys.readouterr().out
    assert out.endswith(block) and len(block.splitlines()) == 18


def test_unreachable_study_file_leaves_the_columns_out(mnist_cache, monkeypatch):
    from mnistforge import registry
    from mnistforge.errors import DownloadError

    (mnist_cache / "label-errors" / "mnist_mturk.json").unlink()
    closed = dataclasses.replace(get_file(STUDY_ID), urls=("http://127.0.0.1:9/mnist_mturk.json",))
    monkeypatch.setitem(registry._files(), STUDY_ID, closed)  # a refused connection, no internet
    ds = mnistforge.load("mnist", "test", with_metadata=True, download=True)
    assert ds.metadata is None and len(ds) == 10000  # the images load; the votes are left out
    with pytest.raises(DownloadError):
        mnistforge.load("mnist", "test", label_issues="exclude", download=True)


def test_official_qmnist_views_get_the_rows_of_their_part(cache, study_file, qmnist_reference):
    # the cache path of load() for QMNIST (its official images are not on these machines):
    # label_columns on the real label table, for the whole test split and its two views
    from types import SimpleNamespace

    put(cache, "label-errors", study_file, "mnist_mturk.json")
    table = np.asarray(read_idx(qmnist_reference / "qmnist-test-labels-idx2-int.gz"))
    info = get_dataset("qmnist")
    cols = {}
    for split, rows in (("test", slice(None)), ("test10k", slice(0, 10000)),
                        ("test50k", slice(10000, None)), ("train", None)):
        labels = table[rows, 0] if rows is not None else np.zeros(60000, np.int64)
        ds = SimpleNamespace(info=info, split=split, labels=labels, status={})
        cols[split] = li.label_columns(ds, download=False)
    assert np.flatnonzero(cols["test"]["label_issue"]).tolist() == PAPER_15
    for f in FIELDS:
        np.testing.assert_array_equal(cols["test10k"][f], cols["test"][f][:10000])
        np.testing.assert_array_equal(cols["test50k"][f], cols["test"][f][10000:])
    assert not cols["test50k"]["label_issue"].any() and not cols["train"]["label_issue"].any()
    assert (cols["train"]["label_votes_given"] == MISSING).all()
    bad = SimpleNamespace(info=info, split="test", labels=np.zeros(60000, np.int64), status={})
    with pytest.raises(IntegrityError, match="given labels disagree"):
        li.label_columns(bad, download=False)
