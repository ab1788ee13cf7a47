"""Will it fit? The memory a request would need, checked before anything is allocated.

One place for the estimate every size check uses: :func:`available_memory` (what the machine can still give,
from ``/proc/meminfo``'s ``MemAvailable``, else ``os.sysconf``) and :func:`require_memory`, which refuses a
request whose arrays would not fit with :class:`~mnistforge.errors.InsufficientMemoryError` saying how much
they would need.  Callers estimate their own arrays (they know their shapes).

>>> format_bytes(584 * 2**30), format_bytes(1536)
('584.0 GiB', '1.5 KiB')
>>> _ = require_memory(1024, "a small array")     # fits: returns the bytes available
>>> require_memory(2**62, "TARP with n=10^8")     # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
...
mnistforge.errors.InsufficientMemoryError: TARP with n=10^8 would not fit in memory: ...
"""
from __future__ import annotations

import os

from ..errors import InsufficientMemoryError

__all__ = ["available_memory", "require_memory", "format_bytes"]

#: what may be used of the memory available: the rest is for everything else the run holds
HEADROOM = 0.9


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units (``'1.5 KiB'``, ``'584.0 GiB'``)."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover - the loop always returns


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return None


def available_memory() -> int | None:
    """Bytes of memory the machine can give now (None when the system does not say). Linux: ``MemAvailable`` (free
    memory plus caches that can be dropped); elsewhere the free physical pages, else the physical memory."""
    got = _meminfo_available()
    if got is not None:
        return got
    for name in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES"):
        try:
            pages, size = os.sysconf(name), os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            continue
        if pages > 0 and size > 0:
            return int(pages) * int(size)
    return None


def require_memory(nbytes: float, what: str, hint: str | None = None) -> int | None:
    """Refuse ``what`` when its ``nbytes`` would not fit in the memory available. Returns the bytes available (None
    when unknown: nothing is refused then).  The message says how much ``what`` needs and how much there is; ``hint``
    says what to do (default: ask for less)."""
    have = available_memory()
    if have is not None and nbytes > HEADROOM * have:
        raise InsufficientMemoryError(
            f"{what} would not fit in memory", expected=f"at most {format_bytes(HEADROOM * have)} "
            f"(90% of the {format_bytes(have)} available)", found=f"{format_bytes(nbytes)} needed",
            hint=hint or "ask for less (fewer samples, directions or runs)")
    return have
