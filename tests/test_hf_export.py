"""Hugging Face export: round trips through `datasets.load_dataset`, the card, reproducibility, push.

All offline: the Hub client only ever talks to a tiny HTTP server on 127.0.0.1.
"""
from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from mnistforge.errors import CheckFailed, ConfigError, UploadError
from mnistforge import hub as hf
from mnistforge.io.hf import png
from mnistforge.registry import bibtex, built_license
from mnistforge.io.idx import read_idx, write_idx
from sd19_helpers import make_tiny_sd19

ROOT = Path(__file__).resolve().parents[1]
QMNIST_FIELDS = ["label", "hsf", "writer", "index_in_writer", "nist_class", "nist_index",
                 "duplicate", "unused"]
# every metadata column but `label` (it is the label column), as the loaders' hf_features has it;
# the writer is `writer_id` there (as in Flower's FEMNIST on the Hub, for NaturalIdPartitioner)
EXPORTED_QMNIST = ["hsf", "writer_id", "index_in_writer", "nist_class", "nist_index", "duplicate",
                   "unused"]
FIELD_OF = dict(zip(EXPORTED_QMNIST, QMNIST_FIELDS[1:]))  # column -> metadata field


@pytest.fixture(autouse=True)
def _hf_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    import datasets
    # datasets reads the variables at import time: pin them for this test too.
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", Path(tmp_path / "hf-cache"))


def digits_like(n, seed=0, shape=(28, 28)):
    """Images with MNIST's texture: zero background, a blob of graded ink, some pure noise."""
    rng = np.random.default_rng(seed)
    h, w = shape
    yy, xx = np.mgrid[:h, :w]
    out = np.zeros((n, h, w), np.uint8)
    for i in range(n):
        cy, cx = rng.uniform(8, h - 8), rng.uniform(8, w - 8)
        r = rng.uniform(3, 8)
        d = np.hypot(yy - cy, xx - cx)
        ink = np.clip((r - np.abs(d - r / 2)) * 60, 0, 255)
        out[i] = ink.astype(np.uint8)
        if i % 7 == 0:
            out[i] = rng.integers(0, 256, shape, dtype=np.uint8)
    return out


def qmnist_meta(labels, seed=1):
    rng = np.random.default_rng(seed)
    meta = np.zeros(len(labels), dtype=[(f, "<i4") for f in QMNIST_FIELDS])
    meta["label"] = labels
    meta["hsf"] = rng.choice([0, 1, 2, 3, 4, 6, 7], len(labels))
    meta["writer"] = rng.integers(0, 4100, len(labels))
    meta["index_in_writer"] = rng.integers(0, 150, len(labels))
    meta["nist_class"] = 30 + labels
    meta["nist_index"] = rng.permutation(402953)[:len(labels)]
    meta["duplicate"][::50] = rng.integers(1, 1000, len(meta["duplicate"][::50]))
    return meta


def toy_configs(n_train=900, n_test=300):
    imgs = digits_like(n_train + n_test)
    labels = np.random.default_rng(2).integers(0, 10, n_train + n_test)
    meta = qmnist_meta(labels)
    q = hf.ExportConfig(
        "qmnist", {"train": (imgs[:n_train], labels[:n_train], meta[:n_train]),
                   "test": (imgs[n_train:], labels[n_train:], meta[n_train:])},
        classes=[str(i) for i in range(10)], license="bsd-3-clause",
        citation=bibtex("qmnist"), description="toy QMNIST")
    letters = ["N/A (unused)"] + [chr(65 + i) for i in range(26)]
    n_let = min(120, n_train)
    l_labels = np.random.default_rng(3).integers(1, 27, n_let)
    e = hf.ExportConfig(
        "emnist-letters", {"train-without-validation": (imgs[:n_let], l_labels)}, classes=letters,
        license="other", license_name=built_license()[1], citation=bibtex("emnist"),
        label_note="labels 1..26", caveats=["orientation fixed"])
    return [q, e], (imgs, labels, meta, l_labels)


def load_ds(repo, config, split, tmp_path):
    import datasets
    return datasets.load_dataset(str(repo), config, split=split, cache_dir=str(tmp_path / "dl-cache"))


def ds_images(ds):
    return np.stack([np.asarray(im) for im in ds["image"]])


def tree_hashes(folder):
    folder = Path(folder)
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- round trips
def test_roundtrip_with_load_dataset(tmp_path):
    configs, (imgs, labels, meta, l_labels) = toy_configs()
    repo = tmp_path / "repo"
    # small shards: the train split must be cut into several files
    summary = hf.export_hf(repo, configs, max_shard_bytes=120_000, workers=1)
    train = summary["configs"][0]["splits"][0]
    assert len(train["files"]) > 1
    assert train["files"] == sorted(train["files"])
    assert all(f.startswith("data/qmnist/train-") for f in train["files"])

    ds = load_ds(repo, "qmnist", "train", tmp_path)
    assert ds.num_rows == 900
    assert np.array_equal(ds_images(ds), imgs[:900])
    assert np.array_equal(np.asarray(ds["label"]), labels[:900])
    assert ds.features["label"].names == [str(i) for i in range(10)]
    assert list(ds.features) == ["image", "label"] + EXPORTED_QMNIST + ["row_id"]
    assert ds["row_id"] == list(range(900))  # the row's index in the split, across the shards
    for f in EXPORTED_QMNIST:  # the QMNIST metadata columns survive, with their names
        assert np.array_equal(np.asarray(ds[f]), meta[FIELD_OF[f]][:900]), f

    test = load_ds(repo, "qmnist", "test", tmp_path)
    assert np.array_equal(ds_images(test), imgs[900:])
    assert np.array_equal(np.asarray(test["label"]), labels[900:])

    let = load_ds(repo, "emnist-letters", "train_without_validation", tmp_path)
    assert let.features["label"].names[1:4] == ["A", "B", "C"]
    assert np.array_equal(np.asarray(let["label"]), l_labels)
    assert np.array_equal(ds_images(let), imgs[:120])


def test_load_hf_split_returns_the_source_arrays(tmp_path):
    configs, (imgs, labels, meta, l_labels) = toy_configs()
    repo = tmp_path / "repo"
    hf.export_hf(repo, configs, max_shard_bytes=100_000, workers=1)
    images, got_labels, classes, got_meta = hf.load_hf_split(repo, "qmnist", "test")
    assert images.dtype == np.uint8 and images.shape == (300, 28, 28)
    assert np.array_equal(images, imgs[900:])
    assert np.array_equal(got_labels, labels[900:])
    assert classes == [str(i) for i in range(10)]
    assert list(got_meta.dtype.names) == EXPORTED_QMNIST
    for f in EXPORTED_QMNIST:
        assert np.array_equal(got_meta[f], meta[FIELD_OF[f]][900:])
    # mnistforge's split spelling works too
    images2, labels2, classes2, meta2 = hf.load_hf_split(repo, "emnist-letters",
                                                         "train-without-validation")
    assert np.array_equal(images2, imgs[:120]) and np.array_equal(labels2, l_labels)
    assert classes2[0] == "N/A (unused)" and meta2 is None


def test_idx_files_roundtrip(tmp_path):
    # official-format files made here, read with the idx reader, exported, reloaded
    imgs = digits_like(400, seed=5)
    labels = np.random.default_rng(6).integers(0, 10, 400).astype(np.uint8)
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", imgs)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels)
    src_i = read_idx(tmp_path / "t10k-images-idx3-ubyte.gz")
    src_l = read_idx(tmp_path / "t10k-labels-idx1-ubyte.gz")
    cfg = hf.ExportConfig("mnist", {"test": (src_i, src_l)}, classes=[str(i) for i in range(10)])
    hf.export_hf(tmp_path / "repo", [cfg], workers=1)
    ds = load_ds(tmp_path / "repo", "mnist", "test", tmp_path)
    assert np.array_equal(ds_images(ds), imgs)
    assert np.array_equal(np.asarray(ds["label"]), labels)


def test_real_mnist_test_set_roundtrip(tmp_path, mnist_reference):
    imgs = read_idx(mnist_reference / "t10k-images-idx3-ubyte.gz")
    labels = read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz")
    cfg = hf.ExportConfig("mnist", {"test": (imgs, labels)}, classes=[str(i) for i in range(10)])
    repo = tmp_path / "repo"
    hf.export_hf(repo, [cfg])
    ds = load_ds(repo, "mnist", "test", tmp_path)
    got = ds_images(ds)
    assert got.tobytes() == np.ascontiguousarray(imgs).tobytes()
    assert np.asarray(ds["label"], dtype=np.uint8).tobytes() == np.asarray(labels).tobytes()
    images, got_labels, _, _ = hf.load_hf_split(repo, "mnist", "test")
    assert images.tobytes() == np.ascontiguousarray(imgs).tobytes()
    assert np.array_equal(got_labels, labels)


# --------------------------------------------------------------------------- card
def test_card_yaml_lists_exactly_the_configs_and_sizes(tmp_path):
    import datasets

    configs, _ = toy_configs()
    repo = tmp_path / "repo"
    hf.export_hf(repo, configs, max_shard_bytes=120_000, workers=1)
    header = hf.read_card(repo)
    assert [c["config_name"] for c in header["configs"]] == ["qmnist", "emnist-letters"]
    assert header["configs"][0].get("default") is True
    on_disk = {p.relative_to(repo).as_posix() for p in (repo / "data").rglob("*.parquet")}
    listed = {f for c in header["configs"] for d in c["data_files"] for f in d["path"]}
    assert listed == on_disk
    sizes = {(i["config_name"], s["name"]): s["num_examples"]
             for i in header["dataset_info"] for s in i["splits"]}
    assert sizes == {("qmnist", "train"): 900, ("qmnist", "test"): 300,
                     ("emnist-letters", "train_without_validation"): 120}
    assert sorted(header["license"]) == ["bsd-3-clause", "other"]
    assert header["license_name"] == "nist-sd19"  # the Hub wants a slug and a link for `other`
    assert header["license_link"].startswith("https://www.nist.gov/")
    assert any("Cold Case" in c for c in header["citations"])
    feats = datasets.Features._from_yaml_list(header["dataset_info"][0]["features"])
    assert feats == hf.features_for([str(i) for i in range(10)], qmnist_meta(np.arange(2)).dtype, row_id=True)
    # the same definition as the loaders' .to_hf(), which has no row_id (the export's own column)
    from types import SimpleNamespace

    from mnistforge.loaders import hf_features
    del feats["row_id"]
    assert feats == hf_features(SimpleNamespace(classes=[str(i) for i in range(10)],
                                                metadata=qmnist_meta(np.arange(2))))
    text = (repo / "README.md").read_text()
    assert "labels 1..26" in text and "orientation fixed" in text
    for rel, digest in tree_hashes(repo).items():  # the card records every shard's sha256
        if rel.endswith(".parquet"):
            assert f"`{rel}`: `{digest}`" in text
    assert hf.verify_repo(repo) == {"qmnist": {"train": 900, "test": 300},
                                    "emnist-letters": {"train_without_validation": 120}}


def test_croissant_describes_the_same_files(tmp_path):
    configs, _ = toy_configs()
    repo = tmp_path / "repo"
    hf.export_hf(repo, configs, max_shard_bytes=120_000, workers=1)
    doc = json.loads((repo / "croissant.json").read_text())
    assert doc["conformsTo"] == "http://mlcommons.org/croissant/1.0"
    objects = {d["contentUrl"]: d["sha256"] for d in doc["distribution"]
               if d["@type"] == "cr:FileObject"}
    assert objects == {k: v for k, v in tree_hashes(repo).items() if k.endswith(".parquet")}
    assert [r["name"] for r in doc["recordSet"]] == ["qmnist", "emnist-letters"]
    qfields = [f["name"].split("/")[1] for f in doc["recordSet"][0]["field"]]
    assert qfields == ["split", "image", "label"] + EXPORTED_QMNIST + ["row_id"]


def test_mlcroissant_validates_the_export_with_no_warning(tmp_path, caplog):
    mlc = pytest.importorskip("mlcroissant", reason="mlcroissant (Croissant's reference library) "
                              "is not installed: pip install mlcroissant")
    configs, _ = toy_configs(n_train=30, n_test=20)
    hf.export_hf(tmp_path / "repo", configs, workers=1)
    with caplog.at_level("WARNING"):
        ds = mlc.Dataset(jsonld=str(tmp_path / "repo" / "croissant.json"))
        rows = list(ds.records("qmnist"))
    assert not ds.metadata.issues.warnings and not ds.metadata.issues.errors
    assert [r.getMessage() for r in caplog.records if "croissant" in r.getMessage().lower()
            or r.name == "absl"] == []
    assert len(rows) == 50 and {r["qmnist/split"] for r in rows} == {b"train", b"test"}


# --------------------------------------------------------------------------- reproducible
def test_reexport_gives_identical_files(tmp_path, monkeypatch):
    configs, _ = toy_configs()
    hf.export_hf(tmp_path / "a", configs, max_shard_bytes=120_000, workers=1)
    # second run through the thread pool: same bytes whatever the number of workers
    monkeypatch.setattr(png, "PARALLEL_MIN", 10)
    monkeypatch.setattr(png, "CHUNK", 128)
    configs2, _ = toy_configs()
    hf.export_hf(tmp_path / "b", configs2, max_shard_bytes=120_000, workers=2)
    a, b = tree_hashes(tmp_path / "a"), tree_hashes(tmp_path / "b")
    assert len(a) >= 5 and a == b


def test_both_png_encoders_export_the_same_pixels(tmp_path):
    # the default (fast) encoder changed the PNG bytes; `png="pillow"` keeps the old ones
    import pyarrow.parquet as pq

    configs, (imgs, *_) = toy_configs()
    hf.export_hf(tmp_path / "fast", configs, max_shard_bytes=120_000, workers=1)
    hf.export_hf(tmp_path / "pil", toy_configs()[0], max_shard_bytes=120_000, workers=1, png="pillow")
    for split, rows in (("train", imgs[:900]), ("test", imgs[900:])):
        fast = hf.load_hf_split(tmp_path / "fast", "qmnist", split)[0]
        pil = hf.load_hf_split(tmp_path / "pil", "qmnist", split)[0]
        np.testing.assert_array_equal(fast, rows)
        np.testing.assert_array_equal(pil, rows)
    shard = sorted((tmp_path / "pil" / "data" / "qmnist").glob("test-*.parquet"))[0]
    blobs = pq.read_table(shard).column("image").combine_chunks().field("bytes").to_pylist()
    assert blobs == [png.pillow_png(a) for a in imgs[900:900 + len(blobs)]]
    assert tree_hashes(tmp_path / "fast") != tree_hashes(tmp_path / "pil")
    card = (tmp_path / "fast" / "README.md").read_text()
    assert "`fast` encoder (no scanline filter, deflate by ISA-L" in card
    assert "`pillow` encoder (Pillow's bytes" in (tmp_path / "pil" / "README.md").read_text()


def test_parquet_holds_no_varying_metadata(tmp_path):
    import pyarrow.parquet as pq

    configs, _ = toy_configs()
    hf.export_hf(tmp_path / "r", configs, workers=1)
    for p in (tmp_path / "r" / "data").rglob("*.parquet"):
        md = pq.ParquetFile(p).metadata
        assert set(md.metadata) == {b"ARROW:schema", b"huggingface"}
        assert json.loads(md.metadata[b"huggingface"]) .keys() == {"info"}
        assert md.created_by.startswith("parquet-cpp-arrow")
        assert all(md.row_group(i).num_rows <= hf.ROW_GROUP_SIZE for i in range(md.num_row_groups))


@pytest.mark.parametrize("encoder", sorted(png.PNG_ENCODERS))
def test_png_is_reproducible_and_decodes_like_pillow(encoder):
    from PIL import Image

    imgs = digits_like(300, seed=9)
    blobs = [hf.encode_png(a, png=encoder) for a in imgs]
    assert blobs == [hf.encode_png(a, png=encoder) for a in imgs]
    assert all(b"tIME" not in b and b"tEXt" not in b for b in blobs)
    kinds = set()
    for b in blobs:
        h, w, raw = png._png_filtered(b)
        kinds |= set(np.frombuffer(raw, np.uint8).reshape(h, w + 1)[:, 0].tolist())
    if encoder == "pillow":
        assert len(kinds) >= 3  # Pillow's adaptive filtering picks several
    else:
        assert kinds == {0}     # fast: every row unfiltered
    pil = np.stack([np.asarray(Image.open(io.BytesIO(b))) for b in blobs])
    fast = hf.decode_pngs(blobs)
    assert np.array_equal(fast, pil) and np.array_equal(fast, imgs)
    # a PNG outside the fast path (RGB, interlaced) goes through Pillow
    buf = io.BytesIO()
    Image.fromarray(np.stack([imgs[0]] * 3, -1)).save(buf, format="PNG", interlace=1)
    mixed = hf.decode_pngs([blobs[1], buf.getvalue()])
    assert np.array_equal(mixed[0], imgs[1]) and np.array_equal(mixed[1], imgs[0])


def _png_with_filters(img, filters):
    """A grey 8-bit PNG whose row r uses PNG filter ``filters[r]`` (written by hand, per the spec)."""
    import struct
    import zlib

    h, w = img.shape
    x = img.astype(np.int32)
    rows = []
    for r in range(h):
        prior = x[r - 1] if r else np.zeros(w, np.int32)
        left = np.concatenate([[0], x[r, :-1]])
        upleft = np.concatenate([[0], prior[:-1]])
        f = filters[r]
        if f == 0:
            pred = np.zeros(w, np.int32)
        elif f == 1:
            pred = left
        elif f == 2:
            pred = prior
        elif f == 3:
            pred = (left + prior) // 2
        else:
            p = left + prior - upleft
            pa, pb, pc = abs(p - left), abs(p - prior), abs(p - upleft)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prior, upleft))
        rows.append(bytes([f]) + ((x[r] - pred) % 256).astype(np.uint8).tobytes())

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b""))


def test_every_png_filter_decodes_like_pillow():
    from PIL import Image

    imgs = digits_like(40, seed=11)
    rng = np.random.default_rng(12)
    blobs = [_png_with_filters(a, rng.integers(0, 5, 28)) for a in imgs]
    pil = np.stack([np.asarray(Image.open(io.BytesIO(b))) for b in blobs])
    assert np.array_equal(pil, imgs)  # the hand-made files are valid PNGs
    assert np.array_equal(hf.decode_pngs(blobs), imgs)


def test_shard_bounds_respect_the_limit():
    sizes = np.random.default_rng(0).integers(100, 400, 1000)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    bounds = hf.shard_bounds(offsets, 20_000)
    assert bounds[0][0] == 0 and bounds[-1][1] == 1000
    assert all(a == pb for (a, _), (_, pb) in zip(bounds[1:], bounds))
    assert all(offsets[b] - offsets[a] <= 20_000 for a, b in bounds)
    counts = [b - a for a, b in bounds]
    assert max(counts) - min(counts) <= 1
    assert hf.shard_bounds(offsets, 10**9) == [(0, 500), (500, 1000)]  # the default: 500 rows a shard or more
    assert hf.shard_bounds(offsets, 10**9, num_shards=1) == [(0, 1000)]


# --------------------------------------------------------------------------- errors and checks
def test_bad_inputs_are_refused(tmp_path):
    imgs = np.zeros((2, 28, 28), np.uint8)
    with pytest.raises(ConfigError, match="label out of range"):
        hf.ExportConfig("x", {"train": (imgs, np.array([0, 5]))}, classes=["a", "b"])
    with pytest.raises(ConfigError, match="unique"):
        hf.ExportConfig("x", {"train": (imgs, np.array([0, 1]))}, classes=["a", "a"])
    with pytest.raises(ConfigError, match="uint8"):
        hf.ExportConfig("x", {"train": (imgs.astype(float), np.array([0, 1]))}, classes=["a", "b"])
    cfg = hf.ExportConfig("x", {"train": (imgs, np.array([0, 1]))}, classes=["a", "b"])
    with pytest.raises(ConfigError, match="distinct"):
        hf.export_hf(tmp_path / "r", [cfg, cfg])
    assert not (tmp_path / "r").exists() and not (tmp_path / "r.incomplete").exists()
    # a lazy split is checked when it is loaded, and a failure leaves nothing behind
    lazy = hf.ExportConfig("x", {"train": (imgs, np.array([0, 1])),
                                 "test": lambda: (imgs, np.array([0, 7]))}, classes=["a", "b"])
    with pytest.raises(ConfigError, match="label out of range"):
        hf.export_hf(tmp_path / "r", [lazy], workers=1)
    assert not (tmp_path / "r").exists() and not (tmp_path / "r.incomplete").exists()


def test_verify_repo_catches_a_tampered_folder(tmp_path):
    configs, _ = toy_configs()
    repo = tmp_path / "repo"
    hf.export_hf(repo, configs, max_shard_bytes=120_000, workers=1)
    card = repo / "README.md"
    text = card.read_text()
    card.write_text(text.replace("num_examples: 300", "num_examples: 301", 1))
    with pytest.raises(CheckFailed, match="card says 301 rows, shards hold 300"):
        hf.verify_repo(repo)
    card.write_text(text)
    next((repo / "data" / "qmnist").glob("train-00001-*.parquet")).unlink()
    with pytest.raises(CheckFailed, match="missing"):
        hf.verify_repo(repo)


# --------------------------------------------------------------------------- push
class _Recorder(http.server.BaseHTTPRequestHandler):
    """A stand-in for the Hub's HTTP API: records every request, answers like the Hub."""

    log: list = []

    def _reply(self, obj, code=200):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802 - http.server's naming
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        self.log.append({"method": "POST", "path": self.path, "body": body,
                         "auth": self.headers.get("Authorization")})
        path = self.path.split("?")[0]
        if path == "/api/repos/create":
            self._reply({"url": f"http://{self.headers['Host']}/datasets/org/name", "name": "org/name"})
        elif path == "/api/validate-yaml":
            self._reply({"errors": [], "warnings": []})
        elif "/preupload/" in path:
            files = json.loads(body)["files"]
            self._reply({"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                   for f in files]})
        elif "/commit/" in path:
            self._reply({"commitUrl": f"http://{self.headers['Host']}/datasets/org/name/commit/abc",
                         "commitOid": "a" * 40})
        else:
            self._reply({"error": "not found"}, 404)

    def do_GET(self):  # noqa: N802
        self.log.append({"method": "GET", "path": self.path, "body": b"", "auth": None})
        self._reply({"error": "not found"}, 404)

    def log_message(self, *args):
        pass


@pytest.fixture
def hub_server():
    _Recorder.log = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Recorder.log
    server.shutdown()
    server.server_close()


def _push_env(tmp_path, endpoint, token="hf_testtoken"):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HF_") and k not in ("HUGGINGFACE_HUB_TOKEN",)}
    env.update({"HF_ENDPOINT": endpoint, "HF_HOME": str(tmp_path / "push-home"),
                "HF_DATASETS_OFFLINE": "1", "MNISTFORGE_PROGRESS": "0",
                "PYTHONPATH": str(ROOT)})
    if token:
        env["HF_TOKEN"] = token
    return env


def test_push_uploads_the_checked_folder_to_the_endpoint(tmp_path, hub_server):
    endpoint, log = hub_server
    configs, _ = toy_configs(300, 100)
    repo = tmp_path / "repo"
    hf.export_hf(repo, configs, workers=1)
    # a fresh interpreter: the hub client reads HF_ENDPOINT/HF_HUB_OFFLINE when imported
    r = subprocess.run([sys.executable, "-m", "mnistforge", "export", "hf", "--out", str(repo),
                        "--push", "org/name"], env=_push_env(tmp_path, endpoint),
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert "pushed" in r.stdout
    posts = [e["path"].split("?")[0] for e in log if e["method"] == "POST"]
    assert posts[0] == "/api/repos/create"  # (the client may also GET its own telemetry lists)
    commits = [e for e in log if "/commit/" in e["path"]]
    assert len(commits) == 1 and commits[0]["path"].startswith("/api/datasets/org/name/commit/")
    assert all(e["auth"] == "Bearer hf_testtoken" for e in log if e["method"] == "POST")
    # the commit carries every file of the folder, byte for byte
    lines = [json.loads(x) for x in commits[0]["body"].splitlines() if x.strip()]
    sent = {d["value"]["path"]: base64.b64decode(d["value"]["content"])
            for d in lines if d["key"] == "file"}
    local = {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    assert sent == local


_FAILING_PUSHES = """
import os, sys
from mnistforge.errors import UploadError
from mnistforge import hub as hf
repo, dead = sys.argv[1], sys.argv[2]
os.environ.pop("HF_TOKEN", None)
try:
    hf.push_to_hub(repo, "org/name")
except UploadError as e:
    print("NO-TOKEN:", e)
os.environ["HF_TOKEN"] = "hf_testtoken"
try:
    hf.push_to_hub(repo, "org/name", endpoint=dead, check=False)
except UploadError as e:
    print("UNREACHABLE:", e)
"""


def test_push_fails_clearly_without_token_or_hub(tmp_path, hub_server):
    import socket

    endpoint, log = hub_server
    configs, _ = toy_configs(50, 20)
    repo = tmp_path / "repo"
    hf.export_hf(repo, configs, workers=1)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()  # nothing listens there any more
    # a fresh interpreter: the hub client reads HF_HOME/HF_ENDPOINT/HF_HUB_OFFLINE when imported,
    # so this one sees no stored token and talks only to 127.0.0.1
    r = subprocess.run([sys.executable, "-c", _FAILING_PUSHES, str(repo), dead],
                       env=_push_env(tmp_path, endpoint, token=None),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = dict(line.split(": ", 1) for line in r.stdout.splitlines() if ": " in line)
    assert "no Hugging Face token: nothing uploaded" in out["NO-TOKEN"]
    assert "HF_TOKEN" in out["NO-TOKEN"]
    assert "upload to org/name failed" in out["UNREACHABLE"]
    assert "local folder is intact" in out["UNREACHABLE"]
    assert [e for e in log if e["method"] == "POST"] == []  # nothing reached the (live) endpoint


def test_push_refuses_in_offline_mode_and_unchecked_folders(tmp_path, hub_server, monkeypatch):
    endpoint, log = hub_server
    configs, _ = toy_configs(50, 20)
    repo = tmp_path / "repo"
    hf.export_hf(repo, configs, workers=1)
    monkeypatch.setenv("HF_TOKEN", "hf_testtoken")
    with pytest.raises(UploadError, match="offline mode"):  # HF_HUB_OFFLINE=1 from the fixture
        hf.push_to_hub(repo, "org/name", endpoint=endpoint)
    card = repo / "README.md"
    card.write_text(card.read_text().replace("num_examples: 20", "num_examples: 21", 1))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    with pytest.raises(CheckFailed):
        hf.push_to_hub(repo, "org/name", endpoint=endpoint)
    with pytest.raises(ConfigError, match="ORG/NAME"):
        hf.push_to_hub(repo, "not a repo id", endpoint=endpoint)
    assert log == []


# --------------------------------------------------------------------------- CLI, builds, loaders
@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """A tiny synthetic SD19 built into QMNIST and two EMNIST datasets (a few seconds)."""
    from mnistforge.builders.emnist import build_emnist
    from mnistforge.builders.qmnist import QmnistBuildConfig, build_qmnist

    base = tmp_path_factory.mktemp("hf-builds")
    sd19 = make_tiny_sd19(base / "sd19", scale=0.002)
    build_qmnist(sd19, base / "qmnist", QmnistBuildConfig(progress=False, workers=1))
    build_emnist(sd19, base / "emnist", splits=["letters", "balanced"], seed=3, workers=1)
    return base


def test_cli_exports_a_synthetic_build(builds, tmp_path):
    import datasets

    import mnistforge
    from mnistforge.cli import main

    repo = tmp_path / "repo"
    assert main(["export", "hf", str(builds / "qmnist"), str(builds / "emnist"), "--out", str(repo),
                 "--workers", "1"]) == 0
    header = hf.read_card(repo)
    assert [c["config_name"] for c in header["configs"]] == ["qmnist", "emnist-balanced",
                                                             "emnist-letters"]
    for info in header["dataset_info"]:
        name = info["config_name"]
        assert [s["name"] for s in info["splits"]] == ["train", "test"]
        for s in info["splits"]:
            src = mnistforge.load(name, s["name"], root=builds / ("qmnist" if name == "qmnist"
                                                                  else "emnist"),
                                  with_metadata=True)
            assert s["num_examples"] == len(src)
            ds = load_ds(repo, name, s["name"], tmp_path)
            assert np.array_equal(ds_images(ds), src.images)  # upright, as loaded from idx
            assert np.array_equal(np.asarray(ds["label"]), src.labels)
            assert ds.features["label"].names == src.classes
            for f in src.metadata.dtype.names:
                if f != "label":
                    col = "writer_id" if f == "writer" else f  # the Hub's name of the writer
                    assert np.array_equal(np.asarray(ds[col]), src.metadata[f]), (name, f)
            assert ds.features == {**src.to_hf().features, "row_id": datasets.Value("int64")}  # one definition
    text = (repo / "README.md").read_text()
    manifest = json.loads((builds / "qmnist" / "manifest.json").read_text())
    for rel, out in manifest["outputs"].items():  # provenance: the build's file hashes
        assert out["sha256"] in text
    assert "SYNTHETIC" in text
    assert "Letters labels are 1..26" in text and "37 classes" in text
    assert "Orientation fixed" in text
    assert header["license"] == "other"


def test_load_from_an_exported_repository(builds, tmp_path):
    import mnistforge
    from mnistforge.cli import main

    repo = tmp_path / "repo"
    assert main(["export", "hf", f"{builds / 'emnist'}:emnist-letters",
                 f"{builds / 'qmnist'}:test", "--out", str(repo), "--no-check"]) == 0
    assert [c["config_name"] for c in hf.read_card(repo)["configs"]] == ["emnist-letters", "qmnist"]
    assert list(hf.repo_configs(repo)["qmnist"]) == ["test"]
    # an export is itself a valid target (FOLDER:NAME), and re-exporting keeps the bytes
    again = tmp_path / "again"
    assert main(["export", "hf", f"{repo}:emnist-letters", f"{repo}:qmnist", "--out", str(again),
                 "--no-check"]) == 0
    a, b = tree_hashes(repo), tree_hashes(again)
    assert {k: v for k, v in a.items() if k.startswith("data/")} == \
        {k: v for k, v in b.items() if k.startswith("data/")}
    assert "re-exported from an earlier mnistforge export" in (again / "README.md").read_text()
    for name, split, root in (("qmnist", "test", builds / "qmnist"),
                              ("emnist-letters", "train", builds / "emnist")):
        a = mnistforge.load(name, split, root=root, with_metadata=True)
        b = mnistforge.load(name, split, root=repo, with_metadata=True)
        assert np.array_equal(a.images, b.images) and np.array_equal(a.labels, b.labels)
        assert a.classes == b.classes and b.split == split
        assert a.metadata.dtype == b.metadata.dtype
        assert all(np.array_equal(a.metadata[f], b.metadata[f]) for f in a.metadata.dtype.names)


def test_cli_official_format_folder_splits_and_renames(tmp_path, monkeypatch):
    import mnistforge
    from mnistforge.cli import main

    # toy data under MNIST's official names: the explicit opt-out of the registry hash check
    monkeypatch.setenv("MNISTFORGE_TRUST_FILES", "1")

    folder = tmp_path / "official"
    folder.mkdir()
    imgs = digits_like(260, seed=21)
    labels = np.random.default_rng(22).integers(0, 10, 260).astype(np.uint8)
    write_idx(folder / "train-images-idx3-ubyte.gz", imgs[:200])
    write_idx(folder / "train-labels-idx1-ubyte.gz", labels[:200])
    write_idx(folder / "t10k-images-idx3-ubyte.gz", imgs[200:])
    write_idx(folder / "t10k-labels-idx1-ubyte.gz", labels[200:])
    repo = tmp_path / "repo"
    assert main(["export", "hf", f"small={folder}:test", f"{folder}", "--out", str(repo),
                 "--max-shard-mb", "0.01", "--no-croissant"]) == 0
    configs = hf.repo_configs(repo)
    assert list(configs) == ["small", "mnist"]
    assert list(configs["small"]) == ["test"] and list(configs["mnist"]) == ["train", "test"]
    assert len(configs["mnist"]["train"]) > 1  # 0.01 MiB shards
    assert not (repo / "croissant.json").exists()
    ds = load_ds(repo, "mnist", "train", tmp_path)
    assert np.array_equal(ds_images(ds), imgs[:200])
    small = mnistforge.load("small", "test", root=repo)
    assert np.array_equal(small.images, imgs[200:]) and np.array_equal(small.labels, labels[200:])
    # the same config name for two different sources, an existing folder, nothing to do
    assert main(["export", "hf", f"x={folder}:test", "x=mnist:test", "--out",
                 str(tmp_path / "r2")]) == 2
    assert main(["export", "hf", str(folder), "--out", str(repo)]) == 2  # exists: usage error
    assert main(["export", "hf", "--out", str(tmp_path / "r3")]) == 2
    assert not (tmp_path / "r2").exists() and not (tmp_path / "r3").exists()


def test_cli_png_flag_picks_the_encoder(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from mnistforge.cli import main
    from mnistforge.io.idx import write_idx

    monkeypatch.setenv("MNISTFORGE_TRUST_FILES", "1")   # toy data under MNIST's official names
    imgs = digits_like(40, seed=4)
    folder = tmp_path / "official"
    folder.mkdir()
    write_idx(folder / "t10k-images-idx3-ubyte.gz", imgs)
    write_idx(folder / "t10k-labels-idx1-ubyte.gz", np.arange(40, dtype=np.uint8) % 10)
    blobs = {}
    for flag in ("pillow", "fast", None):
        out = tmp_path / f"r-{flag}"
        argv = ["export", "hf", f"{folder}:test", "--out", str(out), "--workers", "1", "--no-check"]
        assert main(argv + (["--png", flag] if flag else [])) == 0
        shard = next((out / "data" / "mnist").glob("*.parquet"))
        blobs[flag] = pq.read_table(shard).column("image").combine_chunks().field("bytes").to_pylist()
    assert blobs["pillow"] == [png.pillow_png(a) for a in imgs]
    assert blobs[None] == blobs["fast"] != blobs["pillow"]          # fast is the default
    np.testing.assert_array_equal(hf.decode_pngs(blobs["fast"]), imgs)
    assert main(["export", "torchvision", "mnist", "--out", str(tmp_path / "tv"), "--png", "fast"]) == 2
