"""Loaders: ``load(name, split, root=None)`` for official and built files, one code path.

* :func:`load` -> :class:`DatasetSplit` (``images`` upright uint8 N x 28 x 28,
  ``labels``, ``classes``, ``metadata``, ``to_numpy``/``to_torch``/``to_hf``).
* :func:`resolve_target` parses CLI targets (``NAME``, ``NAME:SPLIT``,
  ``FOLDER``, ``FOLDER:SPLIT``, ``FOLDER:NAME:SPLIT``).
* :func:`hf_features` is the Hugging Face schema of a split (the export's, from
  :mod:`mnistforge.io.hf.schema`).
* :func:`save_grid`, :func:`render_grid`, :func:`grid_title`: a labelled sample grid PNG
  (Pillow only), drawn by :mod:`mnistforge.plotting` (re-exported here for callers of a split).
* :func:`writer_split` re-splits loaded splits by writer (no writer on both sides), with
  the class balance of each side (:class:`WriterSplit`, :class:`ClassBalance`).

Examples
--------
>>> from mnistforge.loaders import resolve_target
>>> resolve_target("mnist:test")
('mnist', 'test', None)
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:  # the names _WHERE resolves lazily, typed for mypy (the drawing ones stay Any)
    from typing import Any

    from .convert import hf_columns, hf_features, to_hf, to_torch
    from .core import load
    from .split import DatasetSplit
    from .targets import datasets_in_folder, detect_dataset, resolve_target
    from .writers import ClassBalance, WriterSplit, writer_split

# Lazy: a one-shot `mnistforge.load(...)` imports only what a load needs, not the
# converters, grids and target parsing.
_WHERE = {
    "load": "core", "DatasetSplit": "split", "resolve_target": "targets", "detect_dataset": "targets",
    "datasets_in_folder": "targets", "hf_features": "convert", "hf_columns": "convert", "to_hf": "convert",
    "to_torch": "convert", "save_grid": ".plotting", "render_grid": ".plotting",  # mnistforge.plotting
    "grid_title": ".plotting",
    "writer_split": "writers", "WriterSplit": "writers", "ClassBalance": "writers",
}

__all__ = ["load", "resolve_target", "detect_dataset", "datasets_in_folder", "DatasetSplit", "hf_features",
           "hf_columns", "to_hf", "to_torch", "save_grid", "render_grid", "grid_title", "writer_split",
           "WriterSplit", "ClassBalance"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value  # resolved once: later look-ups skip this hook
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
