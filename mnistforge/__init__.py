"""mnistforge: rebuild the MNIST family from NIST SD19 and the tools to trust it.

>>> import mnistforge
>>> ds = mnistforge.load("mnist", "test")          # doctest: +SKIP
>>> ds.images.shape                                # doctest: +SKIP
(10000, 28, 28)
"""
from __future__ import annotations

from ._version import __version__
from .loaders.core import load
from .loaders.partitions import partition_rows

__all__ = ["load", "partition_rows", "__version__"]
