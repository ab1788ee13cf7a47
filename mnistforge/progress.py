"""Progress bars: tqdm, off when stderr is not a terminal or when asked.

Set ``MNISTFORGE_PROGRESS=0`` to silence them everywhere, ``=1`` to force them
(:func:`mnistforge.settings.progress`).
"""
from __future__ import annotations

from tqdm.auto import tqdm

from . import settings


def progress(iterable=None, *, total=None, desc=None, unit="it", disable=None, **kw):
    """Return a tqdm bar that is only shown on a terminal (see module doc).

    Examples
    --------
    >>> sum(progress(range(3), desc="demo", disable=True))
    3
    """
    return tqdm(iterable, total=total, desc=desc, unit=unit,
                disable=not settings.progress(disable), dynamic_ncols=True, **kw)
