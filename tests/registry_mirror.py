"""Small stand-ins of registry datasets, served from a real HTTP server on 127.0.0.1.

:func:`small_registry` writes, for registry entries (the bundled ones or entries a test adds),
small files in each entry's own format and layout (idx raw/gz/xz, idx2 label tables, archive
members, ``.npz``, files stored transposed) and a registry file describing *them*: the same
entries with the small counts and the small files' hashes, every URL on the mirror. A test
reads it with :func:`mnistforge.registry.use_registry`; nothing else changes, so the package's
own code paths (fetch, verification, raw copies, the gate, checks, export) run as for the real
release.
"""
from __future__ import annotations

import copy
import hashlib
import http.server
import io
import json
import os
import tempfile
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mnistforge.io.compression import compression_of, open_writer, strip_compression
from mnistforge.io.hashing import xxh3_parts
from mnistforge.io.idx import write_idx
from mnistforge.registry import registry_path

#: images per class in each file split: train holds three, so that its last rows (EMNIST's
#: validation portion, as large as test) hold one of each class
PER_CLASS = {"train": 3, "test": 1}


class Mirror:
    """A real HTTP server on 127.0.0.1 serving ``files`` (URL path -> bytes); records requests."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requested: list[str] = []
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet tests
                pass

            def do_GET(self):
                key = self.path.lstrip("/")
                mirror.requested.append(key)
                body = mirror.files.get(key)
                if body is None:
                    self.send_error(404, "not on the test mirror")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Expected:
    """What a load of each split must give (images upright, labels as stored), and the small
    files under their official names (archive members included)."""

    images: dict[str, np.ndarray] = field(default_factory=dict)
    labels: dict[str, np.ndarray] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)


def bundled() -> dict:
    """The bundled registry, as JSON."""
    return json.loads(Path(registry_path()).read_text(encoding="utf-8"))


def _images(n: int, style: str | None, rng: np.random.Generator) -> np.ndarray:
    """``n`` distinct upright characters: a vertical bar of random grey levels (taller than
    wide, so an orientation check can tell), inside MNIST's 20x20 box or filling the frame."""
    x = np.zeros((n, 28, 28), np.uint8)
    rows = slice(1, 27) if style == "frame-filling" else slice(4, 24)
    x[:, rows, 11:17] = rng.integers(64, 256, size=(n, rows.stop - rows.start, 6), dtype=np.uint8)
    return x


def _file_bytes(name: str, fmt: str, array: np.ndarray, member: str | None = None) -> bytes:
    if fmt == "npz":
        buf = io.BytesIO()
        np.savez_compressed(buf, **{member or "arr_0": array})
        return buf.getvalue()
    with tempfile.TemporaryDirectory() as d:  # write_idx: compression from the suffix
        p = os.path.join(d, name)
        write_idx(p, array)
        return Path(p).read_bytes()


def _content(name: str, data: bytes) -> bytes:
    from mnistforge.io.compression import open_reader

    if strip_compression(name) == name:
        return data
    return open_reader(io.BytesIO(data), name).read()


def _scaled(rows, big: int, small: int):
    start, stop = rows
    def f(v):
        return None if v is None else round(v * small / big)
    return [f(start), f(stop)]


def _shrink(entry: dict, rng: np.random.Generator, files_table: dict) -> tuple[dict, dict, Expected]:
    """The entry with small counts, the small files it names (name -> bytes), what loads give."""
    entry = copy.deepcopy(entry)
    classes = entry.get("classes") or [str(i) for i in range(10)]
    offset = int(entry.get("label_offset", 0))
    usable = list(range(offset, len(classes)))
    style = entry.get("image_style")
    transposed = entry.get("orientation") == "transposed"
    splits = entry["splits"]
    out: dict[str, bytes] = {}
    exp = Expected()
    sizes: dict[str, int] = {}
    for sname, sp in splits.items():
        if "of" in sp:
            continue
        m = PER_CLASS.get(sname, 2)
        labels = np.tile(np.asarray(usable, np.int64), m)
        n = len(labels)
        images = _images(n, style, rng)
        exp.images[sname], exp.labels[sname] = images, labels
        stored = images.transpose(0, 2, 1).copy() if transposed else images
        big = sp["count"]
        sp["count"] = sizes[sname] = n
        sp.pop("order_free_sha256", None)
        group = entry["group"]
        fmt = lambda fname: files_table.get(f"{group}/{fname}", {}).get("format", "idx")  # noqa: E731
        arr = lambda fname: files_table.get(f"{group}/{fname}", {}).get("array")  # noqa: E731
        out[sp["images"]] = _file_bytes(sp["images"], fmt(sp["images"]), stored, arr(sp["images"]))
        if sp.get("labels_column") is not None:  # an idx2 table (QMNIST): label, writer, ...
            table = np.zeros((n, 8), np.int32)
            table[:, sp["labels_column"]] = labels
            first = {"train": 0, "test": 1000}.get(sname, 2000)   # writers apart across splits
            table[:, 2] = first + np.arange(n) % 5
            table[:, 5] = np.arange(n)
            out[sp["labels"]] = _file_bytes(sp["labels"], "idx", table)
        else:
            lab = labels.astype(np.uint8)
            out[sp["labels"]] = _file_bytes(sp["labels"], fmt(sp["labels"]), lab, arr(sp["labels"]))
        sp["_big"] = big
    for sname, sp in splits.items():  # views: the same rows, scaled
        if "of" not in sp:
            continue
        base = splits[sp["of"]]
        n = sizes[sp["of"]]
        if sp.get("rows") is not None:
            sp["rows"] = _scaled(sp["rows"], base["_big"], n)
            start, stop = sp["rows"][0], n if sp["rows"][1] is None else sp["rows"][1]
            sl = slice(start, stop)
        else:
            k = sizes[sp.get("last") or sp.get("drop_last")]
            sl = slice(n - k, n) if sp.get("last") else slice(0, n - k)
        sp["count"] = sl.stop - sl.start
        exp.images[sname], exp.labels[sname] = exp.images[sp["of"]][sl], exp.labels[sp["of"]][sl]
    for sp in splits.values():
        sp.pop("_big", None)
    if entry.get("validation_size") is not None:
        entry["validation_size"] = splits["validation"]["count"]
    for fname in entry.get("extra_files", ()):
        out[fname] = _extra(fname, classes, offset, exp)
    return entry, out, exp


def _extra(fname: str, classes, offset: int, exp: Expected) -> bytes:
    """A side file: a split's labels as idx1 (QMNIST), its table as TSV, or a class map (one
    line a class), compressed as its name says."""
    split = next((s for s in exp.labels if f"-{s}-" in fname), "test")
    if "-idx1-" in fname:
        return _file_bytes(fname, "idx", exp.labels[split].astype(np.uint8))
    if ".tsv" in fname:
        text = "".join(f"{k}\t0\t0\t{i}\t0\t{i}\t0\t0\n" for i, k in enumerate(exp.labels[split]))
    else:
        text = "".join(f"{i} {ord(str(c)[0])}\n" for i, c in enumerate(classes) if i >= offset)
    comp = compression_of(fname)
    if comp is None:
        return text.encode()
    buf = io.BytesIO()
    with open_writer(buf, comp) as w:
        w.write(text.encode())
    return buf.getvalue()


def small_registry(names: list[str], workdir: Path, mirror: Mirror, *, raw: dict | None = None,
                   seed: int = 0) -> tuple[Path, dict[str, Expected]]:
    """Write a registry file for the datasets ``names`` of ``raw`` (the bundled registry by
    default) whose files are small ones served by ``mirror``; return its path and what each
    split must load as (:class:`Expected`). Other entries keep their facts; label-vote joins are left out (their
    study ids are rows of the full test sets: tests/test_label_issues.py covers them)."""
    raw = copy.deepcopy(raw if raw is not None else bundled())
    rng = np.random.default_rng(seed)
    expected: dict[str, Expected] = {}
    archives: dict[str, dict[str, bytes]] = {}
    for name in names:
        entry, files, exp = _shrink(raw["datasets"][name], rng, raw["files"])
        raw["datasets"][name] = entry
        exp.files = files
        expected[name] = exp
        group = entry["group"]
        for fname, data in files.items():
            fid = f"{group}/{fname}"
            f = raw["files"].setdefault(fid, {"group": group, "name": fname})
            for key in ("md5", "content_md5", "sha256", "size", "content_sha256", "content_size",
                        "content_xxh3_128"):
                f.pop(key, None)
            f.update(sha256=hashlib.sha256(data).hexdigest(), size=len(data), pinned=True,
                     note="small stand-in made by the test")
            if fname.endswith((".gz", ".xz", ".bz2")):
                content = _content(fname, data)
                f.update(content_sha256=hashlib.sha256(content).hexdigest(), content_size=len(content),
                         content_xxh3_128=xxh3_parts(content))
            if f.get("archive"):
                archives.setdefault(f["archive"], {})[f["member"]] = data
                f["urls"] = []
            else:
                f["urls"] = [f"{mirror.base}/{fid}"]
                mirror.files[fid] = data
    for aid, members in archives.items():
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for member in sorted(members):
                z.writestr(member, members[member])
        data = buf.getvalue()
        a = raw["files"][aid]
        for key in ("md5", "sha256", "size"):
            a.pop(key, None)
        a.update(sha256=hashlib.sha256(data).hexdigest(), size=len(data), pinned=True,
                 urls=[f"{mirror.base}/{aid}"])
        mirror.files[aid] = data
    raw["label_annotations"] = {}
    path = workdir / "registry.json"
    path.write_text(json.dumps(raw, indent=1, ensure_ascii=False), encoding="utf-8")
    return path, expected
