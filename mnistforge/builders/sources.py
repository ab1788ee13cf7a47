"""For every builder: what its manifest records of the SD19 source it read (``inputs``), and
the threaded conversion of the characters it reads."""
from __future__ import annotations

import concurrent.futures as cf
import os
from collections.abc import Callable
from typing import Any, Sized

import numpy as np

from ..errors import BuildError
from ..sd19.reader import SD19Source
from ..io.hashing import sha256_file


def sd19_inputs(src: object, sd19: str | os.PathLike[str], index: Sized, *, missing: list[str] | None = None,
                inconsistent: list[str] | None = None, syn: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The manifest's ``inputs`` for a build from ``src`` (an opened SD19, ``sd19`` its path):
    path, fingerprint, edition, character count, what it lacks or repeats (when built with
    consent) and the sha256 of a synthetic replica's description."""
    return {"sd19": str(getattr(src, "path", sd19)), "sd19_fingerprint": getattr(src, "fingerprint", None),
            "sd19_edition": getattr(src, "edition", None), "sd19_characters": int(len(index)),
            **({"sd19_missing": missing} if missing else {}),
            **({"sd19_inconsistent": inconsistent} if inconsistent else {}),
            **({"sd19_synthetic_description_sha256": sha256_file(syn)} if syn is not None else {})}


def convert_threaded(src: SD19Source, rows: np.ndarray, job: Callable[[int, np.ndarray], int],
                     workers: int, bar: Any, *, batch_size: int = 4096) -> None:
    """Read SD19 ``rows`` in order and hand each batch, split in one share per thread, to
    ``job(start, images)`` (which stores them from position ``start`` and returns how many)."""
    pos = 0
    with bar, cf.ThreadPoolExecutor(workers) as pool:
        pending: list[cf.Future[int]] = []
        for got, imgs in src.read(rows, batch_size=batch_size):
            if len(got) and not np.array_equal(got, rows[pos:pos + len(got)]):
                raise BuildError("SD19 reader returned rows out of order",
                                 expected="the requested order", found="another order")
            for part in np.array_split(np.arange(len(imgs)), workers):
                if len(part):
                    pending.append(pool.submit(job, pos + part[0], imgs[part[0]:part[-1] + 1]))
            pos += len(got)
            while len(pending) > 2 * workers:
                bar.update(pending.pop(0).result())
        for f in pending:
            bar.update(f.result())
    if pos != len(rows):
        raise BuildError("SD19 reader returned too few characters", expected=f"{len(rows)} rows", found=f"{pos}")
