"""CSV files of images: one row per image, the label first, then the pixels (784 for 28 x 28).

With or without a header line (``label,1x1,1x2,...`` as in Kaggle's ``mnist_train.csv``; none in the EMNIST
Kaggle CSVs).  A header naming a ``label``/``class`` column elsewhere is followed.  Compressed files are read
through :mod:`mnistforge.io.compression`.

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "mnist_test.csv")
>>> _ = open(p, "w").write("label," + ",".join(f"p{i}" for i in range(4)) + "\\n7,0,0,255,3\\n1,1,2,3,4\\n")
>>> s = read_csv(p).splits["test"]
>>> s.labels.tolist(), s.images.shape, s.images.dtype.name
([7, 1], (2, 4), 'int64')
"""
from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ...errors import FormatError
from ..compression import open_sniffed
from .base import ForeignCopy, ForeignSplit, split_key
from ..types import StrPath


__all__ = ["read_csv", "read_csv_folder"]

LABEL_NAMES = ("label", "labels", "class", "target", "y")


def is_number(tok: str) -> bool:
    """Whether ``tok`` reads as a number (the test for a header line, here and in prediction tables)."""
    try:
        float(tok)
    except ValueError:
        return False
    return True


def _parse(flat: str, dtype: npt.DTypeLike) -> np.ndarray:
    """The numbers of ``flat`` up to the first that is not one (older NumPy warns, newer raises)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return np.fromstring(flat, dtype=dtype, sep=",")
        except ValueError:
            return np.zeros(0, dtype)  # the caller reports a ragged or non-numeric file


def _parse_floats(body: str, ncols: int) -> np.ndarray:
    """Float text through pyarrow's CSV reader (NumPy's float parsing is ~10x slower)."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:  # the light install, without the [hf] extra: NumPy's parser
        return _parse(body.replace("\n", ","), np.float64)

    try:
        table = pcsv.read_csv(io.BytesIO(body.encode("ascii")),
                              read_options=pcsv.ReadOptions(autogenerate_column_names=True),
                              convert_options=pcsv.ConvertOptions(
                                  column_types={f"f{i}": pa.float64() for i in range(ncols)}))
    except (pa.ArrowInvalid, ValueError):
        return np.zeros(0)  # the caller reports a ragged or non-numeric file
    if table.num_columns != ncols:
        return np.zeros(0)
    return np.column_stack([c.to_numpy() for c in table.columns]).reshape(-1)


def read_csv(path: StrPath) -> ForeignCopy:
    """One CSV file -> a copy with one split (named from the file name, ``data`` otherwise)."""
    path = Path(path)
    with open_sniffed(path) as f:
        data = f.read()
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as e:
        raise FormatError("not a text CSV", path=path, expected="ASCII numbers separated by commas",
                          found=f"binary data ({e.reason} at byte {e.start})") from None
    text = text.replace("\r\n", "\n").strip("\n")
    first, _, body = text.partition("\n")
    header = first.split(",")
    label_col = 0
    if all(is_number(t) for t in header):
        body, header = text, []
    else:
        names = [h.strip().strip('"').lower() for h in header]
        hits = [i for i, n in enumerate(names) if n in LABEL_NAMES]
        label_col = hits[0] if hits else 0
    ncols = body[: body.find("\n") if "\n" in body else len(body)].count(",") + 1
    if ncols < 2:
        raise FormatError("too few columns", path=path, expected="a label and pixel columns", found=f"{ncols} column")
    flat = body.replace("\n", ",")
    nrows = body.count("\n") + 1
    values = _parse(flat, np.int64)  # integer text, the usual case, parses 10x faster than floats
    if values.size != nrows * ncols:
        values = _parse_floats(body, ncols)
    if values.size != nrows * ncols:
        raise FormatError("ragged or non-numeric CSV", path=path, expected=f"{nrows} rows of {ncols} numbers",
                          found=f"{values.size} numbers in all")
    table = values.reshape(nrows, ncols)
    if table.dtype.kind == "f" and np.array_equal(table, np.round(table)):
        table = table.astype(np.int64)  # whole numbers written as 3.0: kept exact
    labels = table[:, label_col]
    images = np.delete(table, label_col, axis=1)
    hint, split = split_key(path.name)
    where = f"{path} (label column {label_col}{', header' if header else ', no header'})"
    hint = hint if hint not in ("", None) else None
    return ForeignCopy("csv", path, {split or "data": ForeignSplit(split, images, labels, where, hint=hint)}, hint=hint)


def read_csv_folder(folder: StrPath) -> ForeignCopy:
    """Every CSV of a folder (``mnist_train.csv`` + ``mnist_test.csv``), one split each."""
    folder = Path(folder)
    splits: dict[str, ForeignSplit] = {}
    hints: set[str | None] = set()
    for p in sorted(folder.iterdir()):
        if ".csv" not in p.name.lower() or not p.is_file():
            continue
        for key, s in read_csv(p).splits.items():
            k = key if key not in splits else p.name
            splits[k] = s
            hints.add(s.hint)
    if not splits:
        raise FormatError("no CSV files", path=folder, expected="*.csv files", found="none")
    hint = hints.pop() if len(hints) == 1 else None
    return ForeignCopy("csv", folder, splits, hint=hint)
