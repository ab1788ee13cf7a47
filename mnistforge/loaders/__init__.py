"""Loaders: :func:`load` -> :class:`DatasetSplit` (the cache, idx folders, Hugging Face exports,
third-party copies), :func:`resolve_target`, :func:`hf_features`, :func:`writer_split`.

>>> resolve_target("mnist:test")
('mnist', 'test', None)
"""
from __future__ import annotations

from .convert import hf_columns, hf_features, to_hf, to_torch
from .core import load
from .split import DatasetSplit
from .targets import datasets_in_folder, detect_dataset, resolve_target
from .writers import ClassBalance, WriterSplit, writer_split

__all__ = ["load", "resolve_target", "detect_dataset", "datasets_in_folder", "DatasetSplit", "hf_features",
           "hf_columns", "to_hf", "to_torch", "writer_split", "WriterSplit", "ClassBalance"]
