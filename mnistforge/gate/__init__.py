"""The trust gate: every route into the data passes here before an array reaches a caller.

One place decides, for the official cache, idx and build folders, third-party copies
(``.npz``, ``.npy``, CSV, parquet, torchvision, EMNIST ``.mat``) and Hugging Face exports:

* **what the data is**, from content, images included (:mod:`.content`; folders:
  :mod:`.files`): a name the content contradicts raises
  :class:`~mnistforge.errors.DataMismatchError` saying what it is (``trust_files=True``
  is the explicit opt-out);
* **that it is intact**: recorded hashes (registry, build manifest) checked the first time
  a file is seen, then trusted while it keeps its identity (:mod:`mnistforge.cache.seen`);
* **that it is well formed** (:mod:`.formed`): shape, type, pixel and class range.

What each route checks is one table, :data:`.policy.POLICY`.  Arrays from any route go
through :func:`admit`.
"""
from __future__ import annotations

from .arrays import Admission, admit
from .policy import POLICY, Rule

__all__ = ["Admission", "POLICY", "Rule", "admit"]
