"""The trust gate, which every route into the data passes: **what the data is**, from content
(:mod:`.content`, :mod:`.files`), **that it is intact** (recorded hashes, :mod:`mnistforge.cache.seen`),
**that it is well formed** (:mod:`.formed`); what each route checks: :data:`.policy.POLICY`.
"""
from __future__ import annotations

from .arrays import Admission, admit
from .policy import POLICY, Rule

__all__ = ["Admission", "POLICY", "Rule", "admit"]
