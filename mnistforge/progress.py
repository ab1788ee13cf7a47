"""Progress bars: tqdm, off when stderr is not a terminal or when asked.

Set ``MNISTFORGE_PROGRESS=0`` to silence them everywhere, ``=1`` to force them
(:attr:`mnistforge.settings.Settings.bars`).
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from . import settings


def _tqdm_class() -> Any:  # the tqdm class (tqdm ships no type hints)
    # tqdm.auto would import asyncio (and notebook widgets) on every load: pick the
    # notebook bar only inside a Jupyter kernel, the plain one everywhere else.
    if "ipykernel" in sys.modules:
        from tqdm.autonotebook import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm


def progress(iterable: Iterable[Any] | None = None, *, total: float | None = None, desc: str | None = None,
             unit: str = "it", disable: bool | None = None, **kw: Any) -> Any:
    """Return a tqdm bar that is only shown on a terminal (see module doc).

    >>> sum(progress(range(3), desc="demo", disable=True))
    3
    """
    return _tqdm_class()(iterable, total=total, desc=desc, unit=unit,
                         disable=not settings.current().bars if disable is None else disable, dynamic_ncols=True, **kw)


@contextlib.contextmanager
def quiet_datasets(disable: bool | None = None) -> Iterator[None]:
    """Silence the ``datasets`` library's own bars ("Generating train split") while ours are off.

    >>> with quiet_datasets(disable=True):
    ...     pass
    """
    if settings.current(progress=None if disable is None else not disable).bars:
        yield
        return
    try:
        import datasets
    except ImportError:
        yield
        return
    was = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was:
            datasets.enable_progress_bars()
