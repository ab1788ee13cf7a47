"""Loaders: ``load(name, split, root=None)`` for official and built files, one code path.

* :func:`load` -> :class:`DatasetSplit` (``images`` upright uint8 N x 28 x 28,
  ``labels``, ``classes``, ``metadata``, ``to_numpy``/``to_torch``/``to_hf``).
* :func:`resolve_target` parses CLI targets (``NAME``, ``NAME:SPLIT``,
  ``FOLDER``, ``FOLDER:SPLIT``, ``FOLDER:NAME:SPLIT``).
* :func:`hf_features` is the Hugging Face schema of a split (the export's, from
  :mod:`mnistforge.io.hf.schema`).
* :func:`writer_split` re-splits loaded splits by writer (no writer on both sides), with
  the class balance of each side (:class:`WriterSplit`, :class:`ClassBalance`).

Examples
--------
>>> from mnistforge.loaders import resolve_target
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
