"""Conversions of a loaded split: PyTorch (optional) and Hugging Face ``datasets``.

:func:`hf_features` is the one place that decides the Hugging Face schema of a
split (``image``: :class:`datasets.Image`, ``label``: :class:`datasets.ClassLabel`
with the registry class names, then one ``int32`` column per metadata field);
the Hugging Face export (``formats/hf.py``) reuses it so loaded and exported
datasets agree.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError

__all__ = ["hf_features", "hf_columns", "to_hf", "to_torch"]


def metadata_columns(split_obj) -> list[str]:
    """Metadata fields that become columns (``label`` is skipped: it is the label column)."""
    meta = getattr(split_obj, "metadata", None)
    if meta is None:
        return []
    return [f for f in meta.dtype.names if f != "label"]


def hf_features(split_obj):
    """The :class:`datasets.Features` of a split.

    ``image`` (:class:`datasets.Image`), ``label`` (:class:`datasets.ClassLabel`
    named with ``split_obj.classes``; EMNIST letters keep class 0 as
    ``"N/A (unused)"`` so label values stay those of the files), and one
    ``Value("int32")`` per metadata field (QMNIST: hsf, writer, ...; the
    metadata's own ``label`` column is not repeated).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> f = hf_features(SimpleNamespace(classes=["0", "1"], metadata=None))
    >>> list(f), f["label"].names
    (['image', 'label'], ['0', '1'])
    """
    from datasets import ClassLabel, Features, Image, Value

    feats = {"image": Image(), "label": ClassLabel(names=list(split_obj.classes))}
    for f in metadata_columns(split_obj):
        feats[f] = Value("int32")
    return Features(feats)


def hf_columns(split_obj, rows=None) -> dict:
    """Column data for :func:`hf_features` (images as ``uint8`` arrays), optionally for ``rows``."""
    sl = slice(None) if rows is None else rows
    images = np.asarray(split_obj.images[sl])
    cols = {"image": list(images), "label": np.asarray(split_obj.labels[sl]).tolist()}
    meta = split_obj.metadata
    for f in metadata_columns(split_obj):
        cols[f] = np.asarray(meta[f][sl]).tolist()
    return cols


def to_hf(split_obj):
    """A :class:`datasets.Dataset` of the split (PNG-encoded images, class labels, metadata)."""
    from datasets import Dataset

    ds = Dataset.from_dict(hf_columns(split_obj), features=hf_features(split_obj))
    return ds


def to_torch(split_obj):
    """``torch.utils.data.TensorDataset(images, labels)`` (uint8 N x 28 x 28, int64 N).

    torch is imported here only; a ConfigError explains how to install it.
    """
    try:
        import torch
        from torch.utils.data import TensorDataset
    except ModuleNotFoundError as e:
        raise ConfigError("PyTorch is not installed", expected="the torch package",
                          found=str(e), hint="pip install 'mnistforge[torch]'") from None
    images = torch.from_numpy(np.ascontiguousarray(split_obj.images))
    labels = torch.from_numpy(np.asarray(split_obj.labels, dtype=np.int64))
    return TensorDataset(images, labels)
