"""The trust gate: every route into the data passes here before an array reaches a caller.

It decides **what the data is**, from content, images included (:mod:`.content`; folders:
:mod:`.files`; a name the content contradicts raises
:class:`~mnistforge.errors.DataMismatchError` unless ``trust_files=True``), **that it is
intact** (recorded hashes, trusted while the file keeps its identity:
:mod:`mnistforge.cache.seen`) and **that it is well formed** (:mod:`.formed`).  What each route
checks is one table, :data:`.policy.POLICY`; arrays from any route go through :func:`admit`.
"""
from __future__ import annotations

from .arrays import Admission, admit
from .policy import POLICY, Rule

__all__ = ["Admission", "POLICY", "Rule", "admit"]
