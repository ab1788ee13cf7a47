"""Types shared by the io layer's signatures (for annotations: other modules import them under
``TYPE_CHECKING``)."""
from __future__ import annotations

import os
from typing import Protocol, TypeAlias

__all__ = ["Readable", "StrPath", "Writable"]

#: a file system path as io's functions take it: a ``str`` or a ``str`` path-like (``Path``)
StrPath: TypeAlias = "str | os.PathLike[str]"


class Readable(Protocol):
    """A binary reader, as far as io reads one: ``read(n)`` (an open file, a ``HashingReader``)."""

    def read(self, n: int = ..., /) -> bytes: ...


class Writable(Protocol):
    """A binary writer, as far as io writes to one: ``write(b)`` (an open file, a buffer)."""

    def write(self, b: bytes, /) -> object: ...
