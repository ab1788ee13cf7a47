"""sd19: NIST SD19 readers (both editions), the index, the join, and the synthetic replica.

>>> from mnistforge.sd19 import open_sd19   # doctest: +SKIP
"""
from .reader import SD19Source, open_sd19

__all__ = ["SD19Source", "open_sd19"]
