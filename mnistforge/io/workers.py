"""Process pools whose failures are named and whose workers never outlive their parent.

* :func:`parallel_tasks` runs the evaluations' independent tasks through joblib: on the local
  loky pool, or on the backend of the caller's ``joblib.parallel_config`` (Dask, Ray).
* A worker that dies (killed, out of memory) makes :class:`concurrent.futures.ProcessPoolExecutor`
  raise a raw ``BrokenProcessPool`` (loky: its subclass ``TerminatedWorkerError``);
  :func:`named_worker_errors` turns it into :class:`~mnistforge.errors.WorkerError` saying what
  was running and what to do.
* A worker whose parent is killed could stay blocked on its task queue for ever (the siblings
  hold the queue's other end open; loky's idle ones time out after minutes).  Every worker of
  :func:`process_pool`, and every loky worker of :func:`parallel_tasks`, runs a small watchdog
  thread that ends the worker once its parent is gone (checked every :data:`WATCH_SECONDS`).

>>> with named_worker_errors("squaring"), process_pool(2) as ex:
...     sorted(ex.map(abs, [-2, 1]))
[1, 2]
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.context import BaseContext
from numbers import Integral
from typing import Any, TypeVar

import joblib

from .. import settings
from ..errors import ConfigError, WorkerError

#: How often a worker checks that its parent still lives.
WATCH_SECONDS = 1.0
T = TypeVar("T")


def _watch(parent: int) -> None:
    while True:
        time.sleep(WATCH_SECONDS)
        if os.getppid() != parent:
            os._exit(3)  # the parent is gone: nobody will read our results


def watch_parent(parent: int, initializer: Callable[..., object] | None = None, initargs: tuple[Any, ...] = (),
                 given: settings.Overrides | None = None) -> None:
    """Worker initializer: start the watchdog, take the parent's settings (``given``: what
    :func:`mnistforge.settings.using` made active there, lost by a spawned worker otherwise),
    then run ``initializer(*initargs)``."""
    threading.Thread(target=_watch, args=(parent,), name="mnistforge-parent-watch", daemon=True).start()
    if given is not None:
        settings.activate(given)
    if initializer is not None:
        initializer(*initargs)


def process_pool(workers: int, *, initializer: Callable[..., object] | None = None,
                 initargs: tuple[Any, ...] = (), mp_context: BaseContext | None = None) -> cf.ProcessPoolExecutor:
    """A :class:`~concurrent.futures.ProcessPoolExecutor` whose workers end with their parent."""
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp_context, initializer=watch_parent,
                                  initargs=(os.getpid(), initializer, initargs, settings.given()))


@contextlib.contextmanager
def named_worker_errors(what: str) -> Iterator[None]:
    """Turn a dead worker's ``BrokenProcessPool`` into :class:`~mnistforge.errors.WorkerError`."""
    try:
        yield
    except BrokenProcessPool as e:
        raise WorkerError(f"a worker process died while {what}", found=str(e) or "a dead worker",
                          hint="it was killed or ran out of memory: nothing half-written was "
                               "kept; run again, with fewer --workers if memory is short") from None


def parallel_tasks(fn: Callable[..., T], tasks: Iterable[tuple[Any, ...]], what: str,
                   workers: int | None = None) -> Iterator[T]:
    """``fn(*task)`` for each task, yielded in task order, as joblib tasks: on ``workers`` processes
    of the local loky pool (watched, with this process's settings), or (None) as the caller's
    ``joblib.parallel_config`` says (Dask, Ray: ``fn`` and its arguments go by cloudpickle;
    outside one: in this process).

    >>> list(parallel_tasks(abs, [(-2,), (1,)], "testing"))
    [2, 1]
    """
    n_jobs(workers)
    local = joblib.parallel_config("loky", initializer=watch_parent, initargs=(
        os.getpid(), None, (), settings.given())) if workers else contextlib.nullcontext()
    with local:   # read here: not left on while the caller runs between two results
        run = joblib.Parallel(n_jobs=workers, return_as="generator")
    with named_worker_errors(what):
        yield from run(joblib.delayed(fn)(*t) for t in tasks)


def n_jobs(workers: int | None) -> int:
    """The processes ``workers`` gives (None: joblib's context), checked: ``>= 1`` or None."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, Integral) or workers < 1):
        raise ConfigError("invalid number of workers", expected="a whole number >= 1 (None: joblib's "
                          "parallel_config)", found=repr(workers))
    return int(joblib.effective_n_jobs(workers))
