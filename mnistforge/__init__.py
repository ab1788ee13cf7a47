"""mnistforge: rebuild the MNIST family from NIST SD19 and the tools to trust it.

Examples
--------
>>> import mnistforge
>>> ds = mnistforge.load("mnist", "test")          # doctest: +SKIP
>>> ds.images.shape                                # doctest: +SKIP
(10000, 28, 28)
"""
from ._version import __version__

__all__ = ["load", "__version__"]


def __getattr__(name):
    # Lazy: importing the package must stay cheap (the CLI imports it for --version).
    if name == "load":
        from .loaders import load

        globals()["load"] = load  # resolved once: later calls skip this hook
        return load
    raise AttributeError(name)
