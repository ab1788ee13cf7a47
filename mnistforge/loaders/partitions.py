"""Partitions as data (``docs/federated.md``): written by Flower Datasets, re-checked on any copy without it."""
from __future__ import annotations

import contextlib
import io
import json
import re
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError, FormatError, IntegrityError, PathArg, require
from ..io.atomic import atomic_dir
from ..io.hashing import sha256_file, sha256_parts
from ..io.hf.schema import export_metadata
from ..io.idx import idx_content_sha256
from ..progress import progress, quiet_datasets
from .core import load
from .rowmap import Official, map_rows
from .split import DatasetSplit

__all__ = ["PARTITIONERS", "content_hash", "partition_rows", "read_partitions", "write_partitions"]

FORMAT, VERSION, FILE = "mnistforge-partitions", 1, "partitions.json"   # and the fields a manifest needs:
NEED = {"format": str, "version": int, "dataset": str, "split": str, "rows": int, "content_sha256": dict,
        "partitioner": dict, "partitions": list}
#: the column a writer partition reads (as the Hugging Face exports name it); the global row index
WRITER, ROW = "writer_id", "row_id"
#: ``--by`` -> (the ``flwr_datasets.partitioner`` class, its keyword arguments) for (partitions, alpha, seed)
PARTITIONERS: dict[str, Callable[[int, float, int], tuple[str, dict[str, Any]]]] = {
    "writer": lambda n, alpha, seed: ("NaturalIdPartitioner", {"partition_by": WRITER}),
    "dirichlet": lambda n, alpha, seed: ("DirichletPartitioner", {"num_partitions": n, "partition_by": "label",
        "alpha": alpha, "min_partition_size": 10, "self_balancing": False, "shuffle": True, "seed": seed}),
    "iid": lambda n, alpha, seed: ("IidPartitioner", {"num_partitions": n}),
}


def content_hash(ds: DatasetSplit) -> dict[str, str]:
    """The content sha256 of the split's images (as stored) and labels: the registry's ``content_sha256``."""
    images = ds.images.transpose(0, 2, 1) if ds.info.orientation == "transposed" else ds.images
    return {"images": idx_content_sha256(images), "labels": idx_content_sha256(ds.labels.astype(np.uint8))}


def _counts(labels: npt.NDArray[np.int64]) -> dict[str, int]:  # rows per label present
    return {str(k): int(v) for k, v in zip(*np.unique(labels, return_counts=True))}


def _writers(ds: DatasetSplit) -> npt.NDArray[Any] | None:  # named as the exports name it (writer_id)
    meta = export_metadata(ds.metadata)
    return meta[WRITER] if meta is not None and WRITER in (meta.dtype.names or ()) else None


def write_partitions(ds: DatasetSplit, by: str, out: PathArg, *, partitions: int = 10, alpha: float = 0.5,
                     seed: int = 0, parquet: bool = False, inputs: Sequence[PathArg | None] = ()) -> Path:
    """Partition ``ds`` with Flower Datasets (shuffled by ``seed`` first, as ``FederatedDataset`` does) into ``out``."""
    fl = require("flwr_datasets", "fl", "partitions (mnistforge partition)")
    cls, params = PARTITIONERS[by](partitions, alpha, seed)
    if by != "writer" and partitions > len(ds):   # (IidPartitioner would give empty ones)
        raise ConfigError("more partitions than rows", expected=f"1..{len(ds)}", found=partitions)
    # datasets' bars only on a terminal (as ours); Flower's own bar and Dirichlet's retry warnings never
    with quiet_datasets(), warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore", UserWarning)
        partitioner = getattr(fl.partitioner, cls)(**params)
        partitioner.dataset = require("datasets", "fl", "partitions").Dataset.from_dict({ROW: np.arange(len(ds)),
            "label": ds.labels, **({} if (w := _writers(ds)) is None else {WRITER: w})}).shuffle(seed=seed)
        try:
            rows = [np.asarray(partitioner.load_partition(i)[ROW], np.int64) for i in range(partitioner.num_partitions)]
        except (ValueError, KeyError) as err:  # Dirichlet: no draw gave every partition its minimum size
            raise ConfigError(f"{cls} could not partition {ds.name} {ds.split}", found=str(err).rstrip(". "),
                              hint="fewer partitions, another --alpha/--seed, or (by writer) a split with a writer "
                                   "per row: an EMNIST, FEMNIST or QMNIST build, EMNIST's .mat files") from None
    entries = [{"id": i, "size": int(r.size), "rows_sha256": sha256_parts(r.astype(">i8").tobytes()),
                "label_counts": _counts(ds.labels[r]), "rows": r.tolist(),
                **({"natural_id": int(partitioner.partition_id_to_natural_id[i])} if by == "writer" else {})}
               for i, r in enumerate(rows)]
    doc = {"format": FORMAT, "version": VERSION, "dataset": ds.name, "split": ds.split, "rows": len(ds),
           "content_sha256": content_hash(ds), "partitioner": {"class": cls, "params": params, "seed": seed},
           "flwr_datasets": fl.__version__, "partitions": entries}
    with quiet_datasets(), atomic_dir(out, inputs=inputs) as tmp:
        full: Any = ds.to_hf().add_column(ROW, np.arange(len(ds))) if parquet else None
        for e in progress(entries if parquet else [], desc="parquet", unit="partition"):
            full.select(e["rows"]).to_parquet(f := tmp / f"partition_{e['id']}.parquet")
            e["parquet"] = {"file": f.name, "sha256": sha256_file(f)}
        # indented, every list of numbers on one line
        (tmp / FILE).write_text(re.sub(r"\[[\d,\s]+\]", lambda m: re.sub(r"\s+", "", m.group()),
                                       json.dumps(doc, indent=1)) + "\n")
    return Path(out) / FILE


def read_partitions(path: PathArg) -> dict[str, Any]:
    """A partition manifest (the file, or the folder holding ``partitions.json``), its form checked."""
    p = Path(path) / FILE if Path(path).is_dir() else Path(path)
    if not p.is_file():  # (a FIFO would block the read)
        raise FormatError("no partition manifest", path=p, expected=f"a regular file ({FILE})",
                          found="another kind of file" if p.exists() else "nothing there")
    try:
        doc = json.loads(p.read_bytes())
        bad = [f"{k} not a {t.__name__}" for k, t in NEED.items() if not isinstance(doc[k], t)] + [
            f"partitions[{i}] rows or counts not integers 0..2**53" for i, e in enumerate(
            doc["partitions"]) if not isinstance(e["rows_sha256"], str) or not all(
            type(x) is int and 0 <= x < 2**53 for x in e["rows"] + list(e["label_counts"].values()))]
    except (ValueError, KeyError, TypeError, AttributeError) as err:  # not JSON; a field missing or of another kind
        bad = [f"{'not JSON' if isinstance(err, ValueError) else 'no such fields'} ({type(err).__name__}: {err})"]
    if bad or (doc["format"], doc["version"]) != (FORMAT, VERSION):
        raise FormatError("not a partition manifest mnistforge reads", path=p,
                          expected=f"JSON: {FORMAT} version {VERSION} with {', '.join(NEED)}",
                          found=", ".join(bad) if bad else f"{doc['format']} version {doc['version']}")
    return {**doc, "_path": str(p)}


def _official_of(copy: DatasetSplit, ref: DatasetSplit) -> npt.NDArray[np.int64]:
    """Each row of ``copy`` -> its row in ``ref`` (-1: none), by a row map."""
    _, first, inv = np.unique(ref.images.reshape(len(ref), -1), axis=0, return_index=True, return_inverse=True)
    rep = map_rows(copy.images, copy.labels, [Official(ref.name, ref.split, ref.images[first], ref.labels[first])],
                   dataset=ref.name, claimed=ref.split).official_index
    off = np.where(rep >= 0, first[rep], -1)
    for g in np.flatnonzero(np.bincount(inv.ravel()) > 1):  # identical images (LEAF doubles some): paired by label
        mine, ids = np.flatnonzero(rep == g), np.flatnonzero(inv == g)
        mine, ids = mine[np.argsort(copy.labels[mine], kind="stable")], ids[np.argsort(ref.labels[ids], kind="stable")]
        off[mine] = np.r_[ids, np.full(mine.size, -1)][:mine.size]
    return off


def partition_rows(manifest: PathArg | dict[str, Any], copy: DatasetSplit | None = None, *,
                   reference: PathArg | None = None) -> list[npt.NDArray[np.int64]]:
    """Each partition's rows in ``copy`` (any copy of the split; default: the split itself), in the manifest's order,
    once the manifest is checked against the split (from ``reference``, a folder, else the cache) and the copy's
    labels against it: where they differ, :class:`~mnistforge.errors.IntegrityError` names the partition."""
    doc = manifest if isinstance(manifest, dict) else read_partitions(manifest)
    ref = load(doc["dataset"], doc["split"], root=reference, with_metadata="files")
    n, writers = len(ref), _writers(ref)
    every = np.concatenate([np.zeros(0, np.int64)] + [np.asarray(e["rows"], np.int64) for e in doc["partitions"]])
    if doc["content_sha256"] != content_hash(ref) or every.size != n or np.unique(every).size != n:
        raise IntegrityError(f"the manifest does not partition {ref.name} {ref.split} ({ref.source})",
                             path=doc.get("_path"), found=f"{doc['content_sha256']}, {every.size} row ids "
                             f"({np.unique(every).size} distinct)",
                             expected=f"content sha256 {content_hash(ref)}, each of its {n} rows in one partition")
    copy = ref if copy is None else copy
    off = np.arange(n) if copy is ref else _official_of(copy, ref)
    pos = np.full(n, -1, np.int64)
    pos[off[off >= 0]] = np.flatnonzero(off >= 0)
    out = []
    for i, e in enumerate(doc["partitions"]):
        ids = np.asarray(e["rows"], np.int64)

        def refuse(what: str, expected: object, found: object, hint: str = "an edited or damaged manifest") -> NoReturn:
            raise IntegrityError(f"partition {i}: {what}", path=doc.get("_path"), expected=expected, found=found,
                                 hint=hint)
        if (sha := sha256_parts(ids.astype(">i8").tobytes())) != e["rows_sha256"]:
            refuse("its rows are not those its rows_sha256 records", e["rows_sha256"], sha)
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            refuse("row ids out of range", f"0..{n - 1}", f"{ids.min()}..{ids.max()}")
        if (counts := _counts(ref.labels[ids])) != e["label_counts"]:
            refuse("label counts differ", e["label_counts"], counts)
        mine = None if "natural_id" not in e or writers is None else np.flatnonzero(writers == e["natural_id"])
        if mine is not None and not np.array_equal(np.sort(ids), mine):
            refuse(f"not the rows of writer {e['natural_id']}", f"its {mine.size} rows", f"{ids.size} rows")
        if ((rows := pos[ids]) < 0).any() or (counts := _counts(copy.labels[rows])) != e["label_counts"]:
            gone = ids[rows < 0]
            refuse("not in the copy as recorded", f"its {ids.size} rows, label counts {e['label_counts']}",
                   f"{gone.size} rows missing (official rows {gone[:5].tolist()}...)" if gone.size else
                   f"label counts {counts} (relabelled rows)", hint="a copy of another split, or a damaged one")
        out.append(rows)
    return out
