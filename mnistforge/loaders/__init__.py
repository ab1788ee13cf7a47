"""Loaders: ``load(name, split, root=None)`` for official and built files, one code path.

* :func:`load` -> :class:`DatasetSplit` (``images`` upright uint8 N x 28 x 28,
  ``labels``, ``classes``, ``metadata``, ``to_numpy``/``to_torch``/``to_hf``).
* :func:`resolve_target` parses CLI targets (``NAME``, ``NAME:SPLIT``,
  ``FOLDER``, ``FOLDER:SPLIT``, ``FOLDER:NAME:SPLIT``).
* :func:`hf_features` is the Hugging Face schema of a split (the export's, from
  :mod:`mnistforge.io.hf.schema`).
* :func:`save_grid` draws a labelled sample grid PNG (Pillow only).

Examples
--------
>>> from mnistforge.loaders import resolve_target
>>> resolve_target("mnist:test")
('mnist', 'test', None)
"""
from .convert import hf_columns, hf_features, to_hf, to_torch
from .core import load
from .split import DatasetSplit
from .targets import datasets_in_folder, detect_dataset, resolve_target
from .grid import grid_title, render_grid, save_grid

__all__ = ["load", "resolve_target", "detect_dataset", "datasets_in_folder", "DatasetSplit", "hf_features",
           "hf_columns", "to_hf", "to_torch", "save_grid", "render_grid", "grid_title"]
