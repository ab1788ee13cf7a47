"""Conversions of a loaded split: PyTorch (optional) and Hugging Face ``datasets``.

The Hugging Face schema is :func:`mnistforge.io.hf.schema.features_for`, the
same definition the export writes, so loaded and exported datasets agree.
"""
from __future__ import annotations

import numpy as np

from ..errors import MissingDependencyError
from ..io.hf.schema import features_for, metadata_columns

__all__ = ["hf_features", "hf_columns", "to_hf", "to_torch"]


def hf_features(split_obj):
    """The :class:`datasets.Features` of a loaded split (see :func:`~mnistforge.io.hf.schema.features_for`).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> f = hf_features(SimpleNamespace(classes=["0", "1"], metadata=None))
    >>> list(f), f["label"].names
    (['image', 'label'], ['0', '1'])
    """
    meta = getattr(split_obj, "metadata", None)
    return features_for(split_obj.classes, None if meta is None else meta.dtype)


def hf_columns(split_obj, rows=None) -> dict:
    """Column data for :func:`hf_features` (images as ``uint8`` arrays), optionally for ``rows``."""
    sl = slice(None) if rows is None else rows
    images = np.asarray(split_obj.images[sl])
    cols = {"image": list(images), "label": np.asarray(split_obj.labels[sl]).tolist()}
    meta = split_obj.metadata
    for f in metadata_columns(None if meta is None else meta.dtype):
        cols[f] = np.asarray(meta[f][sl]).tolist()
    return cols


def to_hf(split_obj):
    """A :class:`datasets.Dataset` of the split (PNG-encoded images, class labels, metadata)."""
    from datasets import Dataset

    return Dataset.from_dict(hf_columns(split_obj), features=hf_features(split_obj))


def to_torch(split_obj):
    """``torch.utils.data.TensorDataset(images, labels)`` (uint8 N x 28 x 28, int64 N).

    torch is imported here only; a MissingDependencyError explains how to install it.
    """
    try:
        import torch
        from torch.utils.data import TensorDataset
    except ModuleNotFoundError as e:
        raise MissingDependencyError("PyTorch is not installed", expected="the torch package",
                                     found=str(e), hint="pip install 'mnistforge[torch]'") from None
    images = torch.from_numpy(np.ascontiguousarray(split_obj.images))
    labels = torch.from_numpy(np.asarray(split_obj.labels, dtype=np.int64))
    return TensorDataset(images, labels)
