"""Progress bars: tqdm, off when stderr is not a terminal or when asked.

Set ``MNISTFORGE_PROGRESS=0`` to silence them everywhere, ``=1`` to force them
(:func:`mnistforge.settings.progress`).
"""
from __future__ import annotations

import sys

from . import settings


def _tqdm_class():
    # tqdm.auto would import asyncio (and notebook widgets) on every load: pick the
    # notebook bar only inside a Jupyter kernel, the plain one everywhere else.
    if "ipykernel" in sys.modules:
        from tqdm.autonotebook import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm


def progress(iterable=None, *, total=None, desc=None, unit="it", disable=None, **kw):
    """Return a tqdm bar that is only shown on a terminal (see module doc).

    Examples
    --------
    >>> sum(progress(range(3), desc="demo", disable=True))
    3
    """
    return _tqdm_class()(iterable, total=total, desc=desc, unit=unit,
                         disable=not settings.progress(disable), dynamic_ncols=True, **kw)
