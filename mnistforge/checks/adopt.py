"""What a copy on this machine is, which official files it can give the cache, and giving them.

idx files are judged file by file by their own hash, else their decompressed content's; every other format
goes through the trust gate's identification: a part whose canonical array, as idx content, has the registry's
``content_sha256`` in the official order is that official file's content.  A reordered or subset copy, or a
part the registry pins no content hash of, is not adoptable, and the answer says why.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FormatError, TargetNotFoundError
from ..gate.content import registry_match
from ..io.compression import open_sniffed, sniff_compression
from ..io.foreign.detect import sniff
from ..io.hashing import hash_file, hash_stream
from ..io.outputs import _kind
from ..io.types import Readable, StrPath
from ..loaders.foreign import Canonical, canonicalise
from ..registry import RemoteFile, get_dataset, get_file, list_datasets, list_files
from .foreign import identify_copy
from .identify import Identification

__all__ = ["CopyAnswer", "Piece", "VERDICTS", "examine", "regular_or_folder"]

#: what a copy can be, as ``find-copies`` says it
VERDICTS = ("identical", "reordered", "subset", "transformed", "damaged", "unknown")


@dataclass
class Piece:
    """One official file a copy can give: ``file`` (registry id), from ``where`` in the copy;
    ``source`` (an idx file given as it is) or ``array`` (its content as an array)."""

    file: str
    where: str
    source: str | None = None
    array: np.ndarray | None = field(default=None, repr=False)


@dataclass
class CopyAnswer:
    """What one split (or one idx file) of a copy is, and what of it the cache can adopt."""

    path: str
    format: str
    key: str
    verdict: str
    dataset: str | None = None
    split: str | None = None
    message: str = ""
    pieces: list[Piece] = field(default_factory=list)
    why_not: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "format": self.format, "key": self.key, "verdict": self.verdict,
                "dataset": self.dataset, "split": self.split, "message": self.message,
                "adoptable": [p.file for p in self.pieces], "why_not": self.why_not}


def regular_or_folder(path: StrPath) -> Path:
    """``path`` if it is a folder or a regular file; a named error for anything else (a FIFO
    would block the first read for ever, a device would read for ever)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise TargetNotFoundError("no such file or folder", path=p, expected="a copy of a dataset (file or folder)",
                                  found="nothing there") from None
    except OSError as e:   # no search permission on a parent folder, a link loop
        raise FormatError("cannot look at it", path=p, expected="a file or folder this user may "
                          "read", found=os.strerror(e.errno or 0),
                          hint="check its permissions and those of the folders above it") from None
    if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
        return p
    raise FormatError("not a file that can be read as a copy", path=p, expected="a regular file or a folder",
                      found=_kind(st), hint="point at the file itself (or the folder holding it)")


def _where_in_registry(fid: str) -> tuple[str | None, str | None]:
    """The (dataset, split) whose images or labels file ``fid`` is."""
    for name in list_datasets():
        info = get_dataset(name)
        for sname, sp in info.splits.items():
            if not sp.is_view and fid in (f"{info.group}/{sp.images}", f"{info.group}/{sp.labels}"):
                return name, sname
    return None, None


def _by_hash() -> dict[str, RemoteFile]:
    out: dict[str, RemoteFile] = {}
    for f in list_files():
        for h in (f.sha256, f.md5, f.content_sha256, f.content_md5):
            if h:
                out.setdefault(h, f)
    return out


def _official_names() -> dict[str, RemoteFile]:
    out: dict[str, RemoteFile] = {}
    for f in list_files():
        out.setdefault(f.name, f)
        out.setdefault(f.raw_name, f)
    return out


def _idx_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    out = []
    for p in sorted(path.iterdir()):
        if p.name.startswith(".") or not p.is_file() or not stat.S_ISREG(p.stat().st_mode):
            continue
        try:
            if sniff(p) == "idx":
                out.append(p)
        except (FormatError, OSError):
            continue
    return out


def _file_answer(p: Path) -> CopyAnswer:
    """An idx file judged by its own hash, else its decompressed content's."""
    with open(p, "rb") as f:
        comp = sniff_compression(f.read(8))
    size = p.stat().st_size
    # Only a file that can be an official one is hashed: a raw file of an official size, a
    # compressed one no larger than the largest official content (a 4 GB file is not read).
    sizes, largest = _official_sizes()
    if (size not in sizes) if not comp else size > largest:
        return _unmatched(p, f"its size ({size:,} bytes) is no official file's size")
    sha, md5 = hash_file(p, md5=True)
    csha = cmd5 = None
    if comp:
        try:
            with open_sniffed(p) as f:
                csha, cmd5, _ = hash_stream(_Capped(f, largest), md5=True)
        except _TooBig:
            return _unmatched(p, f"it decompresses to more than {largest:,} bytes, more than "
                                 "any official file")
        except (OSError, EOFError, ValueError) as e:
            return _unmatched(p, f"it does not decompress ({type(e).__name__}: {e})", damaged=True)
    else:
        csha, cmd5 = sha, md5
    known = _by_hash()
    hit = next((known[h] for h in (sha, md5, csha, cmd5) if h and h in known), None)
    if hit is not None:
        dataset, split = _where_in_registry(hit.id)
        how = ("the published file" if sha in (hit.sha256, hit.md5) else "its content is the published file's")
        ans = CopyAnswer(str(p), "idx", p.name, "identical", dataset, split, f"{hit.id}: {how}")
        if hit.archive:
            ans.why_not = (f"the cache keeps {hit.id} inside {hit.archive}: adopt that file "
                           "instead")
        else:
            ans.pieces.append(Piece(hit.id, str(p), source=str(p)))
        return ans
    return _unmatched(p, "neither its bytes nor its content match the registry's hashes")


def _unmatched(p: Path, why: str, damaged: bool = False) -> CopyAnswer:
    """An idx file that is no official file: ``damaged`` when it has an official name (or
    ``damaged``: it is not whole)."""
    named = _official_names().get(p.name)
    if damaged and named is None:
        return CopyAnswer(str(p), "idx", p.name, "damaged", message=why, why_not="damaged")
    if named is not None and not damaged and not (named.sha256 or named.md5 or
                                                  named.content_sha256 or named.content_md5):
        dataset, split = _where_in_registry(named.id)
        return CopyAnswer(str(p), "idx", p.name, "unknown", dataset, split,
                          f"named like {named.id}, which the registry pins no hash of",
                          why_not="nothing to verify it against")
    if named is not None:
        dataset, split = _where_in_registry(named.id)
        return CopyAnswer(str(p), "idx", p.name, "damaged", dataset, split,
                          f"named like {named.id}, but {why}", why_not="damaged or another release")
    return CopyAnswer(str(p), "idx", p.name, "unknown", message=f"an idx file the registry does not know: {why}",
                      why_not="not an official file")


def _official_sizes() -> tuple[set[int], int]:
    """The sizes an official file (or its decompressed content) has, and the largest."""
    sizes = {n for f in list_files() for n in (f.size, f.content_size) if n}
    return sizes, max(sizes)


class _TooBig(Exception):
    pass


class _Capped:
    """A reader that stops a decompression past ``limit`` bytes (a gzip bomb is not inflated)."""

    def __init__(self, f: Readable, limit: int) -> None:
        self.f, self.left = f, limit

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.left -= len(data)
        if self.left < 0:
            raise _TooBig
        return data


def _verdict(ident: Identification) -> str:
    v = ident.verdict
    if v == "differs":
        if ident.images_differ == 0 and ident.labels_differ == 0 and ident.missing:
            return "subset"
        return "damaged"
    return v if v in VERDICTS else "unknown"


def _pieces(c: Canonical, hint: str | None) -> tuple[list[Piece], str]:
    """The official files whose content ``c`` holds in the official order, and why not the rest."""
    m = registry_match(c, hint if hint in list_datasets() else None)
    if m is None:
        return [], "the content is no official file the registry pins"
    if m.order != "same":
        return [], (f"the rows are {m.dataset} {m.split}'s in another order: the official order "
                    "cannot be written back from this copy")
    info = get_dataset(m.dataset)
    sp = info.splits[m.split]
    pieces, missing = [], []
    parts = [("images", sp.images, m.images)]
    if sp.labels_column is None:
        parts.append(("labels", sp.labels, m.labels))
    for part, fname, matched in parts:
        if not fname:
            continue
        fid = f"{info.group}/{fname}"
        if not matched:
            pinned = _pins_content(fid)
            missing.append(f"{fid} (" + ("its content differs" if pinned else
                                         "the registry pins no content hash of it") + ")")
        elif part == "images":
            arr = c.images.transpose(0, 2, 1) if m.transposed else c.images
            pieces.append(Piece(fid, c.where, array=np.ascontiguousarray(arr)))
        else:
            lab = (np.asarray(c.labels, dtype=np.int64) + m.shift).astype(np.uint8)
            pieces.append(Piece(fid, c.where, array=lab))
    return pieces, ("not adoptable: " + ", ".join(missing)) if missing else ""


def _pins_content(fid: str) -> bool:
    try:
        f = get_file(fid)
    except KeyError:
        return False
    return bool(f.content_sha256 or f.content_md5)


def _array_answers(path: Path, search_cache: bool) -> list[CopyAnswer]:
    copy, _, idents, _ = identify_copy(path, search_cache=search_cache)
    out = []
    for ident in idents:
        fs = copy.splits[ident.key]
        ans = CopyAnswer(str(path), copy.format, ident.key, _verdict(ident), ident.dataset,
                         ident.split, ident.message())
        if ans.verdict in ("identical", "transformed", "unknown"):
            ans.pieces, ans.why_not = _pieces(canonicalise(fs), fs.hint)
        else:
            ans.why_not = {"reordered": "the rows are in another order than the official files",
                           "subset": "a subset of the official rows",
                           "damaged": "images or labels differ from the official files"}[ans.verdict]
        out.append(ans)
    return out


def examine(path: StrPath, *, search_cache: bool = True) -> list[CopyAnswer]:
    """What the copy at ``path`` is, split by split (read only; see the module doc). ``search_cache``: compare with
    official splits already in the cache when the registry's hashes cannot tell
    (:func:`~mnistforge.checks.identify.identify`)."""
    p = regular_or_folder(path)
    try:
        kind = sniff(p)
    except FormatError:
        if p.is_file() and p.name in _official_names():  # e.g. EMNIST's gzip.zip: by its hash
            return [_file_answer(p)]
        raise
    if kind == "idx":
        return [_file_answer(f) for f in _idx_files(p)]
    return _array_answers(p, search_cache)
