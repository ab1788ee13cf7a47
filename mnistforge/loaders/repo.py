"""Load a split from a Hugging Face repository folder exported by mnistforge (``load(..., root=REPO)``)."""
from __future__ import annotations

import numpy as np

from ..errors import MnistforgeError
from ..io.hf.repo import read_split
from ..io.hf.schema import hf_split_name
from ..registry import DatasetInfo, get_dataset
from .split import DatasetSplit


def load_split_from_repo(repo_dir, name: str, split: str, *, with_metadata: bool = False):
    """``mnistforge.load(name, split, root=repo_dir)`` on an exported repository.

    Returns a :class:`mnistforge.loaders.DatasetSplit` equal to what the idx
    files give: same images, labels and classes; with ``with_metadata`` the
    registry's metadata fields in registry order (QMNIST's ``label`` column,
    not stored twice in the export, is restored from the labels).
    """
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
                      source=f"hf repository {repo_dir}", status={}, orientation="upright")
    ds.classes = list(classes)
    return ds


