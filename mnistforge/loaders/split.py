"""``DatasetSplit``: one loaded split (images, labels, classes, metadata) and its conversions."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, overload

import numpy as np

from ..errors import ConfigError, EmptySelectionError, IndexKindError, IndexRangeError
from ..log import get_logger
from ..registry import DatasetInfo
from .convert import to_hf, to_torch

if TYPE_CHECKING:
    import numpy.typing as npt

    #: what selects rows: a slice, integer indices or a boolean mask (see DatasetSplit.select)
    Rows = slice | Sequence[int] | Sequence[bool] | npt.NDArray[np.integer[Any]] | npt.NDArray[np.bool_]

__all__ = ["DatasetSplit"]

logger = get_logger(__name__)


#: how a row was mapped (the values of :attr:`RowMap.how`)
HOW = ("none", "exact", "near", "ambiguous")
NONE, EXACT, NEAR, AMBIGUOUS = range(4)

#: the near-match radius (L2 over pixels 0..255, best of nine placements), as ``verify``'s
#: for re-rendered copies (``checks.reference.DEFAULT_MATCH_L2``)
NEAR_L2 = 128.0

#: how many rows a summary lists
FIRST = 10


@dataclass(frozen=True)
class Change:
    """A departure of a copy from the official bytes: ``kind`` (``float01``, ``float255``,
    ``inverted``, ``transposed``, ``labels+1``, ``labels-1``), ``description`` for people."""

    kind: str
    description: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "description": self.description}


@dataclass
class LabelIssueView:
    """What a cleaned view changed: ``rows`` are positions in the split as published."""
    mode: str
    study: str
    dropped: list[int] = field(default_factory=list)
    #: row -> (label as published, label now)
    relabelled: dict[int, tuple[int, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "study": self.study, "dropped": list(self.dropped),
                "relabelled": {str(k): v for k, v in self.relabelled.items()}}


@dataclass
class RowMap:
    """Each row of a copy -> its official row (:mod:`mnistforge.loaders.rowmap`): ``keys[code[i]]``
    is ``(dataset, split)``, ``index[i]`` the row there (-1: none), ``how[i]`` an index into
    :data:`HOW`, ``l2[i]`` the distance (0 exact, NaN none).  ``dataset``: the copy's (claimed, or
    where most rows map), ``claimed``: the split it says it is; ``transposed``/``shift``: its
    orientation and label offset relative to the official files."""

    keys: tuple[tuple[str, str], ...]
    code: npt.NDArray[np.int32]
    index: npt.NDArray[np.int64]
    how: npt.NDArray[np.uint8]
    l2: npt.NDArray[np.float64]
    dataset: str | None = None
    claimed: str | None = None
    transposed: bool = False
    shift: int = 0
    label_differs: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, bool))
    candidates: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, np.int32))
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the copy is the official split in the official order (row i is official row i)
    official_order: bool = False

    def __len__(self) -> int:
        return int(self.index.shape[0])

    @property
    def mapped(self) -> npt.NDArray[np.bool_]:
        return self.index >= 0

    def _names(self, part: int) -> npt.NDArray[np.str_]:
        names = np.array([k[part] for k in self.keys] + [""])
        return names[np.where(self.index >= 0, self.code, len(self.keys))]

    @property
    def official_index(self) -> npt.NDArray[np.int64]:
        """The official row of each row (``int64``; -1 where none or ambiguous)."""
        return self.index

    @property
    def official_split(self) -> npt.NDArray[np.str_]:
        """The official split name of each row (``""`` where none)."""
        return self._names(1)

    @property
    def official_dataset(self) -> npt.NDArray[np.str_]:
        """The official dataset of each row (``""`` where none)."""
        return self._names(0)

    def _mine(self) -> npt.NDArray[np.bool_]:
        ds = np.array([k[0] == self.dataset for k in self.keys] + [False])
        return ds[np.where(self.code >= 0, self.code, len(self.keys))]

    @property
    def leakage_rows(self) -> npt.NDArray[np.intp]:
        """Rows mapped into another split of the copy's dataset than the claimed one."""
        if self.claimed is None or (self.dataset, self.claimed) not in self.keys:
            return np.zeros(0, np.int64)
        k = self.keys.index((self.dataset, self.claimed))
        # an ambiguous row all of whose candidates lie in one other split counts too
        placed = self.mapped | ((self.how == AMBIGUOUS) & (self.code >= 0))
        return np.flatnonzero(placed & self._mine() & (self.code != k))

    @property
    def duplicate_rows(self) -> npt.NDArray[np.intp]:
        """Mapped rows whose official row another row of the copy maps to as well."""
        ok = np.flatnonzero(self.mapped)
        key = self.code[ok].astype(np.int64) * (1 << 40) + self.index[ok]
        _, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
        rows: npt.NDArray[np.intp] = ok[counts[np.asarray(inv).reshape(-1)] > 1]
        return rows

    def select(self, rows: Rows) -> RowMap:
        """The map of the rows ``rows`` (a slice, indices or a mask) of the copy."""
        pick = {f: getattr(self, f)[rows] for f in ("code", "index", "how", "l2")}
        extra = {f: getattr(self, f)[rows] if len(getattr(self, f)) == len(self) else getattr(self, f)
                 for f in ("label_differs", "candidates")}
        return RowMap(self.keys, dataset=self.dataset, claimed=self.claimed,
                      transposed=self.transposed, shift=self.shift, sources=list(self.sources),
                      notes=list(self.notes), **pick, **extra)

    def leakage(self) -> dict[str, Any]:
        """The leakage facts: rows, by official split (``ds.leakage``, ``verify --json``)."""
        rows = self.leakage_rows
        by = {self.keys[k][1]: int(np.count_nonzero(self.code[rows] == k)) for k in np.unique(self.code[rows]).tolist()}
        return {"dataset": self.dataset, "claimed": self.claimed, "rows": int(rows.size),
                "by_split": by, "first_rows": rows[:FIRST].tolist(),
                "first_official": [[self.keys[self.code[i]][1], int(self.index[i])] for i in rows[:FIRST].tolist()]}

    def summary(self) -> dict[str, Any]:
        """What ``verify --json`` writes under ``row_map``."""
        m = self.mapped
        unmapped = np.flatnonzero(~m & (self.how != AMBIGUOUS))
        ambiguous = np.flatnonzero(self.how == AMBIGUOUS)
        by = {f"{d} {s}": int(np.count_nonzero(m & (self.code == k)))
              for k, (d, s) in enumerate(self.keys) if np.any(m & (self.code == k))}
        differs = np.flatnonzero(self.label_differs) if self.label_differs.size else np.zeros(0, int)
        dup = self.duplicate_rows
        return {"rows": len(self), "mapped": int(m.sum()), "exact": int(np.count_nonzero(self.how == EXACT)),
                "near": int(np.count_nonzero(self.how == NEAR)),
                "unmapped": int(unmapped.size), "first_unmapped": unmapped[:FIRST].tolist(),
                "ambiguous": int(ambiguous.size), "first_ambiguous": ambiguous[:FIRST].tolist(),
                "by_split": by, "dataset": self.dataset, "claimed": self.claimed,
                "leakage": self.leakage(), "duplicates": int(dup.size), "first_duplicates": dup[:FIRST].tolist(),
                "labels_differ": int(differs.size), "first_labels_differ": differs[:FIRST].tolist(),
                "transposed": self.transposed, "label_shift": self.shift,
                "near_l2": NEAR_L2, "sources": list(self.sources), "notes": list(self.notes)}

    def message(self) -> str:
        """One line for people."""
        s = self.summary()
        where = ", ".join(f"{v:,} into {k}" for k, v in s["by_split"].items()) or "none"
        text = (f"row map: {s['mapped']:,} of {s['rows']:,} rows map to official rows "
                f"({s['exact']:,} exact, {s['near']:,} near: {where})")
        if s["unmapped"]:
            text += (f"; {s['unmapped']:,} map to none (first: "
                     f"{', '.join(map(str, s['first_unmapped']))})")
        if s["ambiguous"]:
            text += (f"; {s['ambiguous']:,} match several official rows (first: "
                     f"{', '.join(map(str, s['first_ambiguous']))})")
        if s["duplicates"]:
            text += f"; {s['duplicates']:,} rows share their official row with another row"
        if s["labels_differ"]:
            text += f"; {s['labels_differ']:,} labels differ from the official ones"
        lk = s["leakage"]
        if lk["rows"]:
            text += (f"; LEAKAGE: {lk['rows']:,} rows of this {lk['claimed']} split are official "
                     "rows of " + ", ".join(f"{sp} ({n:,})" for sp, n in lk["by_split"].items()))
        return text


class DatasetSplit:
    """One split of a dataset, loaded: ``len(ds)``, ``ds[i]`` -> ``(image, label)``, iteration; ``ds[a:b]``,
    ``ds[index_array]``, ``ds[bool_mask]`` -> a smaller split (``indices``: its rows of the whole).  ``images``:
    ``uint8 N x 28 x 28``, upright, ink high (a read-only memory map where the cache keeps a raw copy);
    ``classes[labels[i]]``: the character; ``metadata``: one named field per column, or None; ``stored_orientation``:
    the files' (``"transposed"``: EMNIST's).  A third-party copy also has ``changes`` (what was undone), ``storage`` and
    ``row_map`` (each row's official row: ``official_index``, ``official_split``, ``leakage``).

    >>> from mnistforge.registry import get_dataset
    >>> ds = DatasetSplit("mnist", "test", np.zeros((5, 28, 28), np.uint8), np.arange(5),
    ...                   get_dataset("mnist"))
    >>> image, label = ds[3]
    >>> image.shape, label, len(ds[:2]), ds[[4, 0]].indices.tolist()
    ((28, 28), 3, 2, [4, 0])
    """

    def __init__(self, name: str, split: str, images: npt.NDArray[np.uint8], labels: npt.NDArray[np.int64],
                 info: DatasetInfo, metadata: npt.NDArray[np.void] | None = None, source: str = "",
                 status: dict[str, str] | None = None, stored_orientation: str = "upright", *,
                 indices: npt.NDArray[np.int64] | None = None) -> None:
        self.name = name
        self.split = split
        self.images = images
        self.labels = labels
        self.info = info
        self.classes = list(info.classes)
        self.metadata = metadata
        self.source = source
        self.status = dict(status or {})
        self.stored_orientation = stored_orientation
        self.indices = indices
        self.label_issues: LabelIssueView | None = None
        self.synthetic = False
        self.changes: list[Change] = []
        self.storage: list[str] = []
        self.row_map: RowMap | None = None

    @property
    def official_index(self) -> npt.NDArray[np.int64] | None:
        """The official row of each row (-1: none), from :attr:`row_map`."""
        return None if self.row_map is None else self.row_map.official_index

    @property
    def official_split(self) -> npt.NDArray[np.str_] | None:
        """The official split of each row (``""``: none), from :attr:`row_map`."""
        return None if self.row_map is None else self.row_map.official_split

    @property
    def leakage(self) -> dict[str, Any] | None:
        """Rows that are official rows of another split than the one claimed (:meth:`RowMap.leakage`)."""
        return None if self.row_map is None else self.row_map.leakage()

    @property
    def orientation(self) -> str:
        """``"upright"``: the loader flips transposed files once."""
        return "upright"

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __iter__(self) -> Iterator[tuple[npt.NDArray[np.uint8], int]]:
        for i in range(len(self)):
            yield self.images[i], int(self.labels[i])

    @overload
    def __getitem__(self, key: int | np.integer[Any]) -> tuple[npt.NDArray[np.uint8], int]: ...
    @overload
    def __getitem__(self, key: Rows) -> DatasetSplit: ...

    def __getitem__(self, key: Any) -> tuple[npt.NDArray[np.uint8], int] | DatasetSplit:
        if isinstance(key, (bool, np.bool_)):  # before int: True is an int to Python
            raise IndexKindError("a dataset is not indexed by a bool", found=repr(key),
                                 expected="a row number, a slice, integer indices or a boolean "
                                          "mask of one value per row",
                                 hint="ds[mask] takes a whole mask; ds[int(flag)] a row")
        if isinstance(key, (int, np.integer)):
            i = _row(int(key), len(self))
            return self.images[i], int(self.labels[i])
        if isinstance(key, (float, np.floating)):
            f = float(key)
            raise IndexKindError("a dataset is not indexed by a float", found=repr(key),
                                 expected="a row number (an int)",
                                 hint=f"use ds[{int(f)}]" if f == f and abs(f) < 2**63 else None)
        return self.select(key)

    def select(self, rows: Rows, split: str | None = None) -> DatasetSplit:
        """A smaller split of the rows ``rows`` (slice, integer array or boolean mask), named ``split`` (default: this
        one's).  A slice keeps the images a view; an index array copies. Rows outside the split: IndexRangeError; a step
        of 0: EmptySelectionError; floats, strings and other objects: IndexKindError."""
        n = len(self)
        if isinstance(rows, slice):
            try:
                rows.indices(n)  # validates (Python semantics: bounds clip, as for lists)
            except TypeError:
                raise IndexKindError("slice bounds must be integers", found=repr(rows),
                                     expected="ds[start:stop:step] with ints or None") from None
            except ValueError:
                raise EmptySelectionError("slice step cannot be zero", found=repr(rows),
                                          expected="a step other than 0 (e.g. ds[::2])") from None
            sel: Any = rows
        else:
            sel = _index_array(rows, n)
        whole = np.arange(len(self)) if self.indices is None else self.indices
        out = DatasetSplit(self.name, split or self.split, self.images[sel], self.labels[sel], self.info,
                           None if self.metadata is None else self.metadata[sel], self.source,
                           self.status, self.stored_orientation, indices=whole[sel])
        out.classes = list(self.classes)
        out.label_issues = self.label_issues
        out.synthetic = self.synthetic
        out.changes, out.storage = list(self.changes), list(self.storage)
        out.row_map = None if self.row_map is None else self.row_map.select(sel)
        return out

    def __repr__(self) -> str:
        meta = f", metadata={list(self.metadata.dtype.names or ())}" if self.metadata is not None else ""
        return (f"DatasetSplit({self.name!r}, {self.split!r}, n={len(self)}, "
                f"classes={len(self.classes)}{meta}, source={self.source!r})")

    def to_numpy(self) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        """``(images, labels)`` as NumPy arrays (images may be a read-only memory map)."""
        return self.images, self.labels

    def to_torch(self, transform: Callable[[Any], Any] | None = None,
                 target_transform: Callable[[int], Any] | None = None, *, dtype: object = "uint8") -> Any:
        """A ``torch.utils.data.Dataset`` like torchvision's MNIST (:func:`mnistforge.loaders.convert.to_torch`)."""
        return to_torch(self, transform=transform, target_transform=target_transform, dtype=dtype)

    def to_hf(self) -> Any:  # a datasets.Dataset (an optional dependency)
        """A Hugging Face ``datasets.Dataset`` (see :func:`mnistforge.loaders.hf_features`)."""
        return to_hf(self)


def _row(i: int, n: int) -> int:
    """Row ``i`` (negative from the end) of ``n``, or :class:`IndexRangeError` naming the range."""
    if not -n <= i < n:
        shown = str(i) if abs(i) < 10**30 else f"a {len(str(abs(i)))}-digit number"
        raise IndexRangeError("row index out of range", found=shown,
                              expected=f"-{n}..{n - 1} (the split has {n} rows)" if n
                              else "no index (the split is empty)")
    return i + n if i < 0 else i


def _index_array(rows: object, n: int) -> npt.NDArray[np.int64]:
    """``rows`` (integer indices or a boolean mask over ``n`` rows) as checked int64 indices."""
    arr = np.asarray(rows)
    if arr.dtype == object and arr.ndim == 1 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in arr):
        for v in arr:  # ints too large for int64: out of range whatever n is
            _row(int(v), n)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise IndexRangeError("boolean mask of the wrong length", expected=f"{n} values "
                                  "(one per row)", found=f"shape {arr.shape}")
        return np.flatnonzero(arr).astype(np.int64)
    if arr.ndim == 0:  # a string, None, an object: not rows at all
        raise IndexKindError("cannot select rows", expected="an int, a slice, integer indices or "
                             "a boolean mask", found=f"{type(rows).__name__} {rows!r}"[:80])
    if arr.ndim != 1:
        raise ConfigError("cannot select rows", expected="an int, a slice, integer indices or a "
                          "boolean mask (one dimension)", found=f"{arr.dtype} {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise IndexKindError("cannot select rows", expected="an int, a slice, integer indices or a "
                             "boolean mask", found=f"{arr.dtype} values")
    for v in (int(arr.min()), int(arr.max())) if arr.size else ():  # before the cast: 2^63 must not wrap
        _row(v, n)
    return arr.astype(np.int64)


def why_empty(ds: DatasetSplit) -> str:
    """Why a loaded split holds no rows, in words (the registry's definition of the split).

    >>> from mnistforge.registry import get_dataset
    >>> q = DatasetSplit("qmnist", "test50k", np.zeros((0, 28, 28), np.uint8), np.zeros(0, int),
    ...                  get_dataset("qmnist"))
    >>> print(why_empty(q))
    qmnist test50k is rows 10,000 onwards of test, and this copy's test has no more than 10,000 rows
    """
    try:
        sp = ds.info.split(ds.split)
    except Exception:  # a sliced name ("test[5:5]") or a split of another origin
        sp = None
    if sp is not None and sp.is_view and sp.rows is not None:
        start, stop = sp.rows
        span = f"rows {start:,} onwards" if stop is None else f"rows {start:,}..{stop - 1:,}"
        return (f"{ds.name} {ds.split} is {span} of {sp.of}, and this copy's {sp.of} has no more "
                f"than {start:,} rows")
    if sp is not None and sp.is_view:
        return f"{ds.name} {ds.split} is a part of {sp.of}, empty in this copy"
    return f"{ds.name} {ds.split}: the files hold no rows for it"


def warn_if_empty(ds: DatasetSplit) -> DatasetSplit:
    """Warn, naming why, when a split is empty (a small build has no ``test50k``)."""
    if len(ds) == 0:
        logger.warning("%s selects 0 rows: %s", f"{ds.name} {ds.split}", why_empty(ds))
    return ds

