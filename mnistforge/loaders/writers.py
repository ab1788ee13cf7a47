"""Writer-disjoint re-splits of loaded splits (:func:`writer_split`): no writer on both sides,
each side's class balance said (:class:`ClassBalance`).  The rules: ``docs/federated.md``.

>>> from mnistforge.registry import get_dataset
>>> n = 60
>>> meta = np.zeros(n, dtype=[("writer", "i4")]); meta["writer"] = np.arange(n) % 12
>>> ds = DatasetSplit("emnist-digits", "train", np.zeros((n, 28, 28), np.uint8), np.arange(n) % 10,
...                   get_dataset("emnist-digits"), meta)
>>> sides = writer_split(ds, test_fraction=0.25, seed=1)
>>> len(sides.train), len(sides.test), sides.writers
(45, 15, {'train': 9, 'test': 3})
>>> set(sides.train.metadata["writer"]) & set(sides.test.metadata["writer"])
set()
>>> print(sides.balance.summary())
largest relative deviation from the pool's class shares: train 11.1% (class '0'), test 33.3% (class '1')
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..cache.download import fetch_file
from ..errors import ConfigError, FormatError, MissingFileError, PathArg
from ..io.idx import read_idx
from ..registry import get_dataset, get_file, list_datasets
from .core import load
from .names import parse_split, rows_of
from .split import DatasetSplit
from .targets import resolve_target

__all__ = ["ClassBalance", "WriterSplit", "writer_split", "row_writers", "identity_table", "SIDES"]

#: the two sides, and the split names the results carry
SIDES = ("train", "test")
SPLIT_NAMES = {"train": "train-by-writer", "test": "test-by-writer"}
#: metadata fields that hold the writer (the registry's name first; Hugging Face exports)
WRITER_FIELDS = ("writer", "writer_id")


@dataclass(frozen=True)
class ClassBalance:
    """Class counts of each side (``counts[side][i]``: rows of class ``labels[i]``, named ``names[i]``) and the relative
    deviation of each class's share of a side from its share of the pool (``deviation``:
    ``(n_side(c) / n_side) / (n(c) / n) - 1``; ``max_deviation[side]`` its largest absolute value, at class
    ``worst[side]``)."""

    labels: np.ndarray
    names: list[str]
    counts: dict[str, np.ndarray]
    deviation: dict[str, np.ndarray] = field(default_factory=dict)
    max_deviation: dict[str, float] = field(default_factory=dict)
    worst: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, sides: dict[str, np.ndarray], classes: Sequence[str]) -> ClassBalance:
        """The balance of ``sides`` (side -> labels) over ``classes`` (label value -> name)."""
        k = max([len(classes)] + [int(y.max()) + 1 for y in sides.values() if len(y)])
        counts = {s: np.bincount(np.asarray(y, np.int64), minlength=k) for s, y in sides.items()}
        labels = np.flatnonzero(pool := np.sum(list(counts.values()), axis=0))
        names = [str(classes[i]) if i < len(classes) else str(i) for i in labels.tolist()]
        share = pool[labels] / max(1, int(pool.sum()))
        out = cls(labels, names, {s: c[labels] for s, c in counts.items()})
        for s, c in out.counts.items():
            n = int(c.sum())
            out.deviation[s] = dev = c / n / share - 1 if n else np.full(len(labels), -1.0)
            i = int(np.argmax(np.abs(dev))) if len(dev) else 0
            out.max_deviation[s], out.worst[s] = (float(abs(dev[i])), names[i]) if len(dev) else (0.0, "")
        return out

    def table(self) -> list[str]:
        """The counts as aligned text lines: class, one column per side, test share."""
        sides, width = list(self.counts), max([5] + [len(n) for n in self.names])
        lines = ["class".ljust(width) + "".join(f"{s:>9}" for s in sides) + "  test share"]
        for i, name in enumerate(self.names):
            row = [int(self.counts[s][i]) for s in sides]
            test = int(self.counts["test"][i]) if "test" in self.counts else 0
            lines.append(name.ljust(width) + "".join(f"{v:>9}" for v in row) + f"  {test / max(1, sum(row)):>10.1%}")
        return lines

    def summary(self) -> str:
        """One line: the largest relative deviation of each side and its class."""
        return "largest relative deviation from the pool's class shares: " + ", ".join(
            f"{s} {self.max_deviation[s]:.1%} (class {self.worst[s]!r})" for s in self.counts)

    def to_dict(self) -> dict[str, Any]:
        return {"classes": self.names, "counts": {s: c.tolist() for s, c in self.counts.items()},
                "max_deviation": dict(self.max_deviation), "worst": dict(self.worst)}


@dataclass
class WriterSplit:
    """What :func:`writer_split` returns: the two sides, their class balance and writer counts."""
    train: DatasetSplit
    test: DatasetSplit
    balance: ClassBalance
    writers: dict[str, int]
    seed: int
    test_fraction: float

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "test_fraction": self.test_fraction,
                "rows": {"train": len(self.train), "test": len(self.test)},
                "writers": dict(self.writers), "balance": self.balance.to_dict()}


def _writer_field(ds: DatasetSplit) -> str:
    names = () if ds.metadata is None else ds.metadata.dtype.names or ()
    if (found := next((f for f in WRITER_FIELDS if f in names), None)) is None:
        raise ConfigError(f"{ds.name} {ds.split}: no writer per row", path=ds.source or None,
                          expected="metadata with a 'writer' field",
                          found="no metadata" if ds.metadata is None else f"fields {list(names)}",
                          hint="load with with_metadata=True from files that record writers: the "
                               "official EMNIST .mat files, an EMNIST build, QMNIST (the official "
                               "EMNIST idx files have no writer)")
    return found


def identity_table(name: str, split: str, *, tables: PathArg | None = None, cache: PathArg | None = None,
                   offline: bool | None = None) -> np.ndarray:
    """The rows of the published table giving official ``name`` ``split``'s SD19 identities (its
    registry ``identities``), from the cache or from the folder ``tables``."""
    (base, spec), info = parse_split(split), get_dataset(name)
    if base not in info.splits or (ids := info.splits[base].identities) is None:
        raise ConfigError(f"no row identities for official {name} {base}", found=f"{name}:{split}",
                          expected=", ".join(f"{n}:{s}" for n in list_datasets() for s, sp in
                                             get_dataset(n).splits.items() if sp.identities))
    file = get_file(ids[0])
    path = Path(tables) / file.name if tables is not None else fetch_file(file, root=cache, offline=offline).path
    if not path.is_file():
        raise MissingFileError("QMNIST table not found", path=path, expected=file.name,
                               hint="give the folder holding the published QMNIST tables")
    t = np.asarray(read_idx(path), np.int64)
    if t.shape != (60_000, 8):  # a build's tables (other digits) would name the wrong characters
        raise FormatError("not a published QMNIST table", path=path, found=f"shape {t.shape}",
                          expected="60,000 rows of 8 columns (the QMNIST release's)")
    t = t[ids[1]:ids[2]]
    return t if spec is None else t[rows_of(spec, len(t))]


def row_writers(test: str, *, cache: PathArg | None = None,
                download: bool | None = False) -> tuple[np.ndarray, np.ndarray | None]:
    """The writer and NIST series (``hsf``; None when not recorded) of every row of test set ``test``
    (``NAME[:SPLIT]`` or a folder): MNIST's from QMNIST's tables (:func:`identity_table`), any
    other split's from its metadata (a mapped copy's through its row map)."""
    offline = None if download is None else not download
    if Path(test).is_file():   # a third-party copy (.npz, .csv, ...): its rows through its row map
        name, split, root = str(test), "test", None
    else:
        name, split, root = resolve_target(test, default_split="test")
        if root is None and not set(WRITER_FIELDS) & set(get_dataset(name).metadata_fields):  # before any load
            if get_dataset(name).split(parse_split(split)[0]).identities:
                t = identity_table(name, split, cache=cache, offline=offline)
                return t[:, 2].copy(), t[:, 1].copy()
            raise ConfigError(f"the writers of {name}'s rows are not known", found=f"{name} records no writer",
                              expected="MNIST, QMNIST, an EMNIST or FEMNIST build (or --groups FILE)")
    ds = load(name, split, root=root, with_metadata=True, download=download, cache=cache)
    fields = () if ds.metadata is None else ds.metadata.dtype.names or ()
    official = set() if ds.official_split is None else set(ds.official_split.tolist())
    idx = ds.official_index
    if not set(WRITER_FIELDS) & set(fields) and root is None and (idx is None or (idx < 0).any()) and name == str(test):
        raise ConfigError(f"the writers of {test}'s rows are not all known", path=str(test),
                          found="no row map (not identified as a copy of an official split)" if idx is None else
                          f"{int((idx < 0).sum()):,} of {len(ds):,} rows match no official row",
                          expected="every row mapped to an official row (`mnistforge verify` shows the map)",
                          hint="give the groups yourself (--groups FILE)")
    if not set(WRITER_FIELDS) & set(fields) and len(official) == 1 and ds.official_index is not None \
            and (ds.official_index >= 0).all() and (sp := ds.info.splits.get(official.pop())) and sp.identities:
        # a copy of official MNIST, every row mapped: the published table's rows of its official rows
        t = identity_table(ds.name, sp.name, cache=cache, offline=offline)[ds.official_index]
        return t[:, 2].copy(), t[:, 1].copy()
    return (np.asarray(ds.metadata[_writer_field(ds)], np.int64),  # type: ignore[index]
            np.asarray(ds.metadata["hsf"]) if "hsf" in fields else None)  # type: ignore[index]


def _check_parts(parts: list[DatasetSplit]) -> None:
    if not parts:
        raise ConfigError("nothing to split", expected="one loaded split or several", found="none")
    first = parts[0]
    seen = [(p.source, p.split, None if p.indices is None else p.indices.tobytes()) if p.source
            else id(p.images) for p in parts]  # splits made in memory: the same arrays
    twice = next((p for p, key in zip(parts, seen) if seen.count(key) > 1), None)
    if twice is not None:  # its rows would be pooled twice, each image on a side two times
        raise ConfigError("the same split is given twice", found=f"{twice.name} {twice.split} "
                          f"({twice.source})", expected="distinct splits to pool (e.g. [train, test])")
    for p in parts[1:]:
        if p.name != first.name or list(p.classes) != list(first.classes):
            raise ConfigError("the splits to pool are of different datasets",
                              expected=f"splits of {first.name} ({len(first.classes)} classes)",
                              found=f"{p.name} {p.split} ({len(p.classes)} classes)",
                              hint="pool the train and test splits of one dataset")


def _metadata(part: DatasetSplit, rows: np.ndarray, fields: list[str], wfield: str, wtype: np.dtype) -> np.ndarray:
    meta = part.metadata
    assert meta is not None
    origin = np.arange(len(part)) if part.indices is None else np.asarray(part.indices)
    dt = [("writer", wtype)] + [(f, meta.dtype[f]) for f in fields] + [
        ("from_split", f"U{max(1, len(str(part.split)))}"), ("from_row", np.int64)]
    out = np.empty(len(rows), dtype=dt)
    out["writer"] = meta[wfield][rows]
    for f in fields:
        out[f] = meta[f][rows]
    out["from_split"], out["from_row"] = str(part.split), origin[rows]
    return out


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    """Structured arrays whose string fields may differ in width, as one."""
    if len(arrays) == 1:
        return arrays[0]
    names = arrays[0].dtype.names or ()
    dt = [(n, max((a.dtype[n] for a in arrays), key=lambda d: d.itemsize)) for n in names]
    return np.concatenate([a.astype(dt) for a in arrays])


def writer_split(data: DatasetSplit | Sequence[DatasetSplit], test_fraction: float = 1 / 7,
                 seed: int = 0) -> WriterSplit:
    """A writer-disjoint train/test split of ``data`` (one loaded split, or the splits of one dataset pooled in the
    order given, loaded ``with_metadata=True`` from files that record each row's writer): the writers shuffled with
    ``seed``, whole writers sent to the test side while that brings its share of the rows closer to ``test_fraction``.
    Returns the sides (``train-by-writer``, ``test-by-writer``; metadata ``writer``, the fields common to the inputs,
    ``from_split`` and ``from_row``), their ``balance`` and ``writers`` on each side.
    """
    parts = [data] if isinstance(data, DatasetSplit) else list(data)
    _check_parts(parts)
    if not 0 < float(test_fraction) < 1:
        raise ConfigError("test_fraction out of range", expected="a fraction between 0 and 1",
                          found=repr(test_fraction))
    wfields = [_writer_field(p) for p in parts]
    raw = [np.asarray(p.metadata[w]) for p, w in zip(parts, wfields)]  # type: ignore[index]
    writers = [r.astype(np.int64) for r in raw]
    wtype = np.result_type(*raw)  # the inputs' own type (int32 for builds)
    ids, counts = np.unique(np.concatenate(writers), return_counts=True)
    if len(ids) < 2:
        raise ConfigError("a writer-disjoint split needs two writers at least",
                          expected="rows of two writers or more", found=f"{len(ids)} writer")
    order = np.random.default_rng(int(seed)).permutation(len(ids))
    cum = np.cumsum(counts[order])
    k = 1 + int(np.argmin(np.abs(cum[:-1] - float(test_fraction) * cum[-1])))  # 1..len-1 writers
    test_ids = np.sort(ids[order[:k]])
    common = [f for f in parts[0].metadata.dtype.names or ()  # type: ignore[union-attr]
              if f not in WRITER_FIELDS + ("from_split", "from_row")
              and all(p.metadata is not None and f in (p.metadata.dtype.names or ()) for p in parts)]
    sides = {}
    for side in SIDES:
        images, labels, metas = [], [], []
        for p, w, wf in zip(parts, writers, wfields):
            on_test = np.isin(w, test_ids)
            rows = np.flatnonzero(on_test if side == "test" else ~on_test)
            images.append(np.asarray(p.images[rows]))
            labels.append(np.asarray(p.labels[rows], np.int64))
            metas.append(_metadata(p, rows, common, wf, wtype))
        first = parts[0]
        ds = DatasetSplit(first.name, SPLIT_NAMES[side], np.concatenate(images),
                          np.concatenate(labels), first.info, _concat(metas),
                          f"writer split (seed {seed}, test_fraction {test_fraction:g}) of "
                          + "; ".join(f"{p.split} ({p.source})" if p.source else p.split for p in parts))
        ds.classes = list(first.classes)
        ds.synthetic = any(p.synthetic for p in parts)
        sides[side] = ds
    balance = ClassBalance.of({s: sides[s].labels for s in SIDES}, parts[0].classes)
    return WriterSplit(sides["train"], sides["test"], balance,
                       {"train": len(ids) - k, "test": k}, int(seed), float(test_fraction))
