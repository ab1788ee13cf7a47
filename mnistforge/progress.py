"""Progress bars: tqdm, off when stderr is not a terminal or when asked.

Set ``MNISTFORGE_PROGRESS=0`` to silence them everywhere, ``=1`` to force them.
"""
from __future__ import annotations

import os
import sys

from tqdm.auto import tqdm


def progress_enabled(disable: bool | None = None) -> bool:
    if disable is not None:
        return not disable
    env = os.environ.get("MNISTFORGE_PROGRESS")
    if env is not None:
        return env not in ("0", "false", "no", "")
    return sys.stderr.isatty()


def progress(iterable=None, *, total=None, desc=None, unit="it", disable=None, **kw):
    """Return a tqdm bar that is only shown on a terminal (see module doc).

    Examples
    --------
    >>> sum(progress(range(3), desc="demo", disable=True))
    3
    """
    return tqdm(iterable, total=total, desc=desc, unit=unit,
                disable=not progress_enabled(disable), dynamic_ncols=True, **kw)
