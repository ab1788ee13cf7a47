"""sources: SD19 readers and index, synthetic SD19, downloads.

Examples
--------
>>> from mnistforge.sources import open_sd19   # doctest: +SKIP
"""


def __getattr__(name):
    # Lazy, so that importing a sibling module does not pull in the readers.
    if name in ("open_sd19", "SD19Source"):
        from . import sd19
        return getattr(sd19, name)
    raise AttributeError(name)
