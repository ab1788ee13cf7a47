"""The QMNIST selection recipe: which NIST digits form QMNIST train and test, and in what order.

Everything here is a pure function of the *digit table*: the 8-column QMNIST "extended labels" of every SD19 digit
(``xnist``), one row per digit in NIST's by_write walk order; its columns (class, HSF, writer, entry, NIST
class code, global index, earlier duplicate, unused) are listed in ``docs/provenance-mnist-qmnist.md``.

The recipe (Yadav & Bottou 2019), its order with and without the published QMNIST tables (:func:`order_like_published`;
else the documented deterministic order of :func:`select_qmnist`) and how it is scaled for a source smaller than SD19
(train and test stay disjoint) are described in ``docs/provenance-mnist-qmnist.md`` ("Selection").

>>> import numpy as np
>>> t = np.zeros((6, 8), np.int64); t[:, 5] = np.arange(6)
>>> t[:, 1] = [0, 0, 4, 4, 0, 0]; t[:, 2] = [1, 1, 2100, 2400, 2, 2]
>>> rec = QmnistRecipe(train_size=3, test_size=2, test_fill_start=4, mnist_test_size=1)
>>> sel = select_qmnist(t, rec)
>>> sel.train.tolist(), sel.test.tolist()
([2, 0, 1], [3, 4])
"""
from __future__ import annotations

import logging
import warnings
from dataclasses import asdict, dataclass, replace
import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import BuildError, FormatError, MissingFileError
from ..io.compression import open_reader
from ..io.idx import read_idx
from ..sd19.index import find_duplicates

logger = logging.getLogger(__name__)

NIST_DIGITS = 402_953         # digits in SD19 (the xnist table's rows)
NCOLS = 8
# column numbers (the table in docs/provenance-mnist-qmnist.md)
CLASS, HSF, WRITER, ENTRY, NIST_CLASS, NIST_INDEX, DUPLICATE, UNUSED = range(NCOLS)


@dataclass(frozen=True)
class QmnistRecipe:
    """Parameters of the QMNIST selection (published values by default).

    Use :meth:`for_digits` to get the recipe scaled to a smaller source.
    """

    hsf: int = 4
    train_writers: tuple[int, int] = (2100, 2349)      # inclusive
    test_writers: tuple[int, int] = (2350, 2599)       # inclusive
    train_size: int = 60_000
    test_size: int = 60_000
    train_fill_start: int = 0
    test_fill_start: int = 35_000
    mnist_test_size: int = 10_000
    scale: float = 1.0

    @classmethod
    def for_digits(cls, n_digits: int) -> "QmnistRecipe":
        """The published recipe, scaled when the source has fewer than 402,953 digits.

        >>> QmnistRecipe.for_digits(402_953).train_size
        60000
        >>> r = QmnistRecipe.for_digits(40_295); (r.train_size, r.test_fill_start, r.mnist_test_size)
        (6000, 3500, 1000)
        """
        base = cls()
        if n_digits >= NIST_DIGITS:
            return base
        s = n_digits / NIST_DIGITS
        return replace(base, train_size=int(round(base.train_size * s)), test_size=int(round(base.test_size * s)),
                       test_fill_start=int(round(base.test_fill_start * s)),
                       mnist_test_size=int(round(base.mnist_test_size * s)), scale=s)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "train_writers": list(self.train_writers), "test_writers": list(self.test_writers)}


@dataclass(frozen=True)
class Selection:
    """Global NIST digit indices (column 5) of QMNIST train and test, in order."""

    train: np.ndarray
    test: np.ndarray
    recipe: QmnistRecipe
    order: str                    # "published" or "deterministic"
    train_core: int = 0           # how many of train come from the writer range
    test_core: int = 0

    @property
    def mnist_test(self) -> np.ndarray:
        """The first ``mnist_test_size`` rows of test (MNIST's test set when ordered as published)."""
        return self.test[: self.recipe.mnist_test_size]


def interleave(a: npt.ArrayLike, b: npt.ArrayLike) -> np.ndarray:
    """``a0 b0 a1 b1 ...`` until the shorter runs out, then the rest of the longer.

    >>> interleave(np.array([1, 2, 3]), np.array([10])).tolist()
    [1, 10, 2, 3]
    """
    a, b = np.asarray(a), np.asarray(b)
    k = min(a.size, b.size)
    head = np.empty(2 * k, dtype=np.result_type(a, b))
    head[0::2], head[1::2] = a[:k], b[:k]
    return np.concatenate([head, a[k:], b[k:]])


def select_qmnist(table: npt.ArrayLike, recipe: QmnistRecipe | None = None, *,
                  duplicate: npt.ArrayLike | None = None) -> Selection:
    """QMNIST train and test global-index sets, in the documented deterministic order.

    ``table`` (ndarray, shape (n, 8)): The digit table (extended labels of every digit, rows in
        global order; column 5 must equal the row number).
    ``recipe``: Defaults to :meth:`QmnistRecipe.for_digits` of the table's length.
    ``duplicate`` (array of bool, optional): Which digits are duplicates of an earlier one. Default: column 6 != 0 (the
        published encoding cannot mark a duplicate of digit #0; builders pass the exact mask).

    >>> t = np.zeros((4, 8), np.int64); t[:, 5] = np.arange(4)
    >>> t[:, 2] = np.arange(4)      # four writers: the test fill skips writers on the train side
    >>> select_qmnist(t, QmnistRecipe(train_size=2, test_size=2, test_fill_start=2)).test.tolist()
    [2, 3]
    """
    table = np.asarray(table)
    check_table(table)
    recipe = recipe or QmnistRecipe.for_digits(len(table))
    gidx = table[:, NIST_INDEX]
    clean = table[:, DUPLICATE] == 0 if duplicate is None else ~np.asarray(duplicate, dtype=bool)
    in_hsf = table[:, HSF] == recipe.hsf
    w = table[:, WRITER]
    train_core = clean & in_hsf & (w >= recipe.train_writers[0]) & (w <= recipe.train_writers[1])
    test_core = clean & in_hsf & (w >= recipe.test_writers[0]) & (w <= recipe.test_writers[1])
    free = clean & ~train_core & ~test_core
    train_core_idx = gidx[train_core]
    test_core_idx = gidx[test_core]

    # train fill: from train_fill_start, never reaching into the test fill range
    cand = gidx[free & (gidx >= recipe.train_fill_start) & (gidx < recipe.test_fill_start)]
    need = max(0, recipe.train_size - train_core_idx.size)
    train_fill = cand[:need]
    # test fill: from test_fill_start on, skipping writers already on the train side.  With SD19's numbers the train
    # fill ends (#30,949) well before the test fill starts (#35,000), so nothing is skipped; on a scaled source the
    # writer at the boundary could otherwise straddle both sides.
    key = table[:, HSF].astype(np.int64) * 100_000 + w
    train_keys = np.unique(np.concatenate([key[train_fill], key[train_core_idx]]))
    cand = gidx[free & (gidx >= recipe.test_fill_start) & ~np.isin(key, train_keys)]
    need = max(0, recipe.test_size - test_core_idx.size)
    test_fill = cand[:need]
    train_core_idx = train_core_idx[: recipe.train_size]
    test_core_idx = test_core_idx[: recipe.test_size]

    train = interleave(train_core_idx, train_fill).astype(np.int64)
    test = interleave(test_core_idx, test_fill).astype(np.int64)
    for name, got, want in (("train", train, recipe.train_size), ("test", test, recipe.test_size)):
        if got.size < want:
            logger.warning("QMNIST %s: the source has only %d of the %d digits the recipe asks for",
                           name, got.size, want)
    return Selection(train=train, test=test, recipe=recipe, order="deterministic",
                     train_core=int(train_core_idx.size), test_core=int(test_core_idx.size))


def order_like_published(selection: Selection, published_train: npt.ArrayLike,
                         published_test: npt.ArrayLike) -> Selection:
    """Reorder a selection as the published QMNIST tables (column 5 = global index).

    The published tables must hold exactly the selected sets, otherwise the source is not SD19 as QMNIST knew it (or the
    tables are not QMNIST's) and :class:`~mnistforge.errors.BuildError` is raised.

    >>> t = np.zeros((4, 8), np.int64); t[:, 5] = np.arange(4)
    >>> t[:, 2] = np.arange(4)      # four writers: the test fill skips writers on the train side
    >>> s = select_qmnist(t, QmnistRecipe(train_size=2, test_size=2, test_fill_start=2))
    >>> pub = lambda *g: np.array([[0] * 5 + [i, 0, 0] for i in g])
    >>> order_like_published(s, pub(1, 0), pub(3, 2)).train.tolist()
    [1, 0]
    """
    out: dict[str, np.ndarray] = {}
    for name, mine, pub_like in (("train", selection.train, published_train), ("test", selection.test, published_test)):
        pub = np.asarray(pub_like)
        order = pub[:, NIST_INDEX] if pub.ndim == 2 else pub
        order = order.astype(np.int64)
        if order.size != mine.size or not np.array_equal(np.sort(order), np.sort(mine)):
            extra, missing = np.setdiff1d(order, mine), np.setdiff1d(mine, order)
            raise BuildError(
                f"the published QMNIST {name} table does not hold the digits the recipe selects "
                "from this source", expected=f"{mine.size} global indices equal to the recipe's",
                found=(f"{order.size} rows, {extra.size} not selected (e.g. {extra[:3].tolist()}), "
                       f"{missing.size} selected digits absent (e.g. {missing[:3].tolist()})"),
                hint="the order tables only apply to the full SD19 (or a synthetic SD19 built with "
                     "--layout from the real xnist table); build without --qmnist-labels otherwise")
        out[name] = order
    return replace(selection, train=out["train"], test=out["test"], order="published")


def published_selection(table: npt.ArrayLike, published_train: npt.ArrayLike, published_test: npt.ArrayLike,
                        recipe: QmnistRecipe | None = None) -> Selection:
    """The selection the published QMNIST tables hold (column 5), in their order.

    No recipe is run: this is for builds that take the published sets as given (``build mnist --qmnist-labels``), after
    the tables' columns 0-5 were checked against the source.  :func:`order_like_published` is the variant that checks
    the recipe's sets against the tables.

    >>> t = np.zeros((4, 8), np.int64); t[:, 5] = np.arange(4)
    >>> pub = lambda *g: np.array([[0] * 5 + [i, 0, 0] for i in g])
    >>> s = published_selection(t, pub(1, 0), pub(3, 2), QmnistRecipe(mnist_test_size=1))
    >>> s.train.tolist(), s.mnist_test.tolist(), s.order
    ([1, 0], [3], 'published')
    """
    table = np.asarray(table)
    recipe = recipe or QmnistRecipe.for_digits(len(table))
    train, test = (np.asarray(p)[:, NIST_INDEX].astype(np.int64) for p in (published_train, published_test))

    def core(rows: np.ndarray, writers: tuple[int, int]) -> int:
        w = table[rows, WRITER]
        return int(((table[rows, HSF] == recipe.hsf) & (w >= writers[0]) & (w <= writers[1])).sum())

    return Selection(train=train, test=test, recipe=recipe, order="published",
                     train_core=core(train, recipe.train_writers), test_core=core(test, recipe.test_writers))


def check_table(table: np.ndarray) -> None:
    """Raise :class:`FormatError` unless ``table`` is an (n, 8) digit table in global order."""
    if table.ndim != 2 or table.shape[1] != NCOLS:
        raise FormatError("not a digit table", expected="an (n, 8) integer array", found=f"shape {table.shape}")
    if not np.array_equal(table[:, NIST_INDEX], np.arange(len(table))):
        raise FormatError("digit table not in global order", expected="column 5 equal to the row number 0..n-1",
                          found="another sequence", hint="pass the full xnist table, not a subset")


def digit_table(index: np.ndarray, duplicates: npt.ArrayLike | None = None) -> np.ndarray:
    """Build the 8-column digit table from an SD19 index (``open_sd19(...).index``).

    ``index`` (structured ndarray): The SD19 index (one row per character, by_write walk order).
    ``duplicates`` (array of int, optional): Column 6, one value per digit (global index of the
        earlier identical image, else 0).  Default: from the index's exact image hashes (:func:`source_duplicates`).

    >>> idx = np.zeros(3, dtype=[("hsf", "u1"), ("writer", "i2"), ("template", "u1"),
    ...     ("field", "S1"), ("entry", "i4"), ("ascii", "u1"), ("digit_index", "i4"),
    ...     ("duplicate_of", "i4"), ("hash", "S16")])
    >>> idx["field"] = [b"d", b"u", b"d"]; idx["ascii"] = [0x37, 0x41, 0x30]
    >>> idx["digit_index"] = [0, -1, 1]; idx["hash"] = [b"a", b"b", b"c"]
    >>> digit_table(idx)[:, [0, 4, 5]].tolist()
    [[7, 37, 0], [0, 30, 1]]
    """
    rows = digit_rows(index)
    d = index[rows]
    n = rows.size
    table = np.zeros((n, NCOLS), dtype=np.int64)
    asc = d["ascii"].astype(np.int64)
    table[:, CLASS] = asc - 0x30
    table[:, HSF] = d["hsf"]
    table[:, WRITER] = d["writer"]
    table[:, ENTRY] = d["entry"]
    table[:, NIST_CLASS] = (asc // 16) * 10 + asc % 16        # the hex code read as decimal
    table[:, NIST_INDEX] = d["digit_index"]
    table[:, DUPLICATE] = source_duplicates(index) if duplicates is None else duplicates
    if not np.array_equal(table[:, NIST_INDEX], np.arange(n)):
        raise FormatError("SD19 index digit numbering is not the walk order",
                          expected="digit_index 0..n-1 in row order", found="another numbering",
                          hint="rebuild the SD19 index (delete its cache)")
    if ((table[:, CLASS] < 0) | (table[:, CLASS] > 9)).any():
        raise FormatError("SD19 index has digit-field rows that are not digits",
                          expected="ascii 0x30-0x39 in the d field",
                          found=f"{np.unique(asc[(asc < 0x30) | (asc > 0x39)]).tolist()}")
    return table


def digit_rows(index: np.ndarray) -> np.ndarray:
    """Rows of the SD19 index that are digits, in global digit order."""
    rows = np.flatnonzero(index["field"] == b"d")
    return rows[np.argsort(index["digit_index"][rows], kind="stable")]


def source_duplicates(index: np.ndarray) -> np.ndarray:
    """Column 6 from the exact 128x128 image hashes: per digit, the earliest identical digit's global index, else 0."""
    rows = digit_rows(index)
    return duplicates_from_digests(index["hash"][rows])


def duplicates_from_digests(digests: npt.ArrayLike) -> np.ndarray:
    """Column 6 from per-digit content digests in global order (earliest wins, else 0).

    >>> duplicates_from_digests(np.array([b"y", b"x", b"x"])).tolist()
    [0, 0, 1]
    """
    dup = find_duplicates(np.asarray(digests))
    # column 6 uses 0 for "none", so a duplicate of digit #0 reads as "none" (a flaw of
    # the published format; the builders keep the exact mask for the selection)
    return np.where(dup < 0, 0, dup).astype(np.int64)


# --- Reading the published tables -------------------------------------------------------------

def read_label_table(path: str | os.PathLike[str]) -> np.ndarray:
    """Read a QMNIST extended-label table (``.tsv`` or ``-idx2-int``, raw/gz/xz/bz2).

    Returns an ``(n, 8)`` int64 array.  The tsv is parsed in one vectorised call.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "t.tsv")
    >>> _ = open(p, "w").write("7\\t4\\t2578\\t69\\t37\\t279260\\t0\\t0\\n")
    >>> read_label_table(p).tolist()
    [[7, 4, 2578, 69, 37, 279260, 0, 0]]
    """
    path = Path(path)
    if not path.is_file():
        raise MissingFileError("label table not found", path=path,
                               hint="give the folder holding qmnist-*-labels.tsv.gz")
    if "idx" in path.name:
        arr = np.asarray(read_idx(path, mmap=False))
        if arr.ndim != 2 or arr.shape[1] != NCOLS:
            raise FormatError("not an extended-label idx file", path=path,
                              expected="an n x 8 int array", found=f"shape {arr.shape}")
        return arr.astype(np.int64)
    with open_reader(path) as f:
        raw = f.read()
    lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") or not raw else 1)
    # np.fromstring with a separator parses any whitespace-separated integers in C
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)   # older NumPy: warn, not raise
            vals = np.fromstring(raw, dtype=np.int64, sep=" ") if raw.strip() else np.zeros(0, np.int64)
    except (ValueError, DeprecationWarning) as e:
        raise FormatError("malformed extended-label table", path=path,
                          expected="lines of 8 tab-separated integers", found=f"unparsable text ({e})")
    if vals.size != lines * NCOLS:
        raise FormatError("malformed extended-label table", path=path, expected=f"{lines} lines of 8 integers",
                          found=f"{vals.size} integers parsed")
    return vals.reshape(-1, NCOLS)


PUBLISHED_TABLES = {
    "train": ("qmnist-train-labels.tsv.gz", "qmnist-train-labels-idx2-int.gz"),
    "test": ("qmnist-test-labels.tsv.gz", "qmnist-test-labels-idx2-int.gz"),
}


def find_published_tables(folder: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The train and test extended-label tables in ``folder`` (tsv preferred, idx2 accepted)."""
    folder = Path(folder)
    found: list[Path] = []
    for split, names in PUBLISHED_TABLES.items():
        for name in names:
            p = folder / name
            if p.is_file():
                found.append(p)
                break
        else:
            raise MissingFileError(f"published QMNIST {split} labels not found", path=folder,
                                   expected=" or ".join(names), found="neither",
                                   hint="download them (mnistforge fetch qmnist) or omit "
                                        "--qmnist-labels for the deterministic order")
    return found[0], found[1]
