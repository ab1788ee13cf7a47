"""The results card (issue 31) rendered for real prediction files on real test sets.

MNIST: predictions for all 10,000 rows of the real MNIST test set in official order, by
2-fold cross-fitting (k-NN trained on one half of the test set predicts the other; the train
images are not on these machines), compared with the Keysers (2006) published systems and
counted against the study of label errors (Northcutt et al. 2021).  Fashion-MNIST: the
linear classifier trained on Debian's Fashion-MNIST train split.  Every number is checked
against the evaluators' own functions; the page is parsed, and opened in a headless
chromium when Debian's package is installed.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import mnistforge
from mnistforge.cli import main
from mnistforge.evaluators import card as cd
from mnistforge.evaluators import errorlists as el
from mnistforge.evaluators import label_issues as kli
from mnistforge.evaluators import significance as sg
from mnistforge.evaluators.errorlists import load_example, write_predictions
from cache_helpers import put

DOCS_IMG = Path(__file__).resolve().parents[1] / "docs" / "img" / "card.png"


@pytest.fixture
def mnist_cache(cache, mnist_reference, reference_dir):
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        put(cache, "mnist", mnist_reference / f)
    study = reference_dir / "papers" / "northcutt2021-mnist-test-mturk.json"
    if not study.is_file():
        pytest.skip(f"the study's file is not at {study}")
    put(cache, "label-errors", study, "mnist_mturk.json")
    return cache


_FITTED: dict = {}   # (spec, sha256 of the images): the predictions, computed once per worker


def _cross_fitted(images, labels, spec="knn:k=3"):
    from mnistforge.classifiers.base import make_classifier

    X, y = np.asarray(images), np.asarray(labels)
    key = (spec, hashlib.sha256(X.tobytes() + y.tobytes()).hexdigest())
    if key in _FITTED:
        return _FITTED[key].copy()
    pred = np.empty_like(y)
    h = len(y) // 2
    for tr, te in ((slice(0, h), slice(h, None)), (slice(h, None), slice(0, h))):
        pred[te] = make_classifier(spec).fit(X[tr], y[tr]).predict(X[te])
    _FITTED[key] = pred
    return pred.copy()


@pytest.fixture
def mnist_npy(mnist_cache, tmp_path):
    ds = mnistforge.load("mnist", "test", download=False)
    pred = _cross_fitted(ds.images, ds.labels)
    p = tmp_path / "knn.npy"
    np.save(p, pred)
    return p, ds, pred


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs, self.links, self.tags = [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "img":
            self.imgs.append(a.get("src") or "")
        if tag == "a":
            self.links.append(a.get("href") or "")


def _parse(path) -> _Page:
    page = _Page()
    page.feed(Path(path).read_text(encoding="utf-8"))
    page.close()
    return page


def _check_images(page: _Page, expect: int):
    from PIL import Image

    assert len(page.imgs) == expect, page.imgs and [s[:40] for s in page.imgs]
    for src in page.imgs:
        assert src.startswith("data:image/png;base64,") and len(src) > 100, src[:60]
        img = Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1])))
        img.load()
        assert img.size[0] > 10 and img.size[1] > 10


def _card(argv, capsys):
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr().out


# --------------------------------------------------------------------------- MNIST

def test_mnist_card_numbers_match_the_evaluators(mnist_npy, tmp_path, capsys):
    path, ds, pred = mnist_npy
    out, js = tmp_path / "card", tmp_path / "card.json"
    text = _card(["card", str(path), "--test", "mnist:test", "--out", str(out), "--markdown",
                  "--json", str(js), "--bootstrap", "2000", "--gallery", "50"], capsys)
    doc = json.loads(js.read_text())
    y = np.asarray(ds.labels)
    wrong = pred != y
    r = sg.error_rate(wrong)
    assert doc["rate"] == json.loads(json.dumps(r.to_dict())) and str(r) in text
    assert 0.03 < r.rate < 0.15     # k-NN from 5,000 images
    # the difference needed: the smallest one paired_worse accepts at this many disagreements
    d = doc["significant_difference"]
    m = r.errors
    assert sg.paired_worse((m + d) // 2, (m - d) // 2) and not sg.paired_worse((m + d) // 2 - 1,
                                                                                (m - d) // 2 + 1)
    # known label errors: the label_issues evaluator's account
    problems = kli.known_problems("mnist:test", 10_000, y, download=False)
    acc = kli.account({"knn": wrong}, problems)["systems"]["knn"]
    k = doc["known_labels"]
    assert k["label_issues"] == 15 and k["on_label_issues"] == acc["on_label_issues"] > 0
    assert k["rest"] == r.errors - acc["on_label_issues"]
    assert k["without_label_issues"] == acc["without_label_issues"]
    # the Keysers systems, and the vote of the carded system with the four base ones
    keys = load_example("keysers2006")
    vote = sg.majority_vote({"knn": wrong, **{s.name: s.wrong for s in keys if s.name != "CC"}},
                            "knn")
    comp = sg.compare_systems({"knn": wrong, **{s.name: s.wrong for s in keys}, "vote": vote},
                              2000, 0)
    assert doc["comparison"]["names"] == ["knn", "SC", "SVM", "IDM", "CNN", "CC", "vote"]
    assert doc["comparison"]["pairs"] == json.loads(json.dumps(comp.to_dict()["pairs"]))
    assert doc["combination"]["rate"]["errors"] == int(vote.sum())
    for p in doc["comparison"]["pairs"]:
        assert p["mcnemar_p"] == sg.mcnemar_exact(p["n12"], p["n21"])
    assert doc["qmnist"] is None and "not applicable" in doc["qmnist_note"]
    # gallery: label errors first, then by row; confusion matrix of the predictions
    rows = [g["row"] for g in doc["gallery"]]
    flagged = [g["label_issue"] for g in doc["gallery"]]
    assert len(rows) == 50 and flagged == sorted(flagged, reverse=True)
    assert rows[sum(flagged):] == sorted(rows[sum(flagged):])
    assert all(problems.label_issue[i] == f for i, f in zip(rows, flagged))
    assert all(y[g["row"]] == g["label"] and pred[g["row"]] == g["predicted"] for g in doc["gallery"])
    cm = np.asarray(doc["confusion"])
    assert cm.sum() == 10_000 and np.trace(cm) == 10_000 - r.errors
    assert doc["provenance"]["status"] and not doc["provenance"]["synthetic"]
    assert doc["provenance"]["rows"] == 10_000
    # the page: parses, every picture embedded, definitions said on it (no link to a local file)
    page = _parse(out / "card.html")
    pics = 4 if "intervals" not in doc.get("missing", {}) and _has_matplotlib() else 3
    _check_images(page, pics)
    text = (out / "card.html").read_text()
    assert not page.links and "file://" not in text and text.count("Definition:") >= 7
    assert "max K: the largest number of simultaneous comparisons" in text
    assert "<title>card: knn (knn.npy) on mnist:test</title>" in text
    assert "SC: 60,000" in text and "training-set size of knn is not given" in text
    assert [c["n"] for c in doc["per_class"]] == np.bincount(y, minlength=10).tolist()
    assert sum(c["errors"] for c in doc["per_class"]) == r.errors
    assert "script" not in page.tags
    md = (out / "card.md").read_text()
    assert f"{r.errors} errors on 10000 test images" in md and md.count("data:image/png") == pics


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_the_json_round_trips_and_equals_the_card(mnist_npy, tmp_path):
    path, ds, pred = mnist_npy
    (system,) = el.read_inputs([path], np.asarray(ds.labels))
    card = cd.build_card(system, ds, resamples=500, gallery_limit=5)
    d = card.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert [g.row for g in card.gallery] == [g["row"] for g in d["gallery"]]


def test_a_missing_matplotlib_is_said_on_the_page(mnist_npy, tmp_path, capsys, monkeypatch):
    path, ds, pred = mnist_npy
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "c"
    text = _card(["card", str(path), "--test", "mnist:test", "--out", str(out),
                  "--bootstrap", "100"], capsys)
    html = (out / "card.html").read_text()
    assert "Picture missing: the interval chart needs matplotlib" in html
    assert "pip install &#x27;mnistforge[plot]&#x27;" in html
    assert "pictures: 3 of 4; missing: the interval chart needs matplotlib" in text
    _check_images(_parse(out / "card.html"), 3)   # the Pillow pictures are all there


def test_an_error_list_system_is_carded_without_classes(mnist_cache, tmp_path, capsys):
    from mnistforge.evaluators.errorlists import write_error_lists

    keys = load_example("keysers2006")
    f = tmp_path / "cnn.tsv"
    write_error_lists(f, [next(s for s in keys if s.name == "CNN")])
    js = tmp_path / "c.json"
    _card(["card", str(f), "--test", "mnist:test", "--out", str(tmp_path / "c"), "--json", str(js),
           "--bootstrap", "100"], capsys)
    doc = json.loads(js.read_text())
    assert doc["rate"]["errors"] == 42 and doc["confusion"] is None
    assert all(g["predicted"] == -1 for g in doc["gallery"]) and len(doc["gallery"]) == 42
    # the study: 11 of CC's errors are label errors (docs/significance.md); CNN's are counted too
    assert doc["known_labels"]["on_label_issues"] == int(
        (keys[3].wrong & kli.known_problems("mnist:test", 10_000, download=False).label_issue).sum())


def test_a_file_of_the_wrong_length_is_refused(mnist_cache, tmp_path, capsys):
    p = tmp_path / "short.npy"
    np.save(p, np.zeros(9_999, np.int64))
    assert main(["card", str(p), "--test", "mnist:test", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "10000 predictions" in err and "9999" in err and not (tmp_path / "c").exists()


def test_a_prediction_file_of_another_test_set_is_refused(mnist_cache, tmp_path, capsys):
    ds = mnistforge.load("mnist", "test", download=False)
    y = np.asarray(ds.labels)
    f = tmp_path / "p.tsv"
    write_predictions(f, y, (y + 1) % 10, name="other")   # same length, other labels
    assert main(["card", str(f), "--test", "mnist:test", "--out", str(tmp_path / "c")]) == 2
    assert "does not match the predictions' labels" in capsys.readouterr().err


def test_read_labels_reads_csv_with_header_and_scores(tmp_path):
    c = tmp_path / "p.csv"
    c.write_text("id,pred\n0,3\n1,4\n")
    assert el.read_labels(c, 10).tolist() == [3, 4]
    c.write_text("pred,row\n4,1\n3,0\n")        # the row column orders them
    assert el.read_labels(c, 10).tolist() == [3, 4]
    s = tmp_path / "s.npy"
    np.save(s, np.array([[0.1, 0.9], [0.8, 0.2]]))
    assert el.read_labels(s, 2).tolist() == [1, 0]
    t = tmp_path / "s.tsv"
    t.write_text("0.1\t0.9\n0.8\t0.2\n")
    assert el.read_labels(t, 2).tolist() == [1, 0]


def test_qmnist_gap_matches_the_two_error_rates():
    rng = np.random.default_rng(0)
    w = rng.random(60_000) < 0.01
    g = cd.qmnist_gap(w)
    a, b = sg.error_rate(w[:10_000]), sg.error_rate(w[10_000:])
    assert g["gap"] == a.rate - b.rate and g["interval"][0] < g["gap"] < g["interval"][1]
    z = sg.z_two_sided()
    half = z * np.sqrt(a.rate * (1 - a.rate) / a.n + b.rate * (1 - b.rate) / b.n)
    assert np.isclose(g["interval"][1] - g["gap"], half)


# --------------------------------------------------------------------------- Fashion-MNIST

def test_fashion_card_with_two_real_classifiers(fashion_dir, tmp_path, capsys):
    from mnistforge.classifiers.linear import LinearClassifier

    tr = mnistforge.load("fashion-mnist", "train", root=fashion_dir)
    te = mnistforge.load("fashion-mnist", "test", root=fashion_dir)
    X, y, Xt, yt = (np.asarray(a) for a in (tr.images, tr.labels, te.images, te.labels))
    full = LinearClassifier().fit(X, y).predict(Xt)
    small = LinearClassifier().fit(X[:5000], y[:5000]).predict(Xt)
    a = tmp_path / "linear.csv"
    a.write_text("prediction\n" + "\n".join(str(int(v)) for v in full) + "\n")
    b = tmp_path / "linear5k.tsv"
    write_predictions(b, small, yt, name="linear5k")
    js, out = tmp_path / "f.json", tmp_path / "card"
    _card(["card", str(a), str(b), "--test", f"{fashion_dir}:fashion-mnist:test", "--out", str(out),
           "--json", str(js), "--bootstrap", "1000"], capsys)
    doc = json.loads(js.read_text())
    wa, wb = full != yt, small != yt
    assert doc["rate"]["errors"] == int(wa.sum()) and doc["known_labels"] is None
    # with two systems the vote is the carded one (it breaks every tie): no vote row
    comp = sg.compare_systems({"linear": wa, "linear5k": wb}, 1000, 0)
    assert doc["comparison"]["pairs"] == json.loads(json.dumps(comp.to_dict()["pairs"]))
    assert doc["combination"] is None and any("no vote row" in n for n in doc["notes"])
    assert doc["comparison"]["names"] == ["linear", "linear5k"]
    assert [c["name"] for c in doc["per_class"]] == list(te.classes)
    g = doc["gallery"][0]
    assert g["label_name"] == te.classes[g["label"]] and g["predicted_name"] == te.classes[g["predicted"]]
    assert np.asarray(doc["confusion"]).sum() == 10_000
    _check_images(_parse(out / "card.html"), 4 if _has_matplotlib() else 3)


# --------------------------------------------------------------------------- headless browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0"]
#: appended to a copy of the page only (the card itself has no script): counts broken images
PROBE = ('<script>window.addEventListener("load",function(){var n=0,b=0;'
         'for(const i of document.images){n++;if(!i.complete||i.naturalWidth===0)b++;}'
         'console.log("PROBE images="+n+" broken="+b);});</script>')


def _chromium(tmp_path, url, *extra):
    r = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *extra, url],
                       capture_output=True, text=True, timeout=120)
    console = [ln for ln in r.stderr.splitlines() if ":CONSOLE" in ln]
    return r, console


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                    "(apt-get install -y chromium)")
def test_the_page_opens_in_a_headless_browser(mnist_npy, tmp_path, capsys):
    from PIL import Image

    path, ds, pred = mnist_npy
    out = tmp_path / "card"
    _card(["card", str(path), "--test", "mnist:test", "--out", str(out), "--bootstrap", "2000",
           "--gallery", "100"], capsys)
    page = out / "card.html"
    shot = tmp_path / "shot.png"
    r, console = _chromium(tmp_path, page.as_uri(), f"--screenshot={shot}", "--window-size=1200,2000")
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    assert console == [], console                  # no script error, no failed load
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    r, console = _chromium(tmp_path, probe.as_uri(), "--dump-dom")
    found = [ln for ln in console if "PROBE" in ln]
    n = len(_parse(page).imgs)
    assert len(found) == 1 and f"images={n} broken=0" in found[0], console
    img = Image.open(shot).convert("RGB")
    a = np.asarray(img)
    colours = np.unique(a.reshape(-1, 3), axis=0)
    ink = (a.min(axis=2) < 200).mean()
    assert img.size == (1200, 2000) and len(colours) > 10 and 0.03 < ink < 0.9, (len(colours), ink)
    if os.environ.get("MNISTFORGE_UPDATE_DOCS_IMG"):   # refresh the docs' screenshot on request
        DOCS_IMG.parent.mkdir(exist_ok=True)
        img.save(DOCS_IMG, optimize=True)


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                    "(apt-get install -y chromium)")
def test_the_poi_names_are_distinct_on_a_headless_screenshot(mnist_npy, tmp_path, capsys):
    """Two systems named alike up to their 7th character: on the screenshot of the POI picture
    their row labels differ (they were both cut to "mnist-")."""
    import re

    from PIL import Image, ImageChops

    path, ds, pred = mnist_npy
    a, b = tmp_path / "mnist-knn-k3.npy", tmp_path / "mnist-linear-ridge.npy"
    shutil.copy(path, a)
    np.save(b, _cross_fitted(ds.images, ds.labels, "linear"))
    out = tmp_path / "card"
    _card(["card", str(a), str(b), "--test", "mnist:test", "--out", str(out), "--bootstrap", "200"],
          capsys)
    src = re.search(r'<img alt="Paired comparisons" src="(data:image/png;base64,[^"]+)"',
                    (out / "card.html").read_text()).group(1)
    only = tmp_path / "poi.html"
    only.write_text(f'<!DOCTYPE html><html><body style="margin:0"><img src="{src}"></body></html>')
    shot = tmp_path / "poi.png"
    r, _ = _chromium(tmp_path, only.as_uri(), f"--screenshot={shot}", "--window-size=800,400",
                     "--force-device-scale-factor=1", "--hide-scrollbars")
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    seen = np.asarray(Image.open(shot).convert("L"), float)
    poi = Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))).convert("L")
    w, h = poi.size
    assert np.abs(seen[:h, :w] - np.asarray(poi, float)).mean() < 10   # drawn as rendered
    lab = w - 2 * 44 - 4
    rows = [Image.fromarray(seen[lab + 44 * i:lab + 44 * (i + 1), :lab].astype(np.uint8))
            for i in range(2)]
    assert ImageChops.difference(rows[0], rows[1]).getbbox() is not None


def test_the_docs_show_a_screenshot():
    from PIL import Image

    text = (DOCS_IMG.parents[1] / "card.md").read_text()
    assert "img/card.png" in text
    a = np.asarray(Image.open(DOCS_IMG).convert("RGB"))
    assert len(np.unique(a.reshape(-1, 3), axis=0)) > 10


def test_a_training_set_sharing_writers_is_said_before_any_number(mnist_npy, qmnist_reference, cache, tmp_path,
                                                                   capsys):
    """Issue 43: a prediction file trained on QMNIST test50k (250 of MNIST test's writers) gets the
    warning first (output, page, JSON); --train mnist:train (no shared writer) none."""
    for part in ("train", "test"):
        put(cache, "qmnist", qmnist_reference / f"qmnist-{part}-labels-idx2-int.gz")
    _, ds, pred = mnist_npy
    p = tmp_path / "p.tsv"
    write_predictions(p, pred, ds.labels, name="knn", metadata={"train": "qmnist:test50k", "train_size": 50_000})
    out, js = tmp_path / "card", tmp_path / "card.json"
    args = ["card", str(p), "--test", "mnist:test", "--bootstrap", "200", "--gallery", "5"]
    text = _card(args + ["--out", str(out), "--json", str(js)], capsys)
    first = text.splitlines()[0]
    assert first.startswith("warning: the training set qmnist:test50k and the test set mnist:test share "
                            "250 writers"), text
    assert json.loads(js.read_text())["training_overlap"] == first[len("warning: "):]
    page = (out / "card.html").read_text()
    assert page.index("Warning: training and test sets overlap") < page.index("Error rate") and "250 writers" in page
    text = _card(args + ["--out", str(tmp_path / "c2"), "--json", str(js), "--train", "mnist:train"], capsys)
    assert "warning" not in text and json.loads(js.read_text())["training_overlap"] == ""
    assert "overlap" not in (tmp_path / "c2" / "card.html").read_text().split("<h2")[1]


def test_several_runs_per_system_show_their_spread(mnist_npy, tmp_path, capsys):
    """Issue 42: `card A1 A2 A3 B1 B2 --runs 3 2`: each first run carded and compared as before, and a
    section with each system's runs, between-run spread, POI over runs x rows and runs needed."""
    _, ds, pred = mnist_npy
    y = np.asarray(ds.labels)
    rng = np.random.default_rng(7)
    files, wrong = [], []
    for k, (base, flip) in enumerate([(pred, 0.002)] * 3 + [(_cross_fitted(ds.images, y, "linear"), 0.004)] * 2):
        run = np.where(rng.random(y.size) < flip * (k % 3), (y + 1) % 10, base)  # the first run of each: as is
        files.append(tmp_path / f"{'knn' if k < 3 else 'linear'}-{k}.npy")
        np.save(files[-1], run)
        wrong.append(run != y)
    js = tmp_path / "c.json"
    _card(["card", *map(str, files), "--test", "mnist:test", "--out", str(tmp_path / "card"), "--json", str(js),
           "--runs", "3", "2", "--bootstrap", "200", "--gallery", "5"], capsys)
    doc = json.loads(js.read_text())
    assert doc["rate"]["errors"] == int(wrong[0].sum())                      # the first run is carded
    assert [p["a"] for p in doc["comparison"]["pairs"]].count("knn-0") >= 1
    (pair,) = doc["runs"]["pairs"]
    assert (pair["a"], pair["b"], pair["runs"]) == ("knn-0", "linear-3", [3, 2])
    for side, runs in ((0, wrong[:3]), (1, wrong[3:])):
        rates = [w.mean() for w in runs]
        assert pair["rates"][side] == pytest.approx(np.mean(rates), rel=1e-12)
        assert pair["spread"][side] == pytest.approx(np.std(rates, ddof=1), rel=1e-12)
    assert 0 <= pair["between_share"] <= 1 and 0 <= pair["bootstrap"]["poi"] <= 1
    assert "Several runs per system" in (tmp_path / "card" / "card.html").read_text()
    assert main(["card", *map(str, files), "--test", "mnist:test", "--out", str(tmp_path / "c2"),
                 "--runs", "3", "3"]) == 2
    assert "--runs does not add up" in capsys.readouterr().err


def test_significance_says_a_shared_training_set_first(qmnist_reference, cache, tmp_path, capsys):
    for part in ("train", "test"):
        put(cache, "qmnist", qmnist_reference / f"qmnist-{part}-labels-idx2-int.gz")
    js = tmp_path / "s.json"
    assert main(["significance", "--example", "keysers2006", "--train", "qmnist:test50k", "--bootstrap", "100",
                 "--json", str(js)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("warning: the training set qmnist:test50k and the test set mnist:test share 250 writers")
    assert "250 writers" in json.loads(js.read_text())["training_overlap"]


# --------------------------------------------------------------------------- QMNIST

def test_qmnist_card_has_the_gap_and_the_label_errors_of_its_first_rows(mnist_cache,
                                                                         qmnist_reference):
    # QMNIST's test images are not on these machines: its real 60,000 labels, blank images
    from mnistforge.io.idx import read_idx
    from mnistforge.loaders.split import DatasetSplit
    from mnistforge.registry import get_dataset

    y = np.asarray(read_idx(qmnist_reference / "qmnist-test-labels-idx2-int.gz"))[:, 0].astype(np.int64)
    ds = DatasetSplit("qmnist", "test", np.zeros((y.size, 28, 28), np.uint8), y,
                      get_dataset("qmnist"), source="test")
    rng = np.random.default_rng(1)
    pred = np.where(rng.random(y.size) < np.r_[np.full(10_000, 0.01), np.full(50_000, 0.02)],
                    (y + 1) % 10, y)
    from mnistforge.evaluators.errorlists import SystemOutput

    card = cd.build_card(SystemOutput("m", pred != y, "", pred, y, "mem"), ds, resamples=100,
                         gallery_limit=10)
    q = card.qmnist
    a, b = sg.error_rate((pred != y)[:10_000]), sg.error_rate((pred != y)[10_000:])
    assert q["names"] == ["test10k", "test50k"] and q["boundary"] == 10_000
    assert q["test10k"] == a.to_dict() and q["test50k"] == b.to_dict()
    assert q["gap"] == a.rate - b.rate and q["significant"] and q["interval"][1] < 0
    assert card.comparison is None and "no other system" in card.comparison_note
    # the study of MNIST test applies to QMNIST's first 10,000 rows
    assert card.known_labels is not None and card.known_labels["label_issues"] == 15
    from mnistforge.evaluators.card_html import render_html

    assert "test10k (rows before 10000)" in render_html(card, {}, {})


def test_two_real_systems_show_both_names_in_full_everywhere(mnist_npy, tmp_path, capsys):
    """k-NN and linear on the real MNIST test set, named alike up to their last part: the
    POI picture once cut names to "mnist-" so the two looked the same."""
    from PIL import Image, ImageChops

    from mnistforge.plotting import pil_font

    path, ds, pred = mnist_npy
    a, b = tmp_path / "mnist-knn-k3.npy", tmp_path / "mnist-linear-ridge.npy"
    shutil.copy(path, a)
    np.save(b, _cross_fitted(ds.images, ds.labels, "linear"))
    out, js = tmp_path / "card", tmp_path / "c.json"
    _card(["card", str(a), str(b), "--test", "mnist:test", "--out", str(out), "--json", str(js),
           "--bootstrap", "200", "--markdown"], capsys)
    doc = json.loads(js.read_text())
    names = ["mnist-knn-k3", "mnist-linear-ridge"]
    assert doc["combination"] is None and doc["comparison"]["names"] == names
    text = (out / "card.html").read_text()
    tables = text.split("<table>")[1:]
    pairs = next(t for t in tables if "n12" in t)
    assert all(f"<td>{n}</td>" in pairs for n in names)
    assert all(n in (out / "card.md").read_text() for n in names)
    import re

    src = re.search(r'<img alt="Paired comparisons" src="data:image/png;base64,([^"]+)"', text)
    poi = Image.open(io.BytesIO(base64.b64decode(src.group(1)))).convert("L")
    # the POI picture: rows "1: name" in full (the label column is as wide as the longest
    # name), columns by number; the two row labels differ
    w, _ = poi.size
    lab = w - 2 * 44 - 4
    assert lab >= int(pil_font(12).getlength("2: mnist-linear-ridge")) + 10
    rows = [poi.crop((0, lab + 44 * i, lab, lab + 44 * (i + 1))) for i in range(2)]
    assert ImageChops.difference(rows[0], rows[1]).getbbox() is not None


def test_the_card_shows_writer_clustered_intervals_strata_and_pairs(mnist_cache, qmnist_reference, tmp_path,
                                                                     capsys):
    from mnistforge.evaluators.errorlists import write_error_lists
    from mnistforge.io.idx import read_idx

    keys = {s.name: s for s in load_example("keysers2006")}
    f = tmp_path / "cnn.tsv"
    write_error_lists(f, [keys["CNN"]])
    argv = ["card", str(f), "--test", "mnist:test", "--bootstrap", "200", "--markdown"]
    _card([*argv, "--out", str(tmp_path / "a"), "--json", str(tmp_path / "a.json")], capsys)
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["clustered"] is None and "not known here" in doc["clustered_note"]   # no QMNIST table
    assert "Writers" in (tmp_path / "a" / "card.md").read_text()
    put(mnist_cache, "qmnist", qmnist_reference / "qmnist-test-labels-idx2-int.gz")
    _card([*argv, "--out", str(tmp_path / "b"), "--json", str(tmp_path / "b.json")], capsys)
    c = json.loads((tmp_path / "b.json").read_text())["clustered"]
    table = np.asarray(read_idx(qmnist_reference / "qmnist-test-labels-idx2-int.gz"))[:10_000]
    want = sg.clustered_mean(keys["CNN"].wrong, table[:, 2])
    assert c["system"]["se"] == pytest.approx(want.se, rel=1e-12) and c["system"]["clusters"] == 297
    assert c["system"]["design_effect"] > 1   # the CNN's errors cluster by writer
    assert set(c["system"]["strata"]) == {"hsf_0", "hsf_4"}
    assert c["system"]["strata"]["hsf_4"]["mean"] == pytest.approx(keys["CNN"].wrong[table[:, 1] == 4].mean())
    assert {p["a"] for p in c["pairs"]} == {"CNN"} and {"SC", "SVM", "IDM", "CC"} <= {p["b"] for p in c["pairs"]}
    sc = next(p for p in c["pairs"] if p["b"] == "SC")
    assert sc["mean"] == pytest.approx((42 - 63) / 10_000) and sc["poi_a_better"] > 0.9
    md = (tmp_path / "b" / "card.md").read_text()
    assert "Writers: naive and clustered intervals" in md and "CNN in hsf_4" in md and "CNN - SC" in md
