"""sd19: NIST SD19 readers (both editions), the index, the join, and the synthetic replica.

Examples
--------
>>> from mnistforge.sd19 import open_sd19   # doctest: +SKIP
"""
from typing import Any


def __getattr__(name: str) -> Any:
    # Lazy, so that importing a sibling module does not pull in the readers.
    if name in ("open_sd19", "SD19Source"):
        from . import reader
        return getattr(reader, name)
    raise AttributeError(name)
