"""Progress: tqdm bars on a terminal; off one (``make demo > log``, CI) a long step writes a line
now and then instead (:class:`Lines`).  ``MNISTFORGE_PROGRESS=0`` (``--no-progress``) silences
both, ``=1`` forces the bars (:attr:`mnistforge.settings.Settings.bars`).
"""
from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from . import settings

#: seconds between two lines of one step off a terminal (the first comes after as long)
EVERY = 10.0


def _tqdm_class() -> Any:  # the tqdm class (tqdm ships no type hints)
    # tqdm.auto imports asyncio and notebook widgets on every load: the notebook bar in Jupyter only
    if "ipykernel" in sys.modules:
        from tqdm.autonotebook import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm


def progress(iterable: Iterable[Any] | None = None, *, total: float | None = None, desc: str | None = None,
             unit: str = "it", disable: bool | None = None, **kw: Any) -> Any:
    """A tqdm bar on a terminal, :class:`Lines` off one unless silenced (see module doc).

    >>> sum(progress(range(3), desc="demo", disable=True))
    3
    """
    now = settings.current()
    if disable is None and not now.bars and now.progress is None:
        return Lines(iterable, total=total, desc=desc, unit=unit, initial=kw.get("initial", 0))
    return _tqdm_class()(iterable, total=total, desc=desc, unit=unit,
                         disable=not now.bars if disable is None else disable, dynamic_ncols=True, **kw)


class Lines(contextlib.AbstractContextManager["Lines"]):
    """A step's progress off a terminal: a line on stderr (the step, how far, seconds since it
    began) at most every :data:`EVERY` seconds, the last as it ends; a bar's methods.

    >>> clock = iter([0, 4, 11, 15, 26]).__next__
    >>> with Lines(total=3, desc="write", unit="file", clock=clock, file=sys.stdout) as bar:
    ...     bar.update(); bar.update(); bar.update()
    write: 2/3 file, 11 s
    write: done, 3/3 file, 26 s
    """

    def __init__(self, iterable: Iterable[Any] | None = None, *, total: float | None = None,
                 desc: str | None = None, unit: str = "it", initial: float = 0,
                 clock: Callable[[], float] = time.monotonic, file: IO[str] | None = None) -> None:
        self.iterable, self.total, self.desc, self.unit, self.n = iterable, total, desc, unit, initial
        self.clock, self.file, self.postfix, self.closed = clock, file, "", False
        self.start = self.said = clock()

    def __iter__(self) -> Iterator[Any]:
        for x in self.iterable or ():
            yield x
            self.update()
        self.close()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: float = 1) -> None:
        self.n += n
        self._say("")

    def set_postfix(self, *args: Any, **kw: Any) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in {**dict(*args), **kw}.items())

    def close(self) -> None:
        self._say(" done,")
        self.closed = True

    def _say(self, end: str) -> None:
        now = self.clock()
        if self.closed or now - self.said < EVERY:
            return
        self.said = now
        of = f"/{self.total:,.0f}" if self.total else ""
        print(f"{self.desc or 'working'}:{end} {self.n:,.0f}{of} {self.unit}, {now - self.start:.0f} s"
              + (f" ({self.postfix})" if self.postfix else ""), file=self.file or sys.stderr, flush=True)


@contextlib.contextmanager
def quiet_datasets(disable: bool | None = None) -> Iterator[None]:
    """Silence the ``datasets`` library's own bars ("Generating train split") while ours are off."""
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
