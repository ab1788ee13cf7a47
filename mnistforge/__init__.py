"""mnistforge: rebuild the MNIST family from NIST SD19 and the tools to trust it.

Examples
--------
>>> import mnistforge
>>> ds = mnistforge.load("mnist", "test")          # doctest: +SKIP
>>> ds.images.shape                                # doctest: +SKIP
(10000, 28, 28)
"""
from __future__ import annotations

from ._version import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up stays cheap)
if TYPE_CHECKING:
    from typing import Any

    from .loaders.core import load

__all__ = ["load", "__version__"]


def __getattr__(name: str) -> Any:
    # Lazy: importing the package must stay cheap (the CLI imports it for --version).
    if name == "load":
        from .loaders import load

        globals()["load"] = load  # resolved once: later calls skip this hook
        return load
    raise AttributeError(name)
