"""Hugging Face parquet snapshots: an ``Image`` feature (PNG bytes) and an integer label column.

Both the ``ylecun/mnist`` layout (``mnist/train-00000-of-00001.parquet``) and the layout of our exports
(``data/<config>/<split>-NNNNN-of-NNNNN.parquet``) are read, without the ``datasets`` library: the shards of a
split are joined in name order, the PNGs decoded by :func:`mnistforge.io.hf.png.decode_pngs`. Other integer
columns are kept as metadata.

>>> import numpy as np, pyarrow as pa, pyarrow.parquet as pq, tempfile, os
>>> from mnistforge.io.hf.png import encode_png
>>> d = os.path.join(tempfile.mkdtemp(), "mnist"); os.makedirs(d)
>>> img = pa.array([{"bytes": encode_png(np.full((28, 28), 9, np.uint8)), "path": None}])
>>> pq.write_table(pa.table({"image": img, "label": [5]}), os.path.join(d, "test-00000-of-00001.parquet"))
>>> copy = read_parquet(os.path.dirname(d))
>>> copy.hint, list(copy.splits), int(copy.splits["test"].images[0, 0, 0])
('mnist', ['test'], 9)
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...errors import FormatError, require
from ..hf.png import decode_pngs
from .base import SPLIT_TOKENS, ForeignCopy, ForeignSplit
from ..types import StrPath

if TYPE_CHECKING:
    import pyarrow as pa


__all__ = ["read_parquet"]

SHARD = re.compile(r"^(?P<split>.+?)(-\d{5}-of-\d{5})?$")


def _shards(path: Path) -> dict[tuple[str | None, str], list[Path]]:
    files = [path] if path.is_file() else sorted(path.rglob("*.parquet"))
    groups: dict[tuple[str | None, str], list[Path]] = {}
    for p in files:
        m = SHARD.match(p.stem)
        split = m.group("split") if m else p.stem
        hint = p.parent.name if p.parent.name != "data" else None  # ylecun/mnist: mnist/
        groups.setdefault((hint, split), []).append(p)
    return groups


def _columns(table: pa.Table, where: Path) -> tuple[str, str, list[str]]:
    import pyarrow as pa

    names = table.column_names
    image = "image" if "image" in names else next(
        (c for c in names if pa.types.is_struct(table.schema.field(c).type)
         and "bytes" in [f.name for f in table.schema.field(c).type]), None)
    if image is None:
        image = next((c for c in names if pa.types.is_binary(table.schema.field(c).type)), None)
    ints = [c for c in names if c != image and pa.types.is_integer(table.schema.field(c).type)]
    label = "label" if "label" in ints else (ints[0] if ints else None)
    if image is None or label is None:
        raise FormatError("no image and label columns", path=where,
                          expected="an Image feature (PNG bytes) and an integer label column",
                          found=", ".join(f"{c}: {table.schema.field(c).type}" for c in names))
    return image, label, [c for c in ints if c != label]


def _read_group(paths: list[Path]) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], str]:
    require("pyarrow", "hf", "reading parquet files")
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        tables = [pq.read_table(p) for p in paths]
        table = pa.concat_tables(tables)
    except (pa.ArrowInvalid, OSError) as e:
        raise FormatError("unreadable parquet shards", path=paths[0], expected="parquet files "
                          "with one schema", found=str(e)) from e
    image, label, extra = _columns(table, paths[0])
    col = table.column(image).combine_chunks()
    png = col.field("bytes") if pa.types.is_struct(col.type) else col
    try:
        images = decode_pngs(png.to_pylist())
    except (OSError, ValueError) as e:
        raise FormatError("image column does not hold PNG/JPEG bytes", path=paths[0],
                          expected="encoded images", found=str(e)) from e
    labels = table.column(label).to_numpy()
    meta = {c: table.column(c).to_numpy() for c in extra}
    where = f"{paths[0] if len(paths) == 1 else paths[0].parent} [{image}, {label}]"
    return images, np.asarray(labels), meta, where


def read_parquet(path: StrPath) -> ForeignCopy:
    """A parquet file or a snapshot folder -> one split per (config folder, split name)."""
    path = Path(path)
    groups = _shards(path)
    if not groups:
        raise FormatError("no parquet files", path=path, expected="*.parquet shards", found="none")
    hints = {h for h, _ in groups}
    splits: dict[str, ForeignSplit] = {}
    for (hint, split), paths in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        images, labels, meta, where = _read_group(paths)
        ours = SPLIT_TOKENS.get(split.lower(), split.replace("_", "-"))
        key = ours if len(hints) == 1 else f"{hint}:{ours}"
        splits[key] = ForeignSplit(ours, images, labels, where, meta, hint)
    return ForeignCopy("parquet", path, splits, hint=hints.pop() if len(hints) == 1 else None)
