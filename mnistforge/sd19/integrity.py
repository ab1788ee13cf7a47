"""Does an SD19 source agree with itself and with what it should hold?

:mod:`mnistforge.sd19.completeness` finds what is missing; this module finds what is there and should not be, each a
sentence naming the files: repeated character indices (a zip member stored twice), more exact image copies than the
source holds (a copied writer folder, a raster zeroed into blank characters), more characters or writer folders than
published.  A build refuses such a source (:class:`~mnistforge.errors.InconsistentSourceError`) unless told
``allow_inconsistent``, and then lists every problem in its manifest (``docs/reliability.md``).

>>> import numpy as np
>>> idx = np.zeros(3, [("hsf", "u1"), ("writer", "i2"), ("template", "u1"), ("field", "S1"),
...                    ("entry", "i4")])
>>> idx["field"] = b"d"; idx["entry"] = [0, 1, 1]
>>> repeated_entries(idx).tolist()
[2]
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .completeness import expected_counts, held_per_field, synthetic_description
from .nist_table import DUPLICATE_DIGITS, FIELD_NAMES, FIELDS, PARTITIONS
from .reader import SD19Source

__all__ = ["repeated_entries", "source_problems", "TWO_FORM_WRITERS"]

#: Writers who filled more than one form in the real SD19 (two by_write folders).
TWO_FORM_WRITERS = frozenset({3951})
#: At most this many examples are named per kind of problem (the count is always given).
SHOWN = 5


def _groups(index: np.ndarray) -> np.ndarray:
    """A new-group flag per row: (partition, writer, template, field) differs from the row before."""
    new = np.zeros(len(index), bool)
    new[:1] = True
    for col in ("hsf", "writer", "template", "field"):
        a = np.asarray(index[col])
        new[1:] |= a[1:] != a[:-1]
    return new


def repeated_entries(index: np.ndarray) -> np.ndarray:
    """Rows whose entry number does not exceed the previous entry's of the same field file."""
    e = np.asarray(index["entry"], np.int64)
    if len(e) < 2:
        return np.zeros(0, np.int64)
    new = _groups(index)
    return np.flatnonzero(~new[1:] & (e[1:] <= e[:-1])) + 1


def _folder(index: np.ndarray, r: int) -> str:
    return f"hsf_{int(index['hsf'][r])}/f{int(index['writer'][r]):04d}_{int(index['template'][r]):02d}"


def _more(n: int) -> str:
    return f" (and {n - SHOWN} more)" if n > SHOWN else ""


def _repeated(src: SD19Source, keep: np.ndarray) -> list[str]:
    index = src.index
    if not (rows := [int(r) for r in repeated_entries(index) if keep[r]]):
        return []
    names = src.files["name"]
    out = []
    for r in rows[:SHOWN]:
        a, b = src.member_name(r - 1), src.member_name(r)
        if names[src.file_of_row[r - 1]] == names[src.file_of_row[r]]:
            tree = src.trees.get("by_write") if isinstance(getattr(src, "trees", None), dict) else None
            inside = f" in {tree.location.name}" if tree is not None and tree.kind == "zip" else ""
            what = f"{a} is stored twice{inside} (a duplicated zip member)"
        else:
            what = f"{a} and {b} carry the same character index {int(index['entry'][r])}"
        out.append(f"repeated character index: {what}")
    if len(rows) > SHOWN:
        out.append(f"repeated character index: {len(rows) - SHOWN} more entries")
    return out


def _expected_duplicates(desc: dict[str, Any] | None) -> dict[str, int]:
    """Duplicated characters a source may hold, per field."""
    if desc is not None:
        n = desc.get("duplicates")
        return {"d": len(n) if isinstance(n, list) else 0}
    return {"d": DUPLICATE_DIGITS}


def _folder_ids(index: np.ndarray) -> np.ndarray:
    return (np.asarray(index["hsf"]).astype(np.int64) * 1_000_000 + np.asarray(index["writer"]).astype(np.int64) * 100
            + np.asarray(index["template"]).astype(np.int64))


def _duplicates(src: SD19Source, keep: np.ndarray, desc: dict[str, Any] | None, what: str) -> list[str]:
    index = src.index
    dup = np.asarray(index["duplicate_of"], np.int64)
    fld = np.asarray(index["field"])
    allowed = _expected_duplicates(desc)
    copies = np.flatnonzero((dup >= 0) & keep)
    n_copies = {f: int((fld[copies] == f.encode()).sum()) for f in FIELDS}
    if all(n_copies[f] <= allowed.get(f, 0) for f in FIELDS):
        return []
    found = ", ".join(f"{n_copies[f]} {FIELD_NAMES[f]}" for f in FIELDS if n_copies[f] > allowed.get(f, 0))
    legit = ", ".join(f"{n} {FIELD_NAMES[f]}" for f, n in allowed.items() if n) or "none"
    summary = (f"duplicated characters: {found} are exact copies of an earlier character ({what} allows {legit})")
    out: list[str] = []
    fid = _folder_ids(index)
    folders, per_folder = np.unique(fid[keep], return_counts=True)
    size = dict(zip(folders.tolist(), per_folder.tolist()))
    # the same images in two writer folders: one writer's files under another writer's name
    pairs: dict[tuple[int, int], list[int]] = {}
    for r in copies[fid[dup[copies]] != fid[copies]]:
        pairs.setdefault((int(fid[dup[r]]), int(fid[r])), []).append(int(r))
    ranked = sorted(pairs.items(), key=lambda kv: -len(kv[1]))
    for (_, b), rows in ranked[:SHOWN]:
        eg = f"{src.member_name(rows[0])} = {src.member_name(int(dup[rows[0]]))}"
        total = size.get(b, len(rows))
        kind = "copied writer folder" if 2 * len(rows) >= total else "characters copied from another writer folder"
        out.append(f"{kind}: {len(rows)} of the {total} characters of by_write/{_folder(index, rows[0])} are exact "
                   f"copies of by_write/{_folder(index, int(dup[rows[0]]))}'s (e.g. {eg})")
    if len(ranked) > SHOWN:
        out.append(f"copied writer folder: {len(ranked) - SHOWN} more pairs of writer folders")
    out.append(summary)   # after the copied folders: those name the files at fault
    # copies within one writer folder (which of them the source should hold cannot be told)
    within = copies[fid[dup[copies]] == fid[copies]]
    if len(within) > sum(allowed.values()):
        eg = ", ".join(f"{src.member_name(int(r))} = {src.member_name(int(dup[r]))}" for r in within[:SHOWN])
        out.append(f"duplicated characters within a writer folder: {len(within)}, e.g. {eg}{_more(len(within))}")
    return out


def _surplus(src: SD19Source, keep: np.ndarray, fields: Sequence[str], what: str) -> list[str]:
    expected, _ = expected_counts(src.path)
    out = [f"{part} {FIELD_NAMES[f]}: {got} characters, more than the {want} of {what}"
           for part, f, got, want, _ in held_per_field(src.index, expected, fields) if got > want]
    present = {int(h) for h in np.unique(np.asarray(src.index["hsf"])[keep])}
    for n in sorted(present - {int(p.split('_')[1]) for p in expected}):
        out.append(f"hsf_{n}: a partition {what} does not hold")
    return out


def _writers(src: SD19Source, keep: np.ndarray, desc: dict[str, Any] | None, what: str) -> list[str]:
    index = src.index
    rows = np.flatnonzero(keep)
    if not len(rows):
        return []
    fid = np.unique(_folder_ids(index)[rows])     # one integer per writer folder (fast)
    folders = np.stack([fid // 1_000_000, fid // 100 % 10_000, fid % 100], axis=1)
    out = []
    for n in np.unique(folders[:, 0]):
        mine = folders[folders[:, 0] == n]
        names = [f"f{w:04d}_{t:02d}" for _, w, t in mine]
        if desc is not None:
            part = desc["partitions"].get(f"hsf_{n}", {})
            want = part.get("writer_folders") if isinstance(part, dict) else None
            if isinstance(want, int) and len(mine) > want:
                out.append(f"hsf_{n}: {len(mine)} writer folders ({', '.join(names[:SHOWN])}"
                           f"{_more(len(names))}), more than the {want} of {what}")
            continue
        if (p := PARTITIONS.get(int(n))) is not None:
            if outside := [nm for (_, w, _t), nm in zip(mine, names) if w not in p.writer_ids]:
                out.append(f"hsf_{n}: writer folders {', '.join(outside[:SHOWN])}{_more(len(outside))} lie outside the "
                           f"partition's writers {p.first_writer:04d}-{p.last_writer:04d}")
        ws, k = np.unique(mine[:, 1], return_counts=True)
        if twice := [int(w) for w, c in zip(ws, k) if c > 1 and int(w) not in TWO_FORM_WRITERS]:
            out.append(f"hsf_{n}: writers {', '.join(f'{w:04d}' for w in twice[:SHOWN])}{_more(len(twice))} have more "
                       f"than one writer folder (only writer {min(TWO_FORM_WRITERS)} filled two forms)")
    return out


def source_problems(src: SD19Source, fields: Sequence[str] = FIELDS) -> tuple[list[str], str]:
    """(problems, what they are measured against) of an opened :class:`SD19Source`, for the
    characters of ``fields``: one sentence per problem, naming the files."""
    desc = synthetic_description(src.path)
    _, what = expected_counts(src.path)
    index = src.index
    keep = np.isin(np.asarray(index["field"]), [f.encode() for f in fields])
    return (_repeated(src, keep) + _duplicates(src, keep, desc, what)
            + _surplus(src, keep, fields, what) + _writers(src, keep, desc, what)), what
