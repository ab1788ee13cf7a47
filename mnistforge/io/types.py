"""Type aliases shared by the io layer's signatures (annotations only: nothing here runs)."""
from __future__ import annotations

import os
from typing import TypeAlias

__all__ = ["StrPath"]

#: a file system path as io's functions take it: a ``str`` or a ``str`` path-like (``Path``)
StrPath: TypeAlias = "str | os.PathLike[str]"
