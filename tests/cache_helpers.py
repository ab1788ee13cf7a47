"""Placing files in a test's cache (see the ``cache`` fixture in conftest.py)."""
from __future__ import annotations

import os
import shutil


def put(cache, group, src, name=None):
    """Copy ``src`` into ``cache/<group>/`` (under ``name`` if given); return the new path."""
    d = cache / group
    d.mkdir(parents=True, exist_ok=True)
    return shutil.copy(src, d / (name or os.path.basename(src)))
