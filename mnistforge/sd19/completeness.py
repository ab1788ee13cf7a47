"""Is an SD19 source whole?  Its characters per partition and field against what it should hold.

A real SD19 must hold NIST's published counts (:mod:`mnistforge.sd19.nist_table`); a synthetic one
(``mnistforge synth-sd19``) the counts its ``synthetic-sd19.json`` describes.  A missing partition, writer file or field
gives shortfalls; a build refuses such a source unless told ``allow_incomplete`` and then records the shortfalls in its
manifest (issue: a missing ``hsf_4`` once halved QMNIST's train set with only a log line).

>>> import numpy as np
>>> idx = np.zeros(3, [("hsf", "u1"), ("field", "S1")]); idx["field"] = b"d"
>>> shortfalls(idx, {"hsf_0": {"d": 3}, "hsf_4": {"d": 5}})
['hsf_4 digits: 0 of 5 characters (partition missing)']
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from .nist_table import FIELD_NAMES, FIELDS, PARTITIONS
from .reader import SD19Source
from .synth.config import DESCRIPTION

__all__ = ["description_path", "synthetic_description", "expected_counts", "shortfalls", "source_shortfalls"]


def description_path(path: str | os.PathLike[str]) -> Path:
    """Where the ``synthetic-sd19.json`` of the source at ``path`` (a folder, or a zip in it) lies."""
    path = Path(path)
    return (path if path.is_dir() or not path.suffix else path.parent) / DESCRIPTION


def synthetic_description(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The source's own ``synthetic-sd19.json`` (parsed), or None for a real-like source.

    This, not the source's path, is what marks a build synthetic: a file that is absent,
    unreadable or not such a description (no ``partitions`` table) leaves the source real.
    """
    desc = description_path(path)
    if not desc.is_file():
        return None
    try:
        d = json.loads(desc.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict) or not isinstance(d.get("partitions"), dict) \
            or not all(isinstance(c, dict) for c in d["partitions"].values()):
        return None
    desc_doc: dict[str, Any] = d
    return desc_doc


def expected_counts(path: str | os.PathLike[str]) -> tuple[dict[str, dict[str, int]], str]:
    """``({"hsf_N": {field: count}}, what)`` a source at ``path`` should hold."""
    if (d := synthetic_description(path)) is not None:
        try:
            return ({p: {f: int(c.get(FIELD_NAMES[f], 0)) for f in FIELDS}
                     for p, c in d["partitions"].items()}, f"its {DESCRIPTION}")
        except (ValueError, TypeError):
            pass  # not ours after all: judged as a real SD19
    return ({p.name: {f: p.count(f) for f in FIELDS} for p in PARTITIONS.values()}, "NIST's published counts")


def shortfalls(index: np.ndarray, expected: dict[str, dict[str, int]], fields: Sequence[str] = FIELDS) -> list[str]:
    """One line per partition and field (of ``fields``) holding fewer characters than expected."""
    return [f"{part} {FIELD_NAMES[f]}: {got} of {want} characters{'' if present else ' (partition missing)'}"
            for part, f, got, want, present in held_per_field(index, expected, fields) if got < want]


def held_per_field(index: np.ndarray, expected: dict[str, dict[str, int]],
                 fields: Sequence[str]) -> Iterator[tuple[str, str, int, int, bool]]:
    """``(partition, field, characters held, characters expected, partition present)`` per partition of ``expected``."""
    hsf = np.asarray(index["hsf"]).astype(np.int64)
    fld = np.asarray(index["field"])
    for part, counts in sorted(expected.items()):
        in_part = hsf == int(part.split("_")[1])
        for f in fields:
            yield part, f, int((in_part & (fld == f.encode())).sum()), int(counts.get(f, 0)), bool(in_part.any())


def source_shortfalls(src: SD19Source, fields: Sequence[str] = FIELDS) -> tuple[list[str], str]:
    """(shortfalls, what they are measured against) for an opened :class:`SD19Source`."""
    expected, what = expected_counts(src.path)
    return shortfalls(src.index, expected, fields), what
