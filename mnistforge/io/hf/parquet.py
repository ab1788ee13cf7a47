"""Parquet shards of one split, written reproducibly (fixed writer settings, schema metadata)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from ...errors import ConfigError
from ..atomic import atomic_file
from .schema import PIXELS, ROW_ID, SplitData
from ..types import StrPath
from .png import DEFAULT_PNG, encode_pngs

if TYPE_CHECKING:
    import datasets
    import pyarrow as pa


#: Rows per parquet row group: ~250 KB of MNIST-sized PNGs, small enough for the
#: Hub's dataset viewer and for streaming, large enough to read fast.
ROW_GROUP_SIZE = 1000
#: Upper bound on a shard's size (PNG bytes); a split is cut into equal-row shards below it.
MAX_SHARD_BYTES = 128 * 2**20
#: World sizes whose readers the default shard count serves: ``split_dataset_by_node`` hands each
#: node whole shards only when the world size divides the shard count (else every node reads all).
READER_COUNTS = (2, 3, 4, 5, 6, 8, 10, 12)
#: Fewest rows of a default shard (so 120 shards from 60,000 rows on: :func:`shard_count`).
MIN_SHARD_ROWS = 500
#: Fixed writer settings: together with the fixed schema metadata they make
#: the parquet bytes a function of the data only.
PARQUET_OPTIONS = dict(compression="snappy", version="2.6", data_page_version="1.0", use_dictionary=True,
                       write_statistics=True, store_schema=True, write_page_index=False)
DATA = "data"


class SplitSummary(TypedDict):
    """What :func:`write_split` wrote of one split (the card's ``splits`` entry and its files, their rows and sizes)."""
    name: str
    files: list[str]
    shard_rows: list[int]
    shard_bytes: list[int]
    num_examples: int
    num_bytes: int
    download_size: int


def _schema(features: datasets.Features) -> pa.Schema:
    """The parquet schema: exactly what ``datasets`` itself writes for ``features``. Its metadata holds only the
    feature definition (``{"info": {"features": ...}}``): no fingerprint, no timestamp."""
    schema = features.arrow_schema
    if list(schema.names[:2]) != ["image", "label"]:
        raise ConfigError("features must start with image and label", expected="image, label, ...",
                          found=", ".join(schema.names))
    return schema


def _pixels(field: pa.Field, images: np.ndarray) -> pa.Array:
    """The ``pixels`` column of uint8 images over one flat buffer, no copies per row:
    binary values of H*W bytes, or ``Array2D`` nested lists."""
    import pyarrow as pa

    n, h, w = images.shape
    if pa.types.is_binary(field.type):
        ends = np.arange(0, n * h * w + 1, h * w, dtype=np.int64)
        if ends[-1] >= 2**31:
            raise ConfigError("pixels column too large for one shard", expected="< 2 GiB of pixels",
                              found=f"{ends[-1]} bytes", hint="more shards: --num-shards or a lower --max-shard-mb")
        return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(ends.astype(np.int32)),
                                                      pa.py_buffer(np.ascontiguousarray(images, np.uint8))])
    flat = pa.array(np.ascontiguousarray(images, dtype=np.uint8).reshape(-1))
    rows = pa.ListArray.from_arrays(pa.array(np.arange(0, n * h * w + 1, w, dtype=np.int32)), flat)
    lists = pa.ListArray.from_arrays(pa.array(np.arange(0, n * h + 1, h, dtype=np.int32)), rows)
    return pa.ExtensionArray.from_storage(field.type, lists)


def _table(schema: pa.Schema, data: bytes, offsets: np.ndarray, labels: np.ndarray,
           metadata: np.ndarray | None, lo: int, hi: int, images: np.ndarray | None = None) -> pa.Table:
    import pyarrow as pa

    n = hi - lo
    off = (offsets[lo:hi + 1] - offsets[lo]).astype(np.int32)
    chunk = memoryview(data)[offsets[lo]:offsets[hi]]
    png = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(off), pa.py_buffer(chunk)])
    image = pa.StructArray.from_arrays([png, pa.nulls(n, pa.string())], fields=list(schema.field("image").type))
    cols = [image, pa.array(np.asarray(labels[lo:hi], dtype=np.int64))]
    for f in list(schema)[2:]:
        if f.name == ROW_ID:
            cols.append(pa.array(np.arange(lo, hi, dtype=np.int64)))
            continue
        if f.name == PIXELS:
            assert images is not None  # (a pixels column is written from the images)
            cols.append(_pixels(f, np.asarray(images[lo:hi])))
            continue
        assert metadata is not None  # (write_split checked that it holds every column)
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


def writer_options(schema: pa.Schema) -> dict[str, Any]:
    """:data:`PARQUET_OPTIONS` for ``schema``: a binary ``pixels`` column is not
    dictionary-encoded (every value differs; the fallback from a dictionary only
    slows reading).  Other columns keep the dictionary: their bytes are unchanged."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    opts = dict(PARQUET_OPTIONS)
    if PIXELS in schema.names and pa.types.is_binary(schema.field(PIXELS).type):
        empty = io.BytesIO()      # the parquet leaf paths ("image.bytes", ...) of this schema
        pq.write_table(schema.empty_table(), empty)
        leaves = [c.path for c in pq.ParquetFile(io.BytesIO(empty.getvalue())).schema]
        opts["use_dictionary"] = [p for p in leaves if p != PIXELS]
    return opts


def shard_count(rows: int) -> int:
    """The default shard count of a split of ``rows`` rows: of the counts up to 120 (the lcm of
    :data:`READER_COUNTS`) leaving :data:`MIN_SHARD_ROWS` rows a shard, the one most of them divide (then the largest).

    >>> shard_count(60_000), shard_count(30_000), shard_count(10_000), shard_count(999)
    (120, 60, 12, 1)
    """
    top = max(1, min(math.lcm(*READER_COUNTS), rows // MIN_SHARD_ROWS))
    return max(range(1, top + 1), key=lambda c: (sum(c % k == 0 for k in READER_COUNTS), c))


def _check_count(num_shards: int | None, rows: int, where: str = "a split") -> None:
    if num_shards is not None and not 0 < num_shards <= max(rows, 1):
        raise ConfigError(f"--num-shards {num_shards} for {where} of {rows:,} rows", found=str(num_shards),
                          expected=f"1..{max(rows, 1):,} (a row or more a shard)", hint="lower --num-shards, or leave "
                          "it out for the default count (divisible by 2..12 where the split is big enough)")


def shard_bounds(offsets: np.ndarray, max_shard_bytes: int = MAX_SHARD_BYTES,
                 num_shards: int | None = None) -> list[tuple[int, int]]:
    """Row ranges of the shards of one split, in order, of equal row counts (+-1): ``num_shards`` of them, or by
    default :func:`shard_count`'s count raised to its next multiple while a shard holds over ``max_shard_bytes``.

    >>> shard_bounds(np.arange(0, 1001, 100), max_shard_bytes=450)
    [(0, 3), (3, 7), (7, 10)]
    """
    n = len(offsets) - 1
    _check_count(num_shards, n)
    if n == 0:
        return [(0, 0)]
    base = num_shards or shard_count(n)
    count = num_shards or base * max(1, math.ceil(int(offsets[-1]) / max_shard_bytes / base))
    while True:
        edges = np.linspace(0, n, min(count, n) + 1).round().astype(int)
        bounds = list(zip(edges[:-1].tolist(), edges[1:].tolist()))
        if num_shards or count >= n or all(offsets[b] - offsets[a] <= max_shard_bytes for a, b in bounds):
            return bounds
        count += base


def shard_name(split: str, index: int, count: int) -> str:
    """``train-00000-of-00003.parquet``."""
    return f"{split}-{index:05d}-of-{count:05d}.parquet"


def write_split(folder: StrPath, config: str, split: str, data: SplitData, features: datasets.Features, *,
                max_shard_bytes: int = MAX_SHARD_BYTES, workers: int | None = None, png: str | None = None,
                num_shards: int | None = None) -> SplitSummary:
    """Write one split's shards (:func:`shard_bounds`) under ``folder/data/<config>/`` (PNGs by the encoder ``png``,
    default :data:`~mnistforge.io.hf.png.DEFAULT_PNG`); return its summary."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    schema = _schema(features)
    _check_count(num_shards, len(data.labels), f"{config}/{split}")  # before encoding
    missing = [f.name for f in list(schema)[2:] if f.name not in (PIXELS, ROW_ID) and
               (data.metadata is None or f.name not in (data.metadata.dtype.names or ()))]
    if missing:
        raise ConfigError(f"{config}/{split}: metadata lacks columns of the features",
                          expected=", ".join(missing), found="nothing")

    blobs, offsets = encode_pngs(data.images, workers=workers, desc=f"{config}/{split} PNG", png=png or DEFAULT_PNG)
    bounds = shard_bounds(offsets, max_shard_bytes, num_shards)
    files: list[str] = []
    num_bytes = 0
    for i, (lo, hi) in enumerate(bounds):
        rel = f"{DATA}/{config}/{shard_name(split, i, len(bounds))}"
        table = _table(schema, blobs, offsets, data.labels, data.metadata, lo, hi, data.images)
        num_bytes += table.nbytes
        with atomic_file(folder / rel) as f:
            pq.write_table(table, f, row_group_size=ROW_GROUP_SIZE, **writer_options(schema))
        files.append(rel)
    sizes = [(folder / f).stat().st_size for f in files]
    return {"name": split, "files": files, "shard_rows": [hi - lo for lo, hi in bounds], "shard_bytes": sizes,
            "num_examples": len(data.labels), "num_bytes": int(num_bytes), "download_size": sum(sizes)}


