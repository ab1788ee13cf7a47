"""Load a split from a Hugging Face repository folder exported by mnistforge (``load(..., root=REPO)``)."""
from __future__ import annotations

import numpy as np

from ..errors import IntegrityError, MnistforgeError
from ..io.hf.repo import config_is_synthetic, read_split, repo_configs, shard_paths
from ..io.hf.schema import hf_split_name
from ..registry import DatasetInfo, get_dataset
from .split import DatasetSplit


def _rows(repo_dir, name: str, split: str) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(p).metadata.num_rows for p in shard_paths(repo_dir, name, split))


def _view_of(repo_dir, name: str, split: str, with_metadata: bool):
    """A registry view (``validation``, ``test10k``...) the export did not store, from its base split."""
    try:
        info = get_dataset(name)
        sp = info.split(split)
    except MnistforgeError:
        return None
    if not sp.is_view or hf_split_name(split) in repo_configs(repo_dir).get(name, {}):
        return None
    base = load_split_from_repo(repo_dir, name, sp.of or "", with_metadata=with_metadata)
    n = len(base)
    if sp.rows is not None:
        rows = slice(sp.rows[0], sp.rows[1])
    else:
        k = _rows(repo_dir, name, sp.last or sp.drop_last or "")
        if k > n:
            raise IntegrityError(f"{name}: {split} larger than {sp.of}", path=repo_dir,
                                 expected=f"at most {n} rows", found=str(k))
        rows = slice(n - k, n) if sp.last else slice(0, n - k)
    view = base.select(rows, split=split)
    view.indices = None  # the whole of this split, as when loaded from idx files
    return view


def load_split_from_repo(repo_dir, name: str, split: str, *, with_metadata: bool = False):
    """``mnistforge.load(name, split, root=repo_dir)`` on an exported repository.

    Returns a :class:`mnistforge.loaders.DatasetSplit` equal to what the idx
    files give: same images, labels and classes; with ``with_metadata`` the
    registry's metadata fields in registry order (QMNIST's ``label`` column,
    not stored twice in the export, is restored from the labels).
    """
    view = _view_of(repo_dir, name, split, with_metadata)
    if view is not None:
        return view
    images, labels, classes, meta = read_split(repo_dir, name, split)
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
                      source=f"hf repository {repo_dir}", status={}, stored_orientation="upright")
    ds.classes = list(classes)
    ds.synthetic = config_is_synthetic(repo_dir, name)
    return ds
