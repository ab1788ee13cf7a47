"""Hugging Face format: Hub-ready dataset repositories (parquet shards + dataset card).

A repository folder written by :func:`export_hf` holds one *config* per dataset::

    REPO_DIR/
      README.md                      dataset card: YAML header (configs, features,
                                     splits, sizes, licence, citations) + provenance
      croissant.json                 optional Croissant 1.0 description of the same data
      data/<config>/<split>-00000-of-00002.parquet
      data/<config>/<split>-00001-of-00002.parquet

Every row has ``image`` (:class:`datasets.Image`, PNG bytes, upright, ink high),
``label`` (:class:`datasets.ClassLabel` with the real character names) and the
metadata columns the source knows (QMNIST's NIST columns, EMNIST writer
metadata), under the names the loaders expose.  The folder loads with the
standard API and no loading script::

    datasets.load_dataset(REPO_DIR, "<config>", split="train")

and with ``mnistforge.load(config, split, root=REPO_DIR)`` (:func:`load_hf_split`).

Reproducible: PNGs are encoded by Pillow with a fixed compression level and no
ancillary chunks (no timestamps), parquet files are written by pyarrow with
fixed settings (compression, row-group size, format version) and the schema
metadata holds only the feature definition, so the same input gives
byte-identical files (for a given Pillow/zlib/pyarrow version, which the card
records).

Split names: the Hub only accepts ``\\w+`` split names, so ``-`` becomes ``_``
(``train-without-validation`` is stored as ``train_without_validation``);
:func:`load_hf_split` accepts either spelling.

Examples
--------
>>> import numpy as np, tempfile, os
>>> repo = os.path.join(tempfile.mkdtemp(), "repo")
>>> imgs = np.zeros((3, 28, 28), np.uint8); labels = np.array([0, 1, 1])
>>> cfg = ExportConfig("toy", {"train": SplitData(imgs, labels)}, classes=["a", "b"])
>>> _ = export_hf(repo, [cfg], workers=1)
>>> images, labels2, classes, meta = load_hf_split(repo, "toy", "train")
>>> images.shape, labels2.tolist(), classes
((3, 28, 28), [0, 1, 1], ['a', 'b'])
"""
from __future__ import annotations

import concurrent.futures
import functools
import io
import json
import logging
import math
import os
import re
import shutil
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import CheckFailed, ConfigError, FormatError, MissingFileError, MnistforgeError
from ..outputs import atomic_dir, atomic_file, sha256_file

logger = logging.getLogger(__name__)

#: zlib level of the PNG encoder (6: within 3% of level 9's size at a third of the time).
PNG_COMPRESS_LEVEL = 6
#: Rows per parquet row group: ~250 KB of MNIST-sized PNGs, small enough for the
#: Hub's dataset viewer and for streaming, large enough to read fast.
ROW_GROUP_SIZE = 1000
#: Upper bound on a shard's size (PNG bytes); a split is cut into equal-row shards below it.
MAX_SHARD_BYTES = 128 * 2**20
#: Fixed writer settings: together with the fixed schema metadata they make
#: the parquet bytes a function of the data only.
PARQUET_OPTIONS = dict(
    compression="snappy", version="2.6", data_page_version="1.0", use_dictionary=True,
    write_statistics=True, store_schema=True, write_page_index=False,
)
CARD = "README.md"
CROISSANT = "croissant.json"
DATA = "data"
SHARD_RE = re.compile(r"^(?P<split>\w+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.parquet$")
# Below this many images a process pool costs more than it saves.
PARALLEL_MIN = 20_000
CHUNK = 10_000

#: Metadata fields not exported: ``label`` repeats the label column (the
#: loaders' rule), ``image`` would clash.
SKIPPED_METADATA = ("image", "label")
#: Used when the registry has no entry for a config (arrays exported directly).
DEFAULT_LICENSE = "other"


# --------------------------------------------------------------------------- data model
@dataclass
class SplitData:
    """One split: ``images`` (N x H x W uint8, upright), ``labels`` (N ints), optional metadata.

    ``metadata`` is a NumPy structured array with one record per image (or None).
    """

    images: np.ndarray
    labels: np.ndarray
    metadata: np.ndarray | None = None

    def __post_init__(self):
        self.images = np.asarray(self.images)
        self.labels = np.asarray(self.labels)
        if self.images.ndim != 3 or self.images.dtype != np.uint8:
            raise ConfigError("images must be a uint8 array N x H x W",
                              expected="uint8, 3 dims",
                              found=f"{self.images.dtype}, shape {self.images.shape}")
        n = len(self.images)
        if self.labels.shape != (n,):
            raise ConfigError("one label per image", expected=f"labels of shape ({n},)",
                              found=f"shape {self.labels.shape}")
        if self.metadata is not None:
            if self.metadata.dtype.names is None or len(self.metadata) != n:
                raise ConfigError("metadata must be a structured array with one record per image",
                                  expected=f"{n} records",
                                  found=f"{len(self.metadata)} records, dtype {self.metadata.dtype}")


@dataclass
class ExportConfig:
    """A dataset to export as one Hub config.

    Parameters
    ----------
    name : str
        Config name (the dataset name: ``mnist``, ``qmnist``, ``emnist-letters``...).
    splits : dict
        ``{split: SplitData or (images, labels[, metadata])}``, or a callable
        returning one: it is called when the split is written, so a large
        export holds one split in memory at a time.
    classes : list of str
        ``classes[i]`` is the character of label ``i``; becomes the ClassLabel names.
    description : str
        One paragraph for the card.
    source : str
        Where the data comes from ("official release files", "built from NIST SD19 ...").
    provenance : dict
        Free-form provenance rendered in the card: package version, parameters,
        ``inputs`` ({file: sha256 or dict}), notes.
    license, license_name : str
        Hub licence identifier (``mit``, ``cc-by-sa-3.0``, ``bsd-3-clause``, ``other``)
        and a human name for ``other``.
    citation : str
        BibTeX of the work to cite.
    label_note : str
        How the labels are numbered (e.g. "letters: labels 1..26, 0 unused").
    caveats : list of str
        Known pitfalls, one sentence each.
    """

    name: str
    splits: dict
    classes: list
    description: str = ""
    source: str = ""
    provenance: dict = field(default_factory=dict)
    license: str | None = None
    license_name: str | None = None
    citation: str | None = None
    label_note: str | None = None
    caveats: list = field(default_factory=list)
    pretty_name: str | None = None

    def __post_init__(self):
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", self.name or ""):
            raise ConfigError("invalid config name", expected="letters, digits, '-', '_', '.'",
                              found=repr(self.name))
        if not self.splits:
            raise ConfigError(f"config {self.name!r} has no split", expected="at least one split",
                              found="none")
        fixed = {}
        for split, data in self.splits.items():
            if not (isinstance(data, SplitData) or callable(data)):
                data = SplitData(*data)
            fixed[hf_split_name(split)] = data
        self.splits = fixed
        self.classes = [str(c) for c in self.classes]
        if len(set(self.classes)) != len(self.classes):
            dup = sorted({c for c in self.classes if self.classes.count(c) > 1})
            raise ConfigError(f"config {self.name!r}: class names must be unique for ClassLabel",
                              expected="distinct names", found=f"duplicates {dup}")
        for split, data in self.splits.items():
            if isinstance(data, SplitData):
                self.check_split(split, data)

    def check_split(self, split: str, data: SplitData) -> None:
        """Raise ConfigError when a label has no class."""
        if len(data.labels) and (data.labels.min() < 0 or data.labels.max() >= len(self.classes)):
            raise ConfigError(
                f"config {self.name!r} split {split!r}: label out of range",
                expected=f"0..{len(self.classes) - 1} ({len(self.classes)} classes)",
                found=f"{int(data.labels.min())}..{int(data.labels.max())}")

    def split_data(self, split: str) -> SplitData:
        """The split's arrays (calling a lazy loader; see ``splits``), checked."""
        data = self.splits[split]
        if callable(data):
            data = data()
            if not isinstance(data, SplitData):
                data = SplitData(*data)
            self.check_split(split, data)
        return data


def hf_split_name(split: str) -> str:
    """The Hub's spelling of a split name (``\\w+``: ``-`` becomes ``_``).

    Examples
    --------
    >>> hf_split_name("train-without-validation")
    'train_without_validation'
    """
    name = str(split).replace("-", "_")
    if not re.fullmatch(r"\w+", name):
        raise ConfigError("invalid split name", expected="letters, digits, '-' or '_'",
                          found=repr(split))
    return name


# --------------------------------------------------------------------------- features
def features_for(classes, metadata_dtype=None):
    """The :class:`datasets.Features` of an exported config.

    ``image`` (Image), ``label`` (ClassLabel named by ``classes``), then one
    ``Value`` per scalar field of ``metadata_dtype`` (a NumPy structured dtype),
    in field order.  Fields named ``image`` or ``label`` are left out (the label
    is already a column).  The loaders' ``.to_hf()`` uses the same definition.

    Examples
    --------
    >>> f = features_for(["0", "1"], np.dtype([("writer", "i4")]))
    >>> list(f), f["label"].names, f["writer"].dtype
    (['image', 'label', 'writer'], ['0', '1'], 'int32')
    """
    import datasets

    cols = {"image": datasets.Image(), "label": datasets.ClassLabel(names=[str(c) for c in classes])}
    for name in metadata_columns(metadata_dtype):
        cols[name] = datasets.Value(_value_dtype(metadata_dtype[name], name))
    return datasets.Features(cols)


def metadata_columns(metadata_dtype) -> list[str]:
    """Names of the metadata fields exported as columns (all but :data:`SKIPPED_METADATA`)."""
    if metadata_dtype is None or metadata_dtype.names is None:
        return []
    return [n for n in metadata_dtype.names if n not in SKIPPED_METADATA]


def _value_dtype(dt: np.dtype, name: str) -> str:
    if dt.shape:
        raise ConfigError(f"metadata field {name!r} is not a scalar", expected="scalar fields",
                          found=f"shape {dt.shape}")
    if dt.kind in "iuf":
        return np.dtype(dt.newbyteorder("=")).name
    if dt.kind == "b":
        return "bool"
    if dt.kind in "US":
        return "string"
    raise ConfigError(f"metadata field {name!r} has an unsupported type",
                      expected="integer, float, bool or string", found=str(dt))


# --------------------------------------------------------------------------- PNG
def encode_png(image: np.ndarray, compress_level: int = PNG_COMPRESS_LEVEL) -> bytes:
    """One grayscale PNG, reproducibly (Pillow, fixed zlib level, no ancillary chunks).

    Examples
    --------
    >>> encode_png(np.zeros((28, 28), np.uint8))[:8]
    b'\\x89PNG\\r\\n\\x1a\\n'
    """
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image), mode="L").save(
        buf, format="PNG", compress_level=compress_level, optimize=False)
    return buf.getvalue()


def _encode_chunk(images: np.ndarray, compress_level: int) -> tuple[bytes, np.ndarray]:
    blobs = [encode_png(a, compress_level) for a in images]
    sizes = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs))
    return b"".join(blobs), sizes


def encode_pngs(images: np.ndarray, *, workers: int | None = None,
                compress_level: int = PNG_COMPRESS_LEVEL, desc: str | None = None):
    """Encode N images to PNG; return ``(data, offsets)`` (all bytes, N+1 int64 offsets).

    Large batches are split over ``workers`` processes (default: every core);
    the result does not depend on the number of workers.
    """
    from ..progress import progress

    n = len(images)
    workers = workers or os.cpu_count() or 1
    starts = list(range(0, n, CHUNK))
    parts: list = [None] * len(starts)
    bar = progress(total=n, desc=desc or "PNG", unit="img")
    try:
        if workers > 1 and n >= PARALLEL_MIN:
            import multiprocessing as mp

            ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
            with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
                futs = {pool.submit(_encode_chunk, np.asarray(images[s:s + CHUNK]), compress_level): i
                        for i, s in enumerate(starts)}
                for fut in concurrent.futures.as_completed(futs):
                    parts[futs[fut]] = fut.result()
                    bar.update(len(parts[futs[fut]][1]))
        else:
            for i, s in enumerate(starts):
                parts[i] = _encode_chunk(np.asarray(images[s:s + CHUNK]), compress_level)
                bar.update(len(parts[i][1]))
    finally:
        bar.close()
    sizes = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return b"".join(p[0] for p in parts), offsets


_PNG_SIG = b"\x89PNG\r\n\x1a\n"


def _png_filtered(blob) -> tuple[int, int, bytes] | None:
    """(height, width, filtered scanlines) of an 8-bit grey non-interlaced PNG, else None."""
    blob = bytes(blob)
    if blob[:8] != _PNG_SIG or blob[12:16] != b"IHDR":
        return None
    w, h = int.from_bytes(blob[16:20], "big"), int.from_bytes(blob[20:24], "big")
    depth, ctype, interlace = blob[24], blob[25], blob[28]
    if depth != 8 or ctype != 0 or interlace != 0:
        return None
    pos, idat = 33, []
    while pos + 8 <= len(blob):
        length = int.from_bytes(blob[pos:pos + 4], "big")
        kind = blob[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat.append(blob[pos + 8:pos + 8 + length])
        elif kind == b"IEND":
            break
        elif kind in (b"PLTE", b"tRNS"):
            return None
        pos += 12 + length
    try:
        raw = zlib.decompress(b"".join(idat))
    except zlib.error:
        return None
    if len(raw) != h * (w + 1):
        return None
    return h, w, raw


def _unfilter(raw: np.ndarray) -> np.ndarray:
    """Undo PNG scanline filters for a batch: raw is N x H x (W+1) uint8 (1 byte per pixel)."""
    n, h, w1 = raw.shape
    w = w1 - 1
    ft = raw[:, :, 0]
    if ft.max(initial=0) > 4:
        raise FormatError("PNG: unknown scanline filter", expected="filter types 0..4",
                          found=f"type {int(ft.max())}")
    out = np.empty((n, h, w), np.uint8)
    zero = np.zeros((n, w), np.uint8)
    for r in range(h):
        cur = raw[:, r, 1:]
        prior = out[:, r - 1] if r else zero
        f = ft[:, r]
        row = cur.copy()
        m = f == 1
        if m.any():
            row[m] = np.cumsum(cur[m], axis=1, dtype=np.uint8)
        m = f == 2
        if m.any():
            row[m] = cur[m] + prior[m]
        for kind in (3, 4):
            m = np.flatnonzero(f == kind)
            if not len(m):
                continue
            c, b = cur[m].astype(np.int16), prior[m].astype(np.int16)
            res = np.empty_like(c)
            left = np.zeros(len(m), np.int16)
            upleft = np.zeros(len(m), np.int16)
            for j in range(w):
                if kind == 3:
                    pred = (left + b[:, j]) >> 1
                else:
                    a, bb = left, b[:, j]
                    p = a + bb - upleft
                    pa, pb, pc = np.abs(p - a), np.abs(p - bb), np.abs(p - upleft)
                    pred = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, bb, upleft))
                left = (c[:, j] + pred) & 0xFF
                res[:, j] = left
                upleft = b[:, j]
            row[m] = res.astype(np.uint8)
        out[:, r] = row
    return out


def decode_pngs(blobs, shape=None) -> np.ndarray:
    """Decode grayscale PNGs to an N x H x W uint8 array.

    8-bit grey PNGs (what :func:`encode_png` writes) take a vectorised path
    (zlib + batch un-filtering); anything else goes through Pillow.  Every
    image must have the same size.

    Examples
    --------
    >>> a = np.arange(784, dtype=np.uint8).reshape(28, 28)
    >>> bool((decode_pngs([encode_png(a)])[0] == a).all())
    True
    """
    from PIL import Image

    blobs = list(blobs)
    n = len(blobs)
    if n == 0:
        return np.zeros((0,) + tuple(shape or (28, 28)), np.uint8)
    parsed = [_png_filtered(b) for b in blobs]
    sizes = {(p[0], p[1]) for p in parsed if p is not None}
    hw = None
    if len(sizes) == 1:
        hw = sizes.pop()
    elif not sizes:
        first = Image.open(io.BytesIO(bytes(blobs[0])))
        hw = (first.height, first.width)
    else:
        raise FormatError("PNG images of different sizes", expected="one size",
                          found=", ".join(f"{h}x{w}" for h, w in sorted(sizes)))
    out = np.empty((n,) + hw, np.uint8)
    fast = np.array([p is not None and (p[0], p[1]) == hw for p in parsed])
    if fast.any():
        raw = np.frombuffer(b"".join(p[2] for p, ok in zip(parsed, fast) if ok), np.uint8)
        out[fast] = _unfilter(raw.reshape(-1, hw[0], hw[1] + 1))
    for i in np.flatnonzero(~fast):
        img = Image.open(io.BytesIO(bytes(blobs[i])))
        if img.mode != "L":
            img = img.convert("L")
        arr = np.asarray(img)
        if arr.shape != hw:
            raise FormatError(f"PNG image {i} has another size", expected=f"{hw[0]}x{hw[1]}",
                              found=f"{arr.shape[0]}x{arr.shape[1]}")
        out[i] = arr
    return out


# --------------------------------------------------------------------------- parquet
def _schema(features):
    """The parquet schema: exactly what ``datasets`` itself writes for ``features``.

    Its metadata holds only the feature definition (``{"info": {"features": ...}}``):
    no fingerprint, no timestamp.
    """
    schema = features.arrow_schema
    if list(schema.names[:2]) != ["image", "label"]:
        raise ConfigError("features must start with image and label", expected="image, label, ...",
                          found=", ".join(schema.names))
    return schema


def _table(schema, data: bytes, offsets: np.ndarray, labels, metadata, lo: int, hi: int):
    import pyarrow as pa

    n = hi - lo
    off = (offsets[lo:hi + 1] - offsets[lo]).astype(np.int32)
    chunk = memoryview(data)[offsets[lo]:offsets[hi]]
    png = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(off), pa.py_buffer(chunk)])
    image = pa.StructArray.from_arrays([png, pa.nulls(n, pa.string())], fields=list(schema.field("image").type))
    cols = [image, pa.array(np.asarray(labels[lo:hi], dtype=np.int64))]
    for f in list(schema)[2:]:
        col = metadata[f.name][lo:hi]
        if pa.types.is_string(f.type):
            cols.append(pa.array([str(v.decode() if isinstance(v, bytes) else v) for v in col], pa.string()))
        else:
            want = np.dtype(f.type.to_pandas_dtype())
            arr = np.asarray(col)
            if arr.dtype != want and len(arr) and not np.array_equal(arr.astype(want), arr):
                raise ConfigError(f"metadata column {f.name!r} does not fit its feature type",
                                  expected=str(want), found=f"{arr.dtype} values out of range")
            cols.append(pa.array(arr.astype(want)))
    return pa.Table.from_arrays(cols, schema=schema)


def shard_bounds(offsets: np.ndarray, max_shard_bytes: int = MAX_SHARD_BYTES) -> list[tuple[int, int]]:
    """Row ranges of the shards of one split: equal row counts, each under ``max_shard_bytes``.

    Examples
    --------
    >>> shard_bounds(np.arange(0, 1001, 100), max_shard_bytes=450)
    [(0, 3), (3, 7), (7, 10)]
    """
    n = len(offsets) - 1
    if n == 0:
        return [(0, 0)]
    count = max(1, math.ceil(int(offsets[-1]) / max_shard_bytes))
    while True:
        edges = np.linspace(0, n, min(count, n) + 1).round().astype(int)
        bounds = list(zip(edges[:-1].tolist(), edges[1:].tolist()))
        if count >= n or all(offsets[b] - offsets[a] <= max_shard_bytes for a, b in bounds):
            return bounds
        count += 1


def shard_name(split: str, index: int, count: int) -> str:
    """``train-00000-of-00003.parquet``."""
    return f"{split}-{index:05d}-of-{count:05d}.parquet"


def write_split(folder, config: str, split: str, data: SplitData, features, *,
                max_shard_bytes: int = MAX_SHARD_BYTES, workers: int | None = None) -> dict:
    """Write one split's shards under ``folder/data/<config>/``; return its summary."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    schema = _schema(features)
    missing = [f.name for f in list(schema)[2:]
               if data.metadata is None or f.name not in data.metadata.dtype.names]
    if missing:
        raise ConfigError(f"{config}/{split}: metadata lacks columns of the features",
                          expected=", ".join(missing), found="nothing")
    png, offsets = encode_pngs(data.images, workers=workers, desc=f"{config}/{split} PNG")
    bounds = shard_bounds(offsets, max_shard_bytes)
    files, num_bytes = [], 0
    for i, (lo, hi) in enumerate(bounds):
        rel = f"{DATA}/{config}/{shard_name(split, i, len(bounds))}"
        table = _table(schema, png, offsets, data.labels, data.metadata, lo, hi)
        num_bytes += table.nbytes
        with atomic_file(folder / rel) as f:
            pq.write_table(table, f, row_group_size=ROW_GROUP_SIZE, **PARQUET_OPTIONS)
        files.append(rel)
    size = sum((folder / f).stat().st_size for f in files)
    return {"name": split, "files": files, "num_examples": len(data.labels),
            "num_bytes": int(num_bytes), "download_size": int(size)}


# --------------------------------------------------------------------------- export
def export_hf(repo_dir, configs: list[ExportConfig], *, overwrite: bool = False,
              max_shard_bytes: int = MAX_SHARD_BYTES, workers: int | None = None,
              croissant: bool = True, repo_id: str | None = None, title: str | None = None) -> dict:
    """Write a Hub dataset repository folder holding ``configs``; return its summary.

    The folder is built under ``<repo_dir>.incomplete`` and renamed when
    complete.  The first config is the default one.

    Parameters
    ----------
    repo_dir : path
        Output folder (must not exist unless ``overwrite``).
    configs : list of ExportConfig
        One per dataset; names must be distinct.
    max_shard_bytes : int
        Largest shard (PNG bytes); splits are cut into equal-row shards below it.
    workers : int, optional
        Processes for PNG encoding (default: every core).
    croissant : bool
        Also write ``croissant.json``.
    repo_id : str, optional
        ``ORG/NAME`` the folder is meant for (used in the card's examples and URLs).

    Returns
    -------
    dict
        ``{"repo_dir": ..., "configs": [{"name", "splits": [{"name", "files",
        "num_examples", "num_bytes", "download_size"}], ...}]}``

    Examples
    --------
    >>> import tempfile, os
    >>> cfg = ExportConfig("toy", {"test": (np.zeros((2, 28, 28), np.uint8), np.array([1, 0]))}, ["x", "y"])
    >>> out = export_hf(os.path.join(tempfile.mkdtemp(), "r"), [cfg], workers=1)
    >>> out["configs"][0]["splits"][0]["files"]
    ['data/toy/test-00000-of-00001.parquet']
    """
    names = [c.name for c in configs]
    if not configs:
        raise ConfigError("nothing to export", expected="at least one dataset", found="none")
    if len(set(names)) != len(names):
        raise ConfigError("config names must be distinct", expected="one config per dataset",
                          found=", ".join(names),
                          hint="rename one with CONFIG=TARGET on the command line")
    repo_dir = Path(repo_dir)
    summary = {"repo_dir": str(repo_dir), "configs": []}
    with atomic_dir(repo_dir, overwrite=overwrite) as tmp:
        for cfg in configs:
            features, first_dt, shapes, splits = None, None, set(), []
            for s in cfg.splits:
                d = cfg.split_data(s)
                dt = d.metadata.dtype if d.metadata is not None else None
                if features is None:
                    features, first_dt = hf_features(cfg.classes, dt), dt
                elif dt != first_dt:
                    raise ConfigError(f"config {cfg.name!r}: every split needs the same metadata "
                                      "fields", expected=str(first_dt), found=f"{dt} in {s}")
                shapes.add(d.images.shape[1:])
                splits.append(write_split(tmp, cfg.name, s, d, features,
                                          max_shard_bytes=max_shard_bytes, workers=workers))
                del d
            summary["configs"].append({"config": cfg, "name": cfg.name, "features": features,
                                       "splits": splits, "image_shapes": sorted(shapes)})
        card = dataset_card(summary["configs"], repo_id=repo_id, title=title, folder=tmp)
        with atomic_file(tmp / CARD, "w") as f:
            f.write(card)
        if croissant:
            doc = croissant_metadata(summary["configs"], tmp, repo_id=repo_id, title=title)
            with atomic_file(tmp / CROISSANT, "w") as f:
                json.dump(doc, f, indent=2, ensure_ascii=False)
                f.write("\n")
    for c in summary["configs"]:
        del c["config"], c["features"]
    logger.info("exported %d config(s) to %s", len(configs), repo_dir)
    return summary


def hf_features(classes, metadata_dtype=None):
    """The features definition shared with the loaders' ``.to_hf()``.

    Uses ``mnistforge.loaders.hf_features`` when the loaders define it (one
    definition for the package), else :func:`features_for`.
    """
    try:
        from ..loaders import hf_features as theirs
    except ImportError:  # loaders absent: same rules, defined here
        return features_for(classes, metadata_dtype)
    from types import SimpleNamespace

    meta = None if metadata_dtype is None else np.zeros(0, dtype=metadata_dtype)
    return theirs(SimpleNamespace(classes=list(classes), metadata=meta))


# --------------------------------------------------------------------------- datasets -> configs
#: Hub licence identifiers of the official releases (the registry holds the prose).
HUB_LICENSES = {"mnist": "cc-by-sa-3.0", "fashion-mnist": "mit", "kmnist": "cc-by-sa-4.0",
                "qmnist": "bsd-3-clause"}
#: The Hub wants ``license_name`` as a slug (with ``license_link``) when ``license: other``.
NIST_LICENSE_NAME = "nist-sd19"
LICENSE_LINKS = {NIST_LICENSE_NAME: "https://www.nist.gov/srd/nist-special-database-19"}
LICENSE_TEXTS = {NIST_LICENSE_NAME: "NIST Special Database 19 terms: a work of the US Government, "
                                    "not subject to copyright in the US"}

BIBTEX = {
    "mnist": """@article{lecun1998gradient,
  title = {Gradient-based learning applied to document recognition},
  author = {LeCun, Yann and Bottou, L{\\'e}on and Bengio, Yoshua and Haffner, Patrick},
  journal = {Proceedings of the IEEE},
  volume = {86}, number = {11}, pages = {2278--2324}, year = {1998}
}""",
    "qmnist": """@incollection{yadav2019cold,
  title = {Cold Case: The Lost {MNIST} Digits},
  author = {Yadav, Chhavi and Bottou, L{\\'e}on},
  booktitle = {Advances in Neural Information Processing Systems 32},
  year = {2019}
}""",
    "emnist": """@article{cohen2017emnist,
  title = {{EMNIST}: an extension of {MNIST} to handwritten letters},
  author = {Cohen, Gregory and Afshar, Saeed and Tapson, Jonathan and van Schaik, Andr{\\'e}},
  journal = {arXiv preprint arXiv:1702.05373},
  year = {2017}
}""",
    "fashion-mnist": """@article{xiao2017fashion,
  title = {Fashion-{MNIST}: a Novel Image Dataset for Benchmarking Machine Learning Algorithms},
  author = {Xiao, Han and Rasul, Kashif and Vollgraf, Roland},
  journal = {arXiv preprint arXiv:1708.07747},
  year = {2017}
}""",
    "kmnist": """@article{clanuwat2018deep,
  title = {Deep Learning for Classical Japanese Literature},
  author = {Clanuwat, Tarin and Bober-Irizar, Mikel and Kitamoto, Asanobu and Lamb, Alex and Yamamoto, Kazuaki and Ha, David},
  journal = {arXiv preprint arXiv:1812.01718},
  year = {2018}
}""",
    "sd19": """@misc{grother2016sd19,
  title = {{NIST} Special Database 19: Handprinted Forms and Characters Database, 2nd edition},
  author = {Grother, Patrick J. and Hanaoka, Kayee K.},
  publisher = {National Institute of Standards and Technology},
  year = {2016}
}""",
}

#: Splits left out unless asked for by NAME:SPLIT: views duplicate rows of
#: another split (test10k, validation, ...) and qmnist's ``nist`` is all
#: 402,953 NIST digits, a different dataset in all but name.
OPT_IN_SPLITS = ("nist",)


def parse_target(text: str) -> tuple[str | None, str]:
    """Split ``[CONFIG=]TARGET[:SPLIT]`` into ``(config or None, rest)``.

    Examples
    --------
    >>> parse_target("rebuilt=build/mnist:test")
    ('rebuilt', 'build/mnist:test')
    >>> parse_target("qmnist")
    (None, 'qmnist')
    """
    head, sep, rest = text.partition("=")
    if sep and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", head) and rest:
        return head, rest
    return None, text


def _dataset_folder(root, name) -> Path | None:
    from ..loaders.sources import find_dataset_folder
    from ..registry import get_dataset

    return None if root is None else find_dataset_folder(root, get_dataset(name))


def _find_manifest(root, name) -> tuple[dict | None, Path | None]:
    from ..outputs import read_manifest

    if root is None:
        return None, None
    for folder in (_dataset_folder(root, name), Path(root), Path(root) / name):
        if folder is None:
            continue
        m = read_manifest(folder)
        if m is not None:
            return m, folder
    return None, None


def _split_files_present(info, split: str, root) -> bool:
    from ..loaders.sources import locate

    sp = info.file_split(split)
    folder = _dataset_folder(root, info.name)
    return bool(sp.images and folder is not None and locate(folder, sp.images))


def default_splits(name: str, root=None) -> list[str]:
    """Splits exported when a target names no split.

    Every split stored in files (not the views ``test10k``, ``validation``...),
    except :data:`OPT_IN_SPLITS`; for a folder, only those whose files are
    there.  An exported repository folder gives the splits it holds.
    """
    if root is not None and is_hf_repo(root, name):
        return [s for s in repo_configs(root).get(name, {})]
    from ..registry import get_dataset

    info = get_dataset(name)
    splits = [s for s, sp in info.splits.items() if not sp.is_view]
    if root is None:
        return [s for s in splits if s not in OPT_IN_SPLITS]
    present = [s for s in splits if _split_files_present(info, s, root)]
    return present


def _official_provenance(info, splits) -> dict:
    from ..registry import get_file

    files = {}
    for split in splits:
        sp = info.file_split(split)
        for fname in (sp.images, sp.labels, sp.metadata):
            if not fname or fname in files:
                continue
            try:
                rf = get_file(f"{info.group}/{fname}")
            except MnistforgeError:
                continue
            entry = {}
            for key in ("sha256", "size", "md5", "content_sha256", "archive"):
                v = getattr(rf, key)
                if v:
                    entry[key] = v
            if rf.urls:
                entry["url"] = rf.urls[0]
            if rf.archive:
                try:
                    arc = get_file(rf.archive)
                    entry["archive_sha256"] = arc.sha256
                except MnistforgeError:
                    pass
            files[fname] = entry
    return files


def _caveats(info, params: dict, built: bool) -> list[str]:
    name = info.name
    out = []
    if name.startswith("emnist"):
        stored = params.get("orientation", "official") if built else "official"
        out.append("Orientation fixed: images here are upright. The official EMNIST idx files store "
                   "them transposed (MATLAB column-major)"
                   + (" and so did the build folder this was exported from" if stored == "official" else "")
                   + "; the loader flipped them once, so do not transpose again.")
        if name == "emnist-letters":
            if params.get("letters_variant", "official") == "paper37":
                out.append("This is the EMNIST paper's letters variant (37 classes, 2,400/400 per class), "
                           "not the official 26-class release.")
            else:
                out.append("Letters labels are 1..26 as in the official files; label 0 ('N/A (unused)') "
                           "never occurs. Each class holds both cases of its letter.")
                out.append("The EMNIST paper's table describes a different, earlier letters set "
                           "(37 classes, 88,800/14,800 images); this config is the official 26-class "
                           "release (`mnistforge build emnist-letters --letters-variant paper37` makes "
                           "the paper's).")
        if params.get("split_by") == "writer":
            out.append("Train/test are writer-disjoint (no writer on both sides), unlike the official "
                       "random split: scores are not comparable with published EMNIST results.")
        else:
            out.append("Train and test mix NIST's census and high-school writers with a random split "
                       "(not writer-disjoint), as in the official release: the same writer appears on "
                       "both sides.")
        if info.validation_size:
            out.append(f"The validation portion ({info.validation_size:,} images) is the last part of "
                       "train: do not train on `train` and validate on `validation`; use "
                       "`train_without_validation`.")
    if name == "qmnist":
        out.append("The first 10,000 test images are MNIST's test set (`test10k`); the other 50,000 "
                   "(`test50k`) were never published with MNIST.")
        out.append("`duplicate` is the NIST index of an earlier identical image (else 0); `nist_index` "
                   "is the row in the `nist` split (all 402,953 SD19 digits).")
    if name == "mnist" and built:
        out.append("Rebuilt from NIST SD19 (QMNIST train + the first 10,000 of QMNIST test): images "
                   "differ slightly from the original MNIST bytes (see the QMNIST paper).")
    return out


def config_from_dataset(name: str, splits: dict, classes, *, root=None, config_name=None,
                        built_manifest: dict | None = None) -> ExportConfig:
    """An :class:`ExportConfig` for registry dataset ``name`` with arrays in ``splits``.

    ``splits`` maps split names to :class:`SplitData` (or tuples).  Provenance
    comes from ``built_manifest`` (a build folder's manifest.json) or, for the
    official files, from the registry (sha256, size, md5 and URL of each file).
    """
    from .. import __version__
    from ..registry import get_dataset

    info = get_dataset(name)
    built = built_manifest is not None
    params = dict((built_manifest or {}).get("parameters") or {})
    prov: dict = {}
    if built:
        m = built_manifest
        source = (f"built from NIST SD19 by mnistforge {m.get('version', '?')} "
                  f"(`mnistforge build`, manifest kind `{m.get('kind', '?')}`), loaded from "
                  f"`{Path(root).name if root else '?'}`.")
        prov["build"] = {"mnistforge_version": m.get("version"), "python": m.get("python"),
                         "kind": m.get("kind")}
        if params:
            prov["parameters"] = params
        if m.get("inputs"):
            prov["inputs"] = m["inputs"]
        # The build folder's files (the idx files this config was read from, among others).
        used = {rel: (out.get("sha256") if isinstance(out, dict) else out)
                for rel, out in sorted((m.get("outputs") or {}).items())}
        if used:
            prov["build_outputs_sha256"] = used
        if m.get("notes"):
            prov["notes"] = m["notes"]
        license_id, license_name = "other", NIST_LICENSE_NAME
        cites = [BIBTEX.get(info.group, ""), BIBTEX["sd19"]]
    elif root is not None and is_hf_repo(root, name):
        source = (f"re-exported from an earlier mnistforge export (`{Path(root).name}`); that "
                  "folder's README.md holds the original provenance.")
        prov["source_card_sha256"] = sha256_file(Path(root) / CARD)
        prov["source_shards_sha256"] = {
            rel: sha256_file(Path(root) / rel)
            for rel in sorted({f for fs in repo_configs(root).get(name, {}).values() for f in fs})}
        header = read_card(root)
        license_id = header.get("license") if isinstance(header.get("license"), str) else "other"
        license_name = header.get("license_name") if license_id == "other" else None
        cites = [BIBTEX.get(info.group, "")]
    else:
        source = (f"official release files ({info.homepage or info.title}), fetched and verified "
                  f"against the mnistforge registry.")
        prov["source_files"] = _official_provenance(info, splits)
        license_id = HUB_LICENSES.get(info.group, "other")
        license_name = None if license_id != "other" else NIST_LICENSE_NAME
        cites = [BIBTEX.get(info.group, "")]
    prov["exported_by"] = f"mnistforge {__version__}"
    cite = "\n\n".join(c for c in cites if c) or info.citation
    description = info.description
    if built:
        description = (f"{info.title}, rebuilt from NIST SD19 by mnistforge (sizes as built: see "
                       f"the splits above). The official release it reproduces: {info.description}")
    if info.licence:
        description += f"\n\nLicence of the source: {info.licence}"
    return ExportConfig(
        name=config_name or name, splits=splits, classes=list(classes), description=description,
        source=source, provenance=prov, license=license_id, license_name=license_name,
        citation=cite, label_note=info.class_note or None, caveats=_caveats(info, params, built),
        pretty_name=info.title)


def _split_of(ds) -> SplitData:
    return SplitData(np.asarray(ds.images), np.asarray(ds.labels),
                     None if ds.metadata is None else np.asarray(ds.metadata))


def _load_split(name, split, root, download) -> SplitData:
    from ..loaders import load

    return _split_of(load(name, split, root=root, download=download, with_metadata=True))


def configs_from_targets(targets, *, download: bool = True) -> list[ExportConfig]:
    """Load ``[CONFIG=]TARGET[:SPLIT]`` targets into export configs.

    TARGET is a dataset name or a folder (official or built files, or an
    exported repository), as everywhere on the command line
    (:func:`mnistforge.loaders.resolve_target`).  Targets naming the same
    dataset and folder merge into one config (``mnist:train mnist:test``);
    ``CONFIG=`` renames a config (to export the official and a rebuilt MNIST
    side by side).  Without ``:SPLIT`` the :func:`default_splits` are taken.
    """
    from ..loaders import datasets_in_folder, load, resolve_target

    resolved = []
    for text in targets:
        config, rest = parse_target(str(text))
        if os.path.isdir(rest) and not is_hf_repo(rest):
            names = datasets_in_folder(rest)
            if len(names) > 1:  # a build folder holding several datasets: one config each
                if config:
                    raise ConfigError(f"{rest} holds several datasets; CONFIG= needs one",
                                      expected="FOLDER:NAME with CONFIG=", found=", ".join(names))
                resolved += [(None, (n, None, Path(rest))) for n in names]
                continue
        resolved.append((config, resolve_target(rest)))
    groups: dict = {}
    for config, (name, split, root) in resolved:
        config = config or name
        g = groups.setdefault(config, {"name": name, "root": root, "splits": []})
        if g["name"] != name or str(g["root"]) != str(root):
            raise ConfigError(
                f"two different datasets would both be config {config!r}",
                expected="one dataset per config name",
                found=f"{g['name']} from {g['root'] or 'the cache'} and {name} from {root or 'the cache'}",
                hint="name one with CONFIG=TARGET, e.g. rebuilt=build/mnist")
        for s in ([split] if split else default_splits(name, root)):
            if s not in g["splits"]:
                g["splits"].append(s)
    out = []
    for config, g in groups.items():
        if not g["splits"]:
            raise MissingFileError(f"no split of {g['name']} found", path=g["root"],
                                   expected="idx files named like the official ones",
                                   found="none", hint="name a split with NAME:SPLIT")
        manifest, _ = _find_manifest(g["root"], g["name"])
        # The first split is loaded now (its classes name the labels), the others when written.
        first = load(g["name"], g["splits"][0], root=g["root"], download=download,
                     with_metadata=True)
        data = {g["splits"][0]: _split_of(first)}
        for s in g["splits"][1:]:
            data[s] = functools.partial(_load_split, g["name"], s, g["root"], download)
        out.append(config_from_dataset(g["name"], data, first.classes, root=g["root"],
                                       config_name=config, built_manifest=manifest))
    return out


# --------------------------------------------------------------------------- card
def _software_versions() -> dict:
    import PIL
    import pyarrow

    from .. import __version__
    return {"mnistforge": __version__, "pillow": PIL.__version__, "pyarrow": pyarrow.__version__,
            "zlib": zlib.ZLIB_VERSION, "numpy": np.__version__}


def _size_category(n: int) -> str:
    for lim, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                      (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")):
        if n < lim:
            return name
    return "10M<n<100M"


def _shapes_text(configs) -> str:
    shapes = sorted({tuple(sh) for c in configs for sh in c.get("image_shapes", [(28, 28)])})
    return " or ".join(f"{h}x{w}" for h, w in shapes)


def card_header(configs: list[dict]) -> dict:
    """The YAML header of the dataset card, as a dict (see :func:`dataset_card`)."""
    licenses = sorted({c["config"].license or DEFAULT_LICENSE for c in configs})
    total = sum(s["num_examples"] for c in configs for s in c["splits"])
    header: dict = {
        "pretty_name": None,
        "license": licenses[0] if len(licenses) == 1 else licenses,
    }
    other = sorted({c["config"].license_name for c in configs
                    if (c["config"].license or DEFAULT_LICENSE) == "other" and c["config"].license_name})
    if other:
        header["license_name"] = other[0] if len(other) == 1 else "-and-".join(other)
        if len(other) == 1 and other[0] in LICENSE_LINKS:
            header["license_link"] = LICENSE_LINKS[other[0]]
    header.update({
        "task_categories": ["image-classification"],
        "size_categories": [_size_category(total)],
        "tags": ["mnist", "handwriting", "nist", "mnistforge"],
        "configs": [],
        "dataset_info": [],
    })
    for i, c in enumerate(configs):
        entry = {"config_name": c["name"],
                 "data_files": [{"split": s["name"], "path": list(s["files"])} for s in c["splits"]]}
        if i == 0:
            entry["default"] = True
        header["configs"].append(entry)
        header["dataset_info"].append({
            "config_name": c["name"],
            "features": c["features"]._to_yaml_list(),
            "splits": [{"name": s["name"], "num_bytes": s["num_bytes"],
                        "num_examples": s["num_examples"]} for s in c["splits"]],
            "download_size": sum(s["download_size"] for s in c["splits"]),
            "dataset_size": sum(s["num_bytes"] for s in c["splits"]),
        })
    cites = []
    for c in configs:
        cite = (c["config"].citation or "").strip()
        if cite and cite not in cites:
            cites.append(cite)
    if cites:
        header["citations"] = cites
    return header


def _yaml(obj) -> str:
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def _str(dumper, data):  # multi-line strings (BibTeX) as literal blocks
        style = "|" if "\n" in data else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    _Dumper.add_representer(str, _str)
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000,
                     default_flow_style=False)


def _render_value(v, indent: int = 0) -> list[str]:
    pad = "  " * indent
    lines = []
    if isinstance(v, dict):
        for k in v:
            item = v[k]
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}- `{k}`:")
                lines += _render_value(item, indent + 1)
            else:
                lines.append(f"{pad}- `{k}`: {_inline(item)}")
    elif isinstance(v, list):
        for item in v:
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}-")
                lines += _render_value(item, indent + 1)
            else:
                lines.append(f"{pad}- {_inline(item)}")
    else:
        lines.append(f"{pad}- {_inline(v)}")
    return lines


def _inline(v) -> str:
    if isinstance(v, str) and re.fullmatch(r"[0-9a-f]{32,64}", v):
        return f"`{v}`"
    if isinstance(v, (dict, list)):
        return "`" + json.dumps(v, sort_keys=True) + "`"
    return str(v)


def _label_table(classes: list[str], note: str | None) -> list[str]:
    lines = []
    if note:
        lines.append(note)
        lines.append("")
    shown = ", ".join(f"{i} = `{c}`" for i, c in enumerate(classes))
    lines.append(f"Labels ({len(classes)} classes): {shown}.")
    return lines


def dataset_card(configs: list[dict], *, repo_id: str | None = None, title: str | None = None,
                 folder=None) -> str:
    """Render README.md: YAML header then the human description.

    ``configs`` are the per-config summaries built by :func:`export_hf`
    (``config``, ``name``, ``features``, ``splits``).
    """
    header = card_header(configs)
    title = title or (configs[0]["config"].pretty_name if len(configs) == 1 else None) \
        or ("MNIST family: " + ", ".join(c["name"] for c in configs))
    header["pretty_name"] = title
    where = repo_id or "REPO_DIR"
    first = configs[0]
    first_split = first["splits"][0]["name"]
    versions = _software_versions()
    out = ["---", _yaml(header).rstrip("\n"), "---", "", f"# {title}", ""]
    out += [
        "Handwritten-character datasets of the MNIST family, exported by "
        f"[mnistforge](https://pypi.org/project/mnistforge/) {versions['mnistforge']} "
        "as parquet files that load with the standard `datasets` API (no loading script).",
        "",
        f"Every row holds `image` (a {_shapes_text(configs)} grayscale PNG, **upright**, ink high: 255 = ink, "
        "0 = background), `label` (a `ClassLabel` whose names are the real characters) and, "
        "where the source knows them, metadata columns tracing the image back to NIST.",
        "",
        "| config | split | rows | shards | columns |",
        "|---|---|---|---|---|",
    ]
    for c in configs:
        cols = ", ".join(f"`{k}`" for k in c["features"])
        for s in c["splits"]:
            out.append(f"| `{c['name']}` | `{s['name']}` | {s['num_examples']:,} | "
                       f"{len(s['files'])} | {cols} |")
    out += [
        "",
        "## Usage",
        "",
        "```python",
        "from datasets import load_dataset",
        f"ds = load_dataset({where!r}, {first['name']!r}, split={first_split!r})",
        "ds[0]['image'], ds.features['label'].int2str(ds[0]['label'])",
        "",
        "import mnistforge  # same data as NumPy arrays, from a local copy of this folder",
        f"d = mnistforge.load({first['name']!r}, {first_split!r}, root='REPO_DIR')",
        "d.images.shape, d.labels[:10], d.classes",
        "```",
        "",
        "Split names use `_` where mnistforge uses `-` (the Hub only accepts `\\w+` split names): "
        "`train_without_validation` is mnistforge's `train-without-validation`.",
        "",
    ]
    for c in configs:
        cfg: ExportConfig = c["config"]
        out += [f"## Config `{cfg.name}`", ""]
        if cfg.description:
            out += [cfg.description.strip(), ""]
        out += ["### Labels", ""] + _label_table(cfg.classes, cfg.label_note) + [""]
        meta_cols = [k for k in c["features"] if k not in ("image", "label")]
        if meta_cols:
            out += ["### Metadata columns", "",
                    ", ".join(f"`{k}` ({c['features'][k].dtype})" for k in meta_cols)
                    + ": one value per image, as `mnistforge.load(..., with_metadata=True)` "
                      "exposes them.", ""]
        out += ["### Provenance", ""]
        if cfg.source:
            out += [f"Source: {cfg.source}", ""]
        prov = dict(cfg.provenance)
        prov.setdefault("exported_by", f"mnistforge {versions['mnistforge']}")
        out += _render_value(prov) + [""]
        out += ["Shards (sha256):", ""]
        for s in c["splits"]:
            for rel in s["files"]:
                digest = sha256_file(Path(folder) / rel) if folder is not None else "?"
                out.append(f"- `{rel}`: `{digest}`")
        out.append("")
        if cfg.caveats:
            out += ["### Caveats", ""] + [f"- {x}" for x in cfg.caveats] + [""]
    out += [
        "## Reproducibility",
        "",
        "PNG images are encoded by Pillow at zlib level "
        f"{PNG_COMPRESS_LEVEL} with no ancillary chunks (no timestamps); parquet files are written "
        f"by pyarrow ({', '.join(f'{k}={v}' for k, v in PARQUET_OPTIONS.items())}, "
        f"{ROW_GROUP_SIZE} rows per row group) with only the feature definition as schema "
        "metadata. Re-exporting the same data with the same software gives byte-identical files. "
        "Software used: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".",
        "",
        "## Licence",
        "",
    ]
    for c in configs:
        cfg = c["config"]
        lic = cfg.license or DEFAULT_LICENSE
        name = f" (`{cfg.license_name}`: {LICENSE_TEXTS.get(cfg.license_name, cfg.license_name)})" \
            if cfg.license_name else ""
        out.append(f"- `{cfg.name}`: `{lic}`{name}")
    out += ["", "## Citation", ""]
    cites = header.get("citations") or []
    if cites:
        for cite in cites:
            out += ["```bibtex", cite, "```", ""]
    else:
        out += ["No citation recorded for these configs.", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def read_card(repo_dir) -> dict:
    """Parse the YAML header of ``repo_dir/README.md``.

    Raises :class:`MissingFileError` when there is no card and
    :class:`FormatError` when the header is missing or malformed.
    """
    import yaml

    path = Path(repo_dir) / CARD
    if not path.is_file():
        raise MissingFileError("no dataset card", path=path, expected="README.md with a YAML header",
                               found="nothing", hint="export the folder with `mnistforge export hf`")
    text = path.read_text(encoding="utf-8")
    m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    if not m:
        raise FormatError("dataset card without YAML header", path=path,
                          expected="a '---' delimited YAML block at the top", found=text[:40])
    try:
        header = yaml.safe_load(m.group(1))
    except yaml.YAMLError as e:
        raise FormatError("dataset card YAML does not parse", path=path, expected="valid YAML",
                          found=str(e).splitlines()[0]) from e
    if not isinstance(header, dict):
        raise FormatError("dataset card YAML is not a mapping", path=path, expected="a mapping",
                          found=type(header).__name__)
    return header


# --------------------------------------------------------------------------- croissant
CROISSANT_CONTEXT = {
    "@language": "en", "@vocab": "https://schema.org/", "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/", "citeAs": "cr:citeAs", "column": "cr:column",
    "conformsTo": "dct:conformsTo", "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "examples": {"@id": "cr:examples", "@type": "@json"}, "extract": "cr:extract",
    "field": "cr:field", "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet", "format": "cr:format", "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath", "key": "cr:key",
    "md5": "cr:md5", "parentField": "cr:parentField", "path": "cr:path",
    "recordSet": "cr:recordSet", "references": "cr:references", "regex": "cr:regex",
    "repeated": "cr:repeated", "replace": "cr:replace", "separator": "cr:separator",
    "source": "cr:source", "subField": "cr:subField", "transform": "cr:transform",
}
_CROISSANT_TYPES = {"int8": "sc:Integer", "int16": "sc:Integer", "int32": "sc:Integer",
                    "int64": "sc:Integer", "uint8": "sc:Integer", "uint16": "sc:Integer",
                    "uint32": "sc:Integer", "uint64": "sc:Integer", "float32": "sc:Float",
                    "float64": "sc:Float", "bool": "sc:Boolean", "string": "sc:Text"}


def croissant_metadata(configs: list[dict], folder, *, repo_id: str | None = None,
                       title: str | None = None) -> dict:
    """A Croissant 1.0 JSON-LD document describing the same configs, splits and columns.

    One ``cr:FileObject`` per shard (with its sha256), one ``cr:FileSet`` and
    one ``cr:RecordSet`` per config; the split of a record comes from its
    shard's file name.
    """
    from .. import __version__

    folder = Path(folder)
    licenses = sorted({c["config"].license or DEFAULT_LICENSE for c in configs})
    cites = [c["config"].citation.strip() for c in configs if c["config"].citation]
    url = f"https://huggingface.co/datasets/{repo_id}" if repo_id else None
    doc = {
        "@context": CROISSANT_CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "name": title or (repo_id or "mnistforge-export").replace("/", "-"),
        "description": "MNIST-family datasets exported by mnistforge: "
                       + ", ".join(c["name"] for c in configs) + ".",
        "license": licenses[0] if len(licenses) == 1 else licenses,
        "version": __version__,
        "distribution": [],
        "recordSet": [],
    }
    if url:
        doc["url"] = url
    if cites:
        doc["citeAs"] = "\n\n".join(dict.fromkeys(cites))
    for c in configs:
        name = c["name"]
        for s in c["splits"]:
            for rel in s["files"]:
                doc["distribution"].append({
                    "@type": "cr:FileObject", "@id": rel, "name": rel, "contentUrl": rel,
                    "encodingFormat": "application/x-parquet",
                    "contentSize": f"{(folder / rel).stat().st_size} B",
                    "sha256": sha256_file(folder / rel),
                })
        fs_id = f"parquet-files-for-config-{name}"
        doc["distribution"].append({
            "@type": "cr:FileSet", "@id": fs_id, "name": fs_id,
            "encodingFormat": "application/x-parquet", "includes": f"{DATA}/{name}/*.parquet",
        })

        def col(field_name, dtype, extract, transform=None, description=None):
            src = {"fileSet": {"@id": fs_id}, "extract": extract}
            if transform:
                src["transform"] = transform
            out = {"@type": "cr:Field", "@id": f"{name}/{field_name}", "name": f"{name}/{field_name}",
                   "dataType": dtype, "source": src}
            if description:
                out["description"] = description
            return out

        fields = [
            col("split", "sc:Text", {"fileProperty": "filename"},
                {"regex": r"^(\w+)-\d{5}-of-\d{5}\.parquet$"}, "split of the record"),
            col("image", "sc:ImageObject", {"column": "image"}, {"jsonPath": "bytes"},
                "28x28 grayscale PNG, upright, ink high"),
            col("label", "sc:Integer", {"column": "label"}, None,
                "class index; names: " + json.dumps(c["config"].classes, ensure_ascii=False)),
        ]
        for k, feat in c["features"].items():
            if k not in ("image", "label"):
                fields.append(col(k, _CROISSANT_TYPES.get(feat.dtype, "sc:Text"), {"column": k}))
        doc["recordSet"].append({"@type": "cr:RecordSet", "@id": name, "name": name,
                                 "description": c["config"].description or name, "field": fields})
    return doc


# --------------------------------------------------------------------------- reading back
def is_hf_repo(root, config: str | None = None) -> bool:
    """True when ``root`` looks like an exported repository (README.md + data/<config>/).

    Examples
    --------
    >>> is_hf_repo("/nonexistent")
    False
    """
    root = Path(root)
    if not (root / CARD).is_file() or not (root / DATA).is_dir():
        return False
    if config is None:
        return any(p.is_dir() for p in (root / DATA).iterdir())
    return (root / DATA / config).is_dir()


def repo_configs(repo_dir) -> dict[str, dict[str, list[str]]]:
    """``{config: {split: [shard paths relative to repo_dir]}}`` as the card declares them."""
    header = read_card(repo_dir)
    out: dict = {}
    for entry in header.get("configs") or []:
        splits = {}
        files = entry.get("data_files") or []
        if isinstance(files, (str, list)) and not (files and isinstance(files[0], dict)):
            files = [{"split": "train", "path": files}]
        for df in files:
            paths = df["path"] if isinstance(df["path"], list) else [df["path"]]
            splits[str(df["split"])] = [str(p) for p in paths]
        out[str(entry["config_name"])] = splits
    return out


def _shards(repo_dir, config: str, split: str) -> list[Path]:
    repo_dir = Path(repo_dir)
    configs = repo_configs(repo_dir)
    if config not in configs:
        from ..errors import DatasetNotFoundError
        raise DatasetNotFoundError(f"config {config!r} not in this repository", path=repo_dir / CARD,
                                   expected="one of " + ", ".join(configs), found=config)
    splits = configs[config]
    name = hf_split_name(split)
    if name not in splits:
        from ..errors import DatasetNotFoundError
        raise DatasetNotFoundError(f"split {split!r} not in config {config!r}", path=repo_dir / CARD,
                                   expected="one of " + ", ".join(splits), found=split)
    paths = []
    for pattern in splits[name]:
        hits = sorted(repo_dir.glob(pattern)) if any(ch in pattern for ch in "*?[") \
            else [repo_dir / pattern]
        for p in hits:
            if not p.is_file():
                raise MissingFileError("shard listed in the card is missing", path=p,
                                       expected="a parquet file", found="nothing",
                                       hint="re-export the repository")
            paths.append(p)
    if not paths:
        raise MissingFileError(f"no shard for {config}/{split}", path=repo_dir,
                               expected=f"files matching {splits[name]}", found="none")
    return paths


def read_split_table(repo_dir, config: str, split: str):
    """The split as one pyarrow Table (all shards, in order)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for p in _shards(repo_dir, config, split):
        try:
            tables.append(pq.read_table(p))
        except (pa.ArrowInvalid, OSError) as e:
            raise FormatError("unreadable parquet shard", path=p, expected="a parquet file",
                              found=str(e)) from e
    schema = tables[0].schema
    for p, t in zip(_shards(repo_dir, config, split), tables):
        if not t.schema.equals(schema, check_metadata=False):
            raise FormatError("shards of one split disagree on their columns", path=p,
                              expected=str(schema), found=str(t.schema))
    return pa.concat_tables(tables)


def _features_of(table, repo_dir, config):
    import datasets

    meta = table.schema.metadata or {}
    if b"huggingface" in meta:
        info = json.loads(meta[b"huggingface"])
        return datasets.Features.from_dict(info["info"]["features"])
    for entry in read_card(repo_dir).get("dataset_info") or []:
        if entry.get("config_name") == config:
            return datasets.Features._from_yaml_list(entry["features"])
    raise FormatError("no feature definition for this config", path=Path(repo_dir) / CARD,
                      expected="huggingface schema metadata or dataset_info", found="neither")


def load_hf_split(repo_dir, config: str, split: str):
    """Load one split of an exported repository as NumPy arrays.

    Returns ``(images, labels, classes, metadata)``: uint8 N x 28 x 28 upright
    images, int64 labels, the ClassLabel names, and a structured array of the
    metadata columns (``None`` when there are none).  ``split`` may use ``-``
    or ``_``.  This is what ``mnistforge.load(config, split, root=repo_dir)``
    runs on such a folder.

    Examples
    --------
    >>> images, labels, classes, meta = load_hf_split("hf-repo", "qmnist", "test")  # doctest: +SKIP
    """
    import pyarrow as pa

    table = read_split_table(repo_dir, config, split)
    features = _features_of(table, repo_dir, config)
    for col in ("image", "label"):
        if col not in table.column_names:
            raise FormatError(f"column {col!r} missing", path=Path(repo_dir) / DATA / config,
                              expected="image and label columns", found=", ".join(table.column_names))
    image = table.column("image").combine_chunks()
    png = image.field("bytes") if pa.types.is_struct(image.type) else image
    images = decode_pngs(png.to_pylist())
    labels = table.column("label").to_numpy().astype(np.int64)
    label_feat = features["label"]
    classes = list(getattr(label_feat, "names", None) or [])
    metadata = None
    extra = [c for c in table.column_names if c not in ("image", "label")]
    if extra:
        cols = {c: table.column(c).to_numpy(zero_copy_only=False) for c in extra}
        dtype = []
        for c, v in cols.items():
            dt = v.dtype if v.dtype != object else np.dtype(f"U{max((len(str(x)) for x in v), default=1)}")
            dtype.append((c, dt))
        metadata = np.empty(len(labels), dtype=dtype)
        for c, v in cols.items():
            metadata[c] = v
    return images, labels, classes, metadata


def load_split_from_repo(repo_dir, name: str, split: str, *, with_metadata: bool = False):
    """``mnistforge.load(name, split, root=repo_dir)`` on an exported repository.

    Returns a :class:`mnistforge.loaders.DatasetSplit` equal to what the idx
    files give: same images, labels and classes; with ``with_metadata`` the
    registry's metadata fields in registry order (QMNIST's ``label`` column,
    not stored twice in the export, is restored from the labels).
    """
    from ..loaders.core import DatasetSplit
    from ..registry import DatasetInfo, get_dataset

    images, labels, classes, meta = load_hf_split(repo_dir, name, split)
    try:
        info = get_dataset(name)
        split_name = next((s for s in info.splits if hf_split_name(s) == hf_split_name(split)), split)
    except MnistforgeError:  # a config renamed at export (CONFIG=TARGET)
        info = DatasetInfo(name=name, group=name, title=name, kind="dataset",
                           description=f"config {name} of {repo_dir}", homepage="", licence="",
                           citation="", classes=tuple(classes))
        split_name = split
    metadata = None
    if with_metadata and meta is not None:
        fields = list(info.metadata_fields) or list(meta.dtype.names)
        if "label" in fields and "label" not in meta.dtype.names:
            cols = {"label": labels.astype(np.int32)}
        else:
            cols = {}
        cols.update({f: meta[f] for f in meta.dtype.names})
        order = [f for f in fields if f in cols] + [f for f in cols if f not in fields]
        metadata = np.empty(len(labels), dtype=[(f, cols[f].dtype) for f in order])
        for f in order:
            metadata[f] = cols[f]
    ds = DatasetSplit(name, split_name, images, labels, info, metadata,
                      source=f"hf repository {repo_dir}", status={}, orientation="upright")
    ds.classes = list(classes)
    return ds


# --------------------------------------------------------------------------- checks
def verify_repo(repo_dir, *, with_datasets: bool = True, decode: bool = True) -> dict:
    """Check an exported folder before it is shared; return ``{config: {split: rows}}``.

    Checks: the card's YAML parses; every config declared in ``configs`` has a
    ``dataset_info`` entry and vice versa; every listed shard exists; row
    counts match ``num_examples``; the parquet features match the card's;
    labels are within the ClassLabel range; (``decode``) every image decodes
    to the same size; (``with_datasets``) ``datasets.load_dataset`` loads each
    split offline, in a throw-away cache, with the declared counts and features.
    Raises :class:`~mnistforge.errors.CheckFailed` listing every problem.
    """
    import datasets
    import pyarrow.parquet as pq

    repo_dir = Path(repo_dir)
    header = read_card(repo_dir)
    problems: list[str] = []
    configs = repo_configs(repo_dir)
    infos = {e.get("config_name"): e for e in header.get("dataset_info") or []}
    if set(infos) != set(configs):
        problems.append(f"configs {sorted(configs)} and dataset_info {sorted(infos)} differ")
    counts: dict = {}
    for config, splits in configs.items():
        info = infos.get(config) or {}
        declared = {s["name"]: s["num_examples"] for s in info.get("splits") or []}
        if set(declared) != set(splits):
            problems.append(f"{config}: data_files splits {sorted(splits)} but dataset_info "
                            f"splits {sorted(declared)}")
        try:
            card_features = datasets.Features._from_yaml_list(info["features"])
        except Exception as e:  # noqa: BLE001 - report any malformed entry
            problems.append(f"{config}: dataset_info features unreadable ({e})")
            card_features = None
        for split in splits:
            try:
                shards = _shards(repo_dir, config, split)
            except MnistforgeError as e:
                problems.append(str(e))
                continue
            rows = 0
            for p in shards:
                pf = pq.ParquetFile(p)
                rows += pf.metadata.num_rows
                feats = _features_of(pf.schema_arrow.empty_table(), repo_dir, config)
                if card_features is not None and feats != card_features:
                    problems.append(f"{p}: parquet features differ from the card's")
            counts.setdefault(config, {})[split] = rows
            if split in declared and declared[split] != rows:
                problems.append(f"{config}/{split}: card says {declared[split]} rows, "
                                f"shards hold {rows}")
            if decode and not problems:
                images, labels, classes, _ = load_hf_split(repo_dir, config, split)
                if len(labels) and (labels.min() < 0 or labels.max() >= len(classes)):
                    problems.append(f"{config}/{split}: labels outside 0..{len(classes) - 1}")
    if with_datasets and not problems:
        problems += _check_with_datasets(repo_dir, configs, counts, infos)
    if problems:
        raise CheckFailed(f"{repo_dir}: the exported repository failed its checks:\n  - "
                          + "\n  - ".join(problems))
    return counts


def _check_with_datasets(repo_dir, configs, counts, infos) -> list[str]:
    import datasets

    problems = []
    cache = tempfile.mkdtemp(prefix="mnistforge-hf-check-")
    try:
        for config, splits in configs.items():
            want = datasets.Features._from_yaml_list(infos[config]["features"])
            for split in splits:
                try:
                    ds = datasets.load_dataset(str(repo_dir), config, split=split, cache_dir=cache)
                except Exception as e:  # noqa: BLE001 - any failure of the standard API is a finding
                    problems.append(f"datasets.load_dataset({config!r}, split={split!r}) failed: "
                                    f"{type(e).__name__}: {e}")
                    continue
                if ds.num_rows != counts[config][split]:
                    problems.append(f"{config}/{split}: datasets loads {ds.num_rows} rows, "
                                    f"expected {counts[config][split]}")
                if ds.features != want:
                    problems.append(f"{config}/{split}: datasets sees features {ds.features}")
                del ds
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return problems


# --------------------------------------------------------------------------- push
def push_to_hub(repo_dir, repo_id: str, *, token: str | None = None, private: bool = False,
                endpoint: str | None = None, check: bool = True, commit_message: str | None = None):
    """Upload an exported folder to the Hub as dataset ``repo_id`` (``ORG/NAME``).

    The folder is checked first (:func:`verify_repo`); nothing is uploaded if a
    check fails, if no token is found (``token``, ``HF_TOKEN`` or
    ``huggingface-cli login``) or if the Hub is unreachable (the first request
    creates the repository and fails before any file is sent).  ``endpoint``
    defaults to ``HF_ENDPOINT`` or the public Hub.

    Returns the commit URL.
    """
    from ..errors import UploadError

    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo_id or ""):
        raise ConfigError("invalid Hub repository id", expected="ORG/NAME", found=repr(repo_id))
    if check:
        verify_repo(repo_dir)
    try:
        import huggingface_hub
        from huggingface_hub import HfApi
    except ImportError as e:  # pragma: no cover - installed with datasets
        raise UploadError("huggingface_hub is not installed", expected="huggingface_hub",
                          found="nothing", hint="pip install 'mnistforge[hub]'") from e
    offline = os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE") \
        or getattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    if offline:
        raise UploadError("Hugging Face Hub offline mode is on (HF_HUB_OFFLINE): nothing uploaded",
                          path=repo_dir, hint="unset HF_HUB_OFFLINE to push")
    token = token or os.environ.get("HF_TOKEN") or huggingface_hub.get_token()
    if not token:
        raise UploadError("no Hugging Face token: nothing uploaded", path=repo_dir,
                          expected="a token in HF_TOKEN or from `hf auth login`", found="none",
                          hint="set HF_TOKEN=hf_... (write access to the target organisation)")
    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None
    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        info = api.upload_folder(
            folder_path=str(repo_dir), repo_id=repo_id, repo_type="dataset",
            commit_message=commit_message or f"mnistforge export ({', '.join(repo_configs(repo_dir))})",
            allow_patterns=[CARD, CROISSANT, f"{DATA}/**"],
        )
    except Exception as e:  # noqa: BLE001 - network/HTTP errors come in many types
        raise UploadError(f"upload to {repo_id} failed: {type(e).__name__}: {e}",
                          path=repo_dir, hint="check the network, the token's write access and "
                          "the repository name; the local folder is intact") from e
    return str(getattr(info, "commit_url", info))
